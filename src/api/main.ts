/**
 * `npm run api`: the intake API from the environment (src/config.ts), listening on PORT.
 *
 * It starts even while Temporal or the provider is down (the connection is lazy and /readyz says
 * so), but not with bad configuration: no clients (API_CLIENTS_FILE or API_KEYS), a bad clients
 * file, a half-set TLS pair or an invalid variable stop it at once with a message naming the
 * variable or the place in the file. On SIGHUP it reads the clients file again (after
 * `npm run clients` added or revoked a key), keeping the clients it has if the file is bad. On
 * SIGTERM/SIGINT it stops being ready, lets requests in flight finish (API_SHUTDOWN_TIMEOUT_MS at
 * most), then closes its connections.
 *
 * With API_HEALTH_ADDRESS it answers /healthz and /readyz on a listener of their own as well, with
 * connection caps apart from the API port's (src/api/server.ts).
 * With API_METRICS_ADDRESS it serves Prometheus metrics there (src/observability/metrics-server.ts);
 * with an OTLP endpoint it traces each request through Temporal (src/observability/tracing.ts).
 */
import { Client, Connection } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';
import { dataConverterFromConfig } from '../codec';
import { clientRegistryFromConfig, reloadClientsOnSighup } from '../clients';
import { ConfigError, loadConfig } from '../config';
import { createProviderClientFromConfig } from '../provider';
import { createApp } from './app';
import { pageTokensFromConfig } from '../orders';
import { createLogger } from '../logging';
import { listen, listenHealth } from './server';
import { temporalConnectionOptions } from '../temporal';
import { serveMetrics } from '../observability';
import { PrometheusMetrics } from '../observability';
import { providerCallMetrics } from '../observability';
import { tracingFromConfig } from '../observability';
import { registerAccountGauges, registerReviewGauges } from './metrics';
import { accountReport } from '../provider-account';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL).child({ name: 'api' });
  const clients = clientRegistryFromConfig(config);
  const clientsFile = config.API_CLIENTS_FILE;
  if (clientsFile) {
    reloadClientsOnSighup(clients, clientsFile, {
      reloaded: () => logger.info('clients file reloaded'),
      failed: (problem) => logger.error({ problem }, 'clients file NOT reloaded'),
    });
  }

  const tracing = await tracingFromConfig(config, 'topup-api');
  // Lazy: the first call connects, so the API is up (and says "not ready") while Temporal is not.
  const connection = Connection.lazy(temporalConnectionOptions(config));
  const client = new Client({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    // The worker's converter: the API encrypts order input (phone numbers) and decrypts views.
    dataConverter: dataConverterFromConfig(config),
    // Starts, signals and queries carry the request's trace to the workflow.
    ...(tracing
      ? {
          interceptors: {
            workflow: [new OpenTelemetryWorkflowClientInterceptor({ tracer: tracing.tracer })],
          },
        }
      : {}),
  });
  const metrics = config.API_METRICS_ADDRESS ? new PrometheusMetrics() : undefined;
  if (metrics) {
    registerReviewGauges(metrics, {
      client,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      ttlMs: config.API_REVIEW_METRICS_TTL_MS,
    });
  }
  const provider = createProviderClientFromConfig(
    config,
    metrics ? { onCall: providerCallMetrics(metrics) } : {},
  );

  const account = accountReport({
    client,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    provider: provider.client,
    timeoutMs: config.API_READINESS_TIMEOUT_MS,
    ttlMs: config.API_ACCOUNT_REPORT_TTL_MS,
  });
  if (metrics) registerAccountGauges(metrics, account);

  const { pageTokens, random: pageTokenKeyIsRandom } = pageTokensFromConfig(config);
  if (pageTokenKeyIsRandom) {
    logger.warn('API_PAGE_TOKEN_KEYS is unset: page tokens work on this instance only, until it restarts');
  }

  let shuttingDown = false;
  const app = createApp({
    pageTokens,
    client,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    provider: provider.client,
    config,
    logger,
    clients,
    shuttingDown: () => shuttingDown,
    ...(metrics ? { metrics } : {}),
    ...(tracing ? { tracer: tracing.tracer } : {}),
  });
  const server = await listen(app, { port: config.PORT, host: config.API_HOST, config, logger });
  const healthServer = config.API_HEALTH_ADDRESS
    ? await listenHealth(app, { address: config.API_HEALTH_ADDRESS, config, logger })
    : undefined;
  const metricsServer =
    metrics && config.API_METRICS_ADDRESS
      ? await serveMetrics(metrics, config.API_METRICS_ADDRESS)
      : undefined;
  logger.info(
    {
      url: server.url,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      ...(metricsServer ? { metrics: metricsServer.url } : {}),
      ...(healthServer ? { health: healthServer.url } : {}),
      tracing: tracing ? 'on' : 'off',
    },
    'intake API listening',
  );

  const shutdown = async (signal: NodeJS.Signals) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down: finishing requests in flight');
    await server.close(config.API_SHUTDOWN_TIMEOUT_MS);
    await Promise.allSettled([
      // Last: the orchestrator reads /readyz's 503 on it while the requests in flight finish.
      healthServer?.close(1_000),
      provider.close(),
      connection.close(),
      metricsServer?.close(),
      tracing?.shutdown(),
    ]);
    logger.info('stopped');
    logger.flush();
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, (s) => {
      shutdown(s).then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    });
  }
}

main().catch((err: unknown) => {
  // Configuration errors name the bad variables (never their values); a stack trace adds nothing.
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
