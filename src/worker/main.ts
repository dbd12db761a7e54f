/**
 * `npm run worker`: runs the order worker from the environment (README "Configuration") until
 * SIGTERM or SIGINT, then drains: in-flight tasks finish, then the provider pool and the Temporal
 * connection close, then buffered spans are exported.
 *
 * Metrics: with WORKER_METRICS_ADDRESS, Temporal's Runtime serves Prometheus there — the SDK's
 * worker metrics (temporal_*) and ours (topup_*, src/observability/catalog.ts). Traces: with an
 * OTLP endpoint configured (src/observability/tracing.ts).
 */
import { NativeConnection, Runtime } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { nativeConnectionOptions } from '../temporal/connection';
import { ensureTemporalSetup, TemporalSetupError } from '../temporal/setup';
import { dataConverterFromConfig } from '../codec/data-converter';
import { ConfigError, loadConfig, type Config } from '../config';
import { createProviderClientFromConfig, isProviderError, type ProviderClient } from '../provider';
import { createWorkerLogger } from './logger';
import { createOrderWorker, tuningFromConfig, workflowCodeFromConfig } from './worker';
import { noMetrics } from '../observability/metrics';
import { providerCallMetrics } from '../observability/provider-metrics';
import { histogramBucketOverrides, temporalMetrics } from '../observability/temporal-meter';
import { tracingFromConfig } from '../observability/tracing';
import type { Logger } from '@temporalio/common';
import type { TelemetryOptions } from '@temporalio/worker';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createWorkerLogger(config.LOG_LEVEL);
  // We stop the worker ourselves, so the pool and connection are closed after it has drained.
  Runtime.install({ logger, shutdownSignals: [], telemetryOptions: telemetryFromConfig(config) });
  const metrics = config.WORKER_METRICS_ADDRESS ? temporalMetrics(Runtime.instance().metricMeter) : noMetrics;
  const tracing = await tracingFromConfig(config, 'topup-worker');

  const provider = createProviderClientFromConfig(config, { onCall: providerCallMetrics(metrics) });
  let connection: NativeConnection | undefined;
  try {
    await checkProviderKey(provider.client, config, logger);
    connection = await NativeConnection.connect(nativeConnectionOptions(config));
    // Orders start only in a namespace with our search attributes: make sure of it (or stop here,
    // loudly) before polling, so no worker runs against a Temporal that would refuse every order.
    await ensureTemporalSetup(connection, {
      namespace: config.TEMPORAL_NAMESPACE,
      retentionMs: config.TEMPORAL_NAMESPACE_RETENTION,
      timeoutMs: config.TEMPORAL_SETUP_TIMEOUT_MS,
      log: (message) => logger.info(message),
    });
    const worker = await createOrderWorker({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      activities: createActivities({ provider: provider.client }),
      // The API's client encrypts what it starts; the worker must read and write the same way.
      dataConverter: dataConverterFromConfig(config),
      workflowCode: workflowCodeFromConfig(config),
      tuning: tuningFromConfig(config),
      tracing,
    });
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        logger.info('shutting down: finishing the tasks in flight', { signal });
        if (worker.getState() === 'RUNNING') worker.shutdown();
      });
    }
    logger.info('worker started', {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      namespace: config.TEMPORAL_NAMESPACE,
      ...(config.WORKER_METRICS_ADDRESS
        ? { metrics: `http://${config.WORKER_METRICS_ADDRESS}/metrics` }
        : {}),
      tracing: tracing ? 'on' : 'off',
    });
    await worker.run();
    logger.info('worker stopped');
  } finally {
    await provider.close();
    await connection?.close();
    await tracing?.shutdown();
  }
}

/**
 * Temporal's Prometheus exporter, in Prometheus' own conventions: counters end in `_total`,
 * durations are in seconds; our histograms get the catalog's buckets.
 */
function telemetryFromConfig(config: Config): TelemetryOptions | undefined {
  if (!config.WORKER_METRICS_ADDRESS) return undefined;
  return {
    metrics: {
      prometheus: {
        bindAddress: config.WORKER_METRICS_ADDRESS,
        countersTotalSuffix: true,
        useSecondsForDurations: true,
        histogramBucketOverrides: histogramBucketOverrides(),
      },
    },
  };
}

/**
 * A production key on a worker meant for the sandbox (or the reverse) would move real money or
 * none: refuse to start. An unreachable provider is not a reason to stay down: orders retry.
 */
async function checkProviderKey(client: ProviderClient, config: Config, logger: Logger): Promise<void> {
  let key;
  try {
    key = (await client.validateKey()).apiKey;
  } catch (err) {
    if (isProviderError(err, 'refused'))
      throw new ConfigError(`PROVIDER_API_KEY: refused by the provider (${err.message})`);
    logger.warn('provider key not checked: the provider did not answer', { error: err });
    return;
  }
  if (key.type !== config.PROVIDER_EXPECTED_KEY_TYPE) {
    throw new ConfigError(
      `PROVIDER_API_KEY: a ${key.type} key, but PROVIDER_EXPECTED_KEY_TYPE is ${config.PROVIDER_EXPECTED_KEY_TYPE}`,
    );
  }
  if (!key.isEnabled) throw new ConfigError('PROVIDER_API_KEY: the key is disabled');
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError || err instanceof TemporalSetupError ? err.message : err);
  process.exit(1);
});
