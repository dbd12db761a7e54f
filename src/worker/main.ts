/**
 * `npm run worker`: runs the order worker from the environment (README "Configuration") until
 * SIGTERM or SIGINT, then drains: in-flight tasks finish, then the provider pool and the Temporal
 * connection close.
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
import type { Logger } from '@temporalio/common';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createWorkerLogger(config.LOG_LEVEL);
  // We stop the worker ourselves, so the pool and connection are closed after it has drained.
  Runtime.install({ logger, shutdownSignals: [] });

  const provider = createProviderClientFromConfig(config);
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
      // Local activities bypass the task queue's rate limit: with one set, every send goes through it.
      activities: createActivities({
        provider: provider.client,
        localSends: config.WORKER_PROVIDER_CALLS_PER_SECOND === undefined,
      }),
      // The API's client encrypts what it starts; the worker must read and write the same way.
      dataConverter: dataConverterFromConfig(config),
      workflowCode: workflowCodeFromConfig(config),
      tuning: tuningFromConfig(config),
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
    });
    await worker.run();
    logger.info('worker stopped');
  } finally {
    await provider.close();
    await connection?.close();
  }
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
