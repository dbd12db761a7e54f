/**
 * `npm run worker`: runs the order worker and the webhook worker from the environment (docs/deployers.md
 * "Configuration") until SIGTERM or SIGINT, then drains: in-flight tasks finish, then the provider
 * pool, the webhook sender and the Temporal connection close, then buffered spans are exported.
 *
 * Webhook endpoints come from the clients file (API_CLIENTS_FILE, the API's own), read at start
 * and again on SIGHUP; endpoint secrets are derived from WEBHOOK_SIGNING_KEY.
 *
 * Metrics: with WORKER_METRICS_ADDRESS, Temporal's Runtime serves Prometheus there — the SDK's
 * worker metrics (temporal_*) and ours (topup_*, contract/metrics.ts). Traces: with an
 * OTLP endpoint configured (src/observability/tracing.ts).
 */
import { Client } from '@temporalio/client';
import { NativeConnection, Runtime } from '@temporalio/worker';
import { createActivities } from './activities';
import { StatementDays } from '../statements';
import { createDeliveryActivities, DIRECT_DELIVERY_DEFAULTS } from '../webhooks';
import type { ClientsFile } from '../clients';
import { ClientRegistry, readClientsFile, reloadClientsOnSighup } from '../clients';
import { AddressPolicy } from '../webhooks';
import { signingKeyFrom } from '../webhooks';
import { WebhookSender } from '../webhooks';
import { nativeConnectionOptions } from '../temporal';
import { ensureTemporalSetup, TemporalSetupError } from '../temporal';
import { ensureOrderSweepSchedule } from '../orders';
import { startFairnessReports } from '../temporal';
import { startFairnessWeights } from '../clients';
import { dataConverterFromConfig } from '../codec';
import { ConfigError, loadConfig, type Config } from '../config';
import { createProviderClientFromConfig, isProviderError, type ProviderClient } from '../provider';
import { keyScopes } from '../provider';
import { createWorkerLogger } from './logger';
import {
  createOrderWorker,
  createWebhookWorker,
  tuningFromConfig,
  versionedWorkflowCode,
  webhookPolicyFromConfig,
  workflowCodeFromConfig,
} from './worker';
import { startVersionReports } from './version-state';
import { noMetrics } from '../observability';
import { providerCallMetrics } from '../observability';
import { histogramBucketOverrides, temporalMetrics } from '../observability';
import { tracingFromConfig } from '../observability';
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
  const endpoints = webhookEndpoints(config, logger);
  const sender = new WebhookSender({
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    policy: new AddressPolicy(config.WEBHOOK_ALLOWED_NETWORKS),
    connections: Math.max(16, config.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT),
  });
  // The announcements' own tries: a receiver slower than this is left to the delivery workflow.
  const directSender = new WebhookSender({
    timeoutMs: Math.min(config.WEBHOOK_TIMEOUT_MS, DIRECT_DELIVERY_DEFAULTS.timeoutMs),
    policy: new AddressPolicy(config.WEBHOOK_ALLOWED_NETWORKS),
  });
  const signingKey = config.WEBHOOK_SIGNING_KEY ? signingKeyFrom(config.WEBHOOK_SIGNING_KEY) : undefined;
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
    // The API's client encrypts what it starts; the worker must read and write the same way.
    const dataConverter = dataConverterFromConfig(config);
    // Bundled first when the sources are given: the build ID is the digest of the code that runs.
    const { workflowCode, deployment } = await versionedWorkflowCode(workflowCodeFromConfig(config), {
      deploymentName: config.WORKER_DEPLOYMENT_NAME,
      buildId: config.WORKER_BUILD_ID,
    });
    const namespace = config.TEMPORAL_NAMESPACE;
    // Events carry order views (phone numbers, card codes): encrypted like every payload.
    const temporal = new Client({ connection, namespace, dataConverter });
    // The sweep that resumes orders closed without a final status (terminated, timed out): every
    // deployment gets it, the dev stack included, not only those that run `npm run temporal:setup`.
    await ensureOrderSweepSchedule(temporal, {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      intervalMs: config.ORDER_SWEEP_INTERVAL_MS,
    });
    const orderWorker = await createOrderWorker({
      connection,
      namespace,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      // Local activities bypass the task queue's rate limit: with one set, every send goes through it.
      activities: createActivities({
        provider: provider.client,
        localSends: config.WORKER_PROVIDER_CALLS_PER_SECOND === undefined,
        temporal,
        // The gate's /v3/ping reading is as old at most as the account workflow's (the config's promise).
        account: {
          provider: provider.client,
          checkMs: config.PROVIDER_ACCOUNT_CHECK_MS,
          pingMaxAgeMs: config.PROVIDER_ACCOUNT_CHECK_MS,
        },
        reconciliation: provider.client,
        statementDays: new StatementDays(temporal, config.TEMPORAL_TASK_QUEUE),
        webhooks: {
          temporal,
          taskQueue: config.WEBHOOK_TASK_QUEUE,
          endpoints,
          policy: webhookPolicyFromConfig(config),
          direct: {
            deliver: createDeliveryActivities({ endpoints, signingKey, sender: directSender, metrics })
              .deliverWebhook,
          },
        },
      }),
      dataConverter,
      workflowCode,
      deployment,
      tuning: tuningFromConfig(config),
      tracing,
    });
    const webhookWorker = await createWebhookWorker({
      connection,
      namespace,
      taskQueue: config.WEBHOOK_TASK_QUEUE,
      activities: createDeliveryActivities({
        endpoints,
        signingKey,
        sender,
        metrics,
        maxInFlightPerEndpoint: config.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT,
      }),
      dataConverter,
      workflowCode,
      maxConcurrentDeliveries: config.WEBHOOK_MAX_CONCURRENT_DELIVERIES,
      deployment,
    });
    const workers = [orderWorker, webhookWorker];
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        logger.info('shutting down: finishing the tasks in flight', { signal });
        for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
      });
    }
    logger.info('worker started', {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      webhookTaskQueue: config.WEBHOOK_TASK_QUEUE,
      namespace,
      ...(config.WORKER_METRICS_ADDRESS
        ? { metrics: `http://${config.WORKER_METRICS_ADDRESS}/metrics` }
        : {}),
      tracing: tracing ? 'on' : 'off',
      deployment: deployment.deploymentName,
      buildId: deployment.buildId,
    });
    const versionReports = startVersionReports(connection, namespace, deployment, {
      makeCurrent: config.WORKER_MAKE_CURRENT,
      taskQueues: [config.TEMPORAL_TASK_QUEUE, config.WEBHOOK_TASK_QUEUE],
      logger,
      meter: config.WORKER_METRICS_ADDRESS ? Runtime.instance().metricMeter : undefined,
    });
    // In the background, at start and hourly: the answer is for the log and the API's /readyz
    // (recorded in Temporal), and orders run either way.
    const fairnessReports = startFairnessReports(
      new Client({ connection, namespace }),
      config.TEMPORAL_TASK_QUEUE,
      logger,
    );
    // Clients' weights as the queues' fairness-weight overrides, now and on SIGHUP.
    startFairnessWeights(connection, config, logger);
    // Either one failing stops the other too: the process restarts as a whole.
    await Promise.all(
      workers.map((worker) =>
        worker.run().catch((err: unknown) => {
          for (const other of workers) if (other.getState() === 'RUNNING') other.shutdown();
          throw err;
        }),
      ),
    ).finally(() => Promise.all([withinMs(fairnessReports.stop(), 10_000), versionReports.stop()]));
    logger.info('worker stopped');
  } finally {
    await Promise.allSettled([provider.close(), sender.close(), directSender.close()]);
    await connection?.close();
    await tracing?.shutdown();
  }
}

/**
 * The webhook endpoints as the clients file lists them, kept current on SIGHUP (a file that no
 * longer validates is not taken). Without a clients file (API_KEYS mode) there are none.
 */
function webhookEndpoints(config: Config, logger: Logger): ClientRegistry {
  const path = config.API_CLIENTS_FILE;
  const summary = (file: ClientsFile) => ({
    endpoints: file.clients.reduce((n, client) => n + (client.webhooks?.length ?? 0), 0),
    signingKey: config.WEBHOOK_SIGNING_KEY ? 'set' : 'NOT SET: nothing can be signed',
  });
  const file: ClientsFile = path ? readClientsFile(path) : { clients: [] };
  const registry = new ClientRegistry(file);
  logger.info('webhook endpoints', summary(file));
  if (path) {
    reloadClientsOnSighup(registry, path, {
      reloaded: (next) => logger.info('clients file reloaded: webhook endpoints', summary(next)),
      failed: (problem) => logger.error('clients file NOT reloaded', { problem }),
    });
  }
  return registry;
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
    // A key the provider does not know (401) or one it blocks is access_denied since the documented v3.
    if (isProviderError(err, 'refused') || isProviderError(err, 'access_denied'))
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
  // A READ-ONLY key can check but never send: a worker with one would hold every order unsent.
  if (key.scope === keyScopes.readOnly)
    throw new ConfigError('PROVIDER_API_KEY: the key is READ-ONLY (scope), it cannot send top-ups or orders');
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError || err instanceof TemporalSetupError ? err.message : err);
  process.exit(1);
});

/** `work`, or nothing more after `ms`: a probe still polling must not hold a shutdown for long. */
async function withinMs(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() =>
    clearTimeout(timer),
  );
}
