/**
 * The intake API's Express app, built from its dependencies so tests can start it on a free port
 * against a real Temporal server and the provider sandbox (main.ts builds the real ones).
 *
 * Middleware order matters: request ID and logging first (every answer and log line carries the
 * ID); then the public routes; then, for /v1, the caller is identified, rate-limited and refused
 * without a valid key; each route then checks its scope *before* a body is parsed; the central
 * error handler comes last.
 */
import express, { type Express, type Request, type RequestHandler } from 'express';
import type { Tracer } from '@opentelemetry/api';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { OrderTimings } from '../../contract/order';
import type { OrderType } from '../../contract/schemas';
import { timingsFromConfig } from '../orders';
import { clientRegistryFromConfig, type ClientRegistry } from '../clients';
import { identifyCaller, requireApiKey } from '../http';
import { ApiLimits, defaultLimitsFromConfig } from './limits';
import { jsonBody } from '../http';
import { cachedCatalog, loadCatalogView, type CatalogProvider } from '../orders';
import { createIntakeCheck, type IntakeProvider } from '../orders';
import {
  errorHandler,
  methodNotAllowedHandler,
  notFoundHandler,
  sendProblem,
  temporarilyUnavailable,
} from '../http';
import { readinessCheck, searchAttributesNotReady, type ProviderPort } from './health';
import { deploymentStatus } from './deployment-status';
import { fairnessStatus } from './fairness-status';
import { requestLogger } from './logging';
import { trackRequestWork } from '../http';
import { requestMetrics } from './metrics';
import { accountReport, type AccountProviderPort, type AccountReport } from '../provider-account';
import { noMetrics, type Metrics } from '../observability';
import { requestSpans } from '../observability';
import { openApiDocument } from './openapi';
import { FairStartGate, OrderService } from '../orders';
import { pageTokensFromConfig, type PageTokens } from '../orders';
import { giftCardsRouter } from '../orders';
import { ordersRouter } from '../orders';
import { publicRouter } from './public.routes';
import { webhooksRouter } from '../webhooks';
import { reviewsRouter } from '../reviews';
import { financeRouter } from '../statements';
import { reconciliationRouter } from '../reconciliation';
import { StatementService } from '../statements';
import { ReadCache } from '../http';
import { ReconciliationService } from '../reconciliation';
import { BulkReviewService, BULK_REVIEW_CONCURRENCY, BULK_REVIEW_MAX_ORDERS } from '../reviews';
import { WebhookService } from '../webhooks';

export interface AppDeps {
  client: Client;
  taskQueue: string;
  /**
   * The provider client: the catalog, readiness (validateKey) and intake's look-ups (plans,
   * internet products, a product's types); without the latter intake checks formats only.
   */
  provider: ProviderPort & IntakeProvider & CatalogProvider & AccountProviderPort;
  config: Config;
  logger: Logger;
  /** The API's clients; default: read from API_CLIENTS_FILE or API_KEYS (main.ts passes its own to reload it). */
  clients?: ClientRegistry;
  clock?: () => Date;
  /** Polling timings for a new order's input; default: timingsFromConfig (POLL_*, ORDER_DEADLINE_*). */
  timingsFor?: (type: OrderType) => Partial<OrderTimings> | undefined;
  /** True once shutdown began: /readyz answers 503 so the load balancer stops sending traffic. */
  shuttingDown?: () => boolean;
  /** Where requests and accepted orders are counted (main.ts: prom-client); default: nowhere. */
  metrics?: Metrics;
  /** The provider account's report (held orders, operators) for /readyz; default: read by this app. */
  account?: () => Promise<AccountReport>;
  /** With tracing on: one span per request, parent of everything it does. */
  tracer?: Tracer;
  /** Seals list page tokens; default: from API_PAGE_TOKEN_KEYS (page-token.ts). */
  pageTokens?: PageTokens;
}

/** Export pages kept at most (read-cache.ts): a page is up to 100 rows. */
const CACHED_EXPORT_PAGES = 500;
/** Completed runs' views the export keeps (about 1.5 KB each), and for how long. */
const CACHED_COMPLETED_RUNS = 20_000;
const COMPLETED_RUN_VIEW_MS = 10 * 60_000;

/** Headers on every answer: no MIME sniffing, and order data must not sit in shared caches. */
const baseHeaders: RequestHandler = (_req, res, next) => {
  res.set({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' });
  next();
};

/**
 * API_REQUEST_TIMEOUT_MS bounds the whole request, handling included: each Temporal call has its
 * own deadline, but a review makes several. Past it the client gets a 503 it may retry (every
 * route is idempotent or read-only), instead of waiting on a stuck dependency. A batch has its own
 * (`msFor`): it stops starting orders after API_BATCH_TIMEOUT_MS and answers item by item.
 */
function requestDeadline(msFor: (req: Request) => number): RequestHandler {
  return (req, res, next) => {
    const timer = setTimeout(() => {
      if (!res.headersSent)
        sendProblem(req, res, temporarilyUnavailable('The request took too long; retry it.'));
    }, msFor(req));
    res.once('close', () => clearTimeout(timer));
    next();
  };
}

export function createApp(deps: AppDeps): Express {
  const { config, logger } = deps;
  // Throws a ConfigError without clients: an API nobody can call is a misconfiguration.
  const clients = deps.clients ?? clientRegistryFromConfig(config);
  const clock = deps.clock ?? (() => new Date());
  const metrics = deps.metrics ?? noMetrics;
  const pageTokens = deps.pageTokens ?? pageTokensFromConfig(config).pageTokens;

  const orders = new OrderService({
    client: deps.client,
    taskQueue: deps.taskQueue,
    clients,
    timeoutMs: config.API_TEMPORAL_TIMEOUT_MS,
    decisionTimeoutMs: Math.min(config.API_DECISION_TIMEOUT_MS, config.API_REQUEST_TIMEOUT_MS - 1_000),
    clock,
    timingsFor: deps.timingsFor ?? ((type) => timingsFromConfig(config, type)),
    logger,
    metrics,
    pageTokens,
    readCacheMs: config.API_READ_CACHE_MS,
    notSetUp: searchAttributesNotReady({ client: deps.client, timeoutMs: config.API_READINESS_TIMEOUT_MS }),
    startGate: new FairStartGate(config.API_START_CONCURRENCY),
    intake: createIntakeCheck({
      provider: deps.provider,
      ttlMs: config.CATALOG_CACHE_TTL_MS,
      now: () => clock().getTime(),
      logger,
    }),
    ...(config.TEMPORAL_UI_URL
      ? { temporalUi: { baseUrl: config.TEMPORAL_UI_URL, namespace: deps.client.options.namespace } }
      : {}),
  });
  const webhooks = new WebhookService({
    client: deps.client,
    clients,
    orders,
    taskQueue: config.WEBHOOK_TASK_QUEUE,
    timeoutMs: config.API_TEMPORAL_TIMEOUT_MS,
    logger,
  });
  const catalog = cachedCatalog(
    () => loadCatalogView(deps.provider),
    config.CATALOG_CACHE_TTL_MS,
    () => clock().getTime(),
  );
  const readiness = readinessCheck({
    client: deps.client,
    taskQueue: deps.taskQueue,
    provider: deps.provider,
    timeoutMs: config.API_READINESS_TIMEOUT_MS,
    now: () => clock().getTime(),
  });
  const fairness = fairnessStatus({
    client: deps.client,
    taskQueue: deps.taskQueue,
    now: () => clock().getTime(),
    timeoutMs: config.API_READINESS_TIMEOUT_MS,
    onReadFailed: (error) =>
      logger.warn({ error }, "could not read the worker's report on task-queue fairness"),
  });

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.API_TRUST_PROXY);
  // Order views change every few seconds; a 304 would only hide that.
  app.set('etag', false);

  if (deps.tracer) app.use(requestSpans(deps.tracer));
  app.use(requestLogger(logger));
  app.use(requestMetrics(metrics));
  // Before the limits: a client's slot is held until its handler ends, and handlers are told when
  // their caller is gone (request-work.ts).
  app.use(trackRequestWork);
  app.use(baseHeaders);
  // A batch item in flight when the batch's time is up still makes up to three Temporal calls.
  const batchDeadlineMs = config.API_BATCH_TIMEOUT_MS + 3 * config.API_TEMPORAL_TIMEOUT_MS + 1_000;
  app.use(
    requestDeadline((req) =>
      req.method === 'POST' && req.path === '/v1/orders/batch'
        ? batchDeadlineMs
        : config.API_REQUEST_TIMEOUT_MS,
    ),
  );
  const account =
    deps.account ??
    accountReport({
      client: deps.client,
      taskQueue: deps.taskQueue,
      provider: deps.provider,
      timeoutMs: config.API_READINESS_TIMEOUT_MS,
      ttlMs: config.API_ACCOUNT_REPORT_TTL_MS,
      now: () => clock().getTime(),
    });
  app.use(
    publicRouter({
      readiness,
      account,
      fairness,
      deployment: deploymentStatus({
        client: deps.client,
        deploymentName: config.WORKER_DEPLOYMENT_NAME,
        timeoutMs: config.API_READINESS_TIMEOUT_MS,
        now: () => clock().getTime(),
      }),
      shuttingDown: deps.shuttingDown ?? (() => false),
      openApiDocument,
    }),
  );

  // Everything under /v1 needs a key, checked before a body is even read. Limits per client
  // (limits.ts): concurrency and the request budget here, orders counted by the submit routes.
  const limits = new ApiLimits(defaultLimitsFromConfig(config));
  app.use('/v1', identifyCaller(clients), limits.requests(), requireApiKey);
  app.use(
    financeRouter(
      orders,
      new StatementService(deps.client, clients, {
        taskQueue: deps.taskQueue,
        maxStoredDays: config.API_STATEMENT_DAYS_PER_REQUEST,
        readCacheMs: config.API_READ_CACHE_MS,
      }),
      {
        pages: new ReadCache({ ttlMs: config.API_READ_CACHE_MS, maxEntries: CACHED_EXPORT_PAGES }),
        // A completed run's view never changes: kept long, within a bounded number; off with the rest.
        completedRuns: new ReadCache({
          ttlMs: config.API_READ_CACHE_MS > 0 ? COMPLETED_RUN_VIEW_MS : 0,
          maxEntries: CACHED_COMPLETED_RUNS,
        }),
      },
    ),
  );
  app.use(reconciliationRouter(new ReconciliationService(deps.client)));
  app.use(
    ordersRouter(orders, webhooks, {
      chargeOrders: (caller, count, res) => limits.chargeOrders(caller, count, res),
      jsonBody: jsonBody(config.API_BODY_LIMIT),
      batchJsonBody: jsonBody(config.API_BATCH_BODY_LIMIT),
      batch: {
        maxOrders: config.API_BATCH_MAX_ORDERS,
        concurrency: config.API_BATCH_CONCURRENCY,
        timeoutMs: config.API_BATCH_TIMEOUT_MS,
      },
    }),
  );
  app.use(
    reviewsRouter(
      new BulkReviewService({
        client: deps.client,
        taskQueue: deps.taskQueue,
        clients,
        // Answered before the request deadline; a longer bulk is collected by sending it again.
        waitMs: config.API_REQUEST_TIMEOUT_MS - 2_000,
        maxOrders: BULK_REVIEW_MAX_ORDERS,
        concurrency: BULK_REVIEW_CONCURRENCY,
        logger,
      }),
      jsonBody(config.API_BODY_LIMIT),
    ),
  );
  app.use(webhooksRouter(webhooks));
  app.use(giftCardsRouter(catalog));

  app.use(methodNotAllowedHandler(openApiDocument()));
  app.use(notFoundHandler);
  app.use(errorHandler);
  return app;
}
