/**
 * Configuration, parsed and validated once at start-up from the environment.
 *
 * Every variable is declared here with its default and documented in the configuration
 * table of docs/deployers.md (test/readme.test.ts checks it). Bad configuration stops the program with a message naming each bad variable (never its
 * value: several are secrets).
 */
import ipaddr from 'ipaddr.js';
import { z } from 'zod';

const port = z.coerce.number().int().min(0).max(65_535);
const positiveInt = z.coerce.number().int().positive();
const millis = z.coerce.number().int().positive();
const commaList = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.string()));
function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}
/** `a.b.c.d/n` or an IPv6 `prefix/n`, as ipaddr.js parses it. */
function isCidr(value: string): boolean {
  try {
    ipaddr.parseCIDR(value);
    return true;
  } catch {
    return false;
  }
}
const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
/** `host:port` (`127.0.0.1:9464`, `0.0.0.0:9464`, `[::1]:9464`): where a metrics endpoint listens. */
const hostPort = z
  .string()
  .regex(/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'host:port, e.g. 127.0.0.1:9464')
  .refine((v) => Number(v.slice(v.lastIndexOf(':') + 1)) <= 65_535, 'port above 65535');
/** Whole days or hours (`30d`, `72h`), as milliseconds; Temporal refuses less than an hour. */
const retention = (defaultValue: string) =>
  z
    .string()
    .regex(/^[1-9]\d*[dh]$/, 'days or hours, e.g. 30d or 72h')
    .default(defaultValue)
    .transform((v) => Number(v.slice(0, -1)) * (v.endsWith('d') ? 86_400_000 : 3_600_000));

/** Every environment variable the service reads, with its default (undefined = required or optional). */
const schema = z.object({
  // -- shared: Temporal --
  TEMPORAL_ADDRESS: z.string().default('localhost:7233'),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default('topup-orders'),
  /** Hosted namespaces: an API key (sent as a bearer token over TLS). */
  TEMPORAL_API_KEY: z.string().optional(),
  /** mTLS client certificate and key (PEM file paths); setting them turns TLS on. */
  TEMPORAL_TLS_CERT_PATH: z.string().optional(),
  TEMPORAL_TLS_KEY_PATH: z.string().optional(),
  /** Turn TLS on without a client certificate (e.g. with an API key). */
  TEMPORAL_TLS: bool.default(false),
  /**
   * How long Temporal keeps a closed order's workflow (its history, and its ID: a ref is refused as
   * a duplicate until then). The setup creates the namespace with it, or changes it to this.
   */
  TEMPORAL_NAMESPACE_RETENTION: retention('30d'),
  /** How long `npm run temporal:setup` (and a starting worker) waits for Temporal to be set up. */
  TEMPORAL_SETUP_TIMEOUT_MS: millis.default(60_000),

  // -- shared: provider --
  PROVIDER_BASE_URL: z.url().default('http://127.0.0.1:4010'),
  PROVIDER_API_KEY: z.string().min(1).optional(),
  PROVIDER_CONNECT_TIMEOUT_MS: millis.default(2_000),
  PROVIDER_HEADERS_TIMEOUT_MS: millis.default(10_000),
  PROVIDER_BODY_TIMEOUT_MS: millis.default(10_000),
  /**
   * Connections to the provider per process. As many as the worker runs activities at once
   * (WORKER_MAX_CONCURRENT_ACTIVITIES): with fewer, a slow provider makes activities queue for a
   * socket while holding their slots (docs/contributors.md, "What the code's choices cost").
   * Undici opens them only as needed.
   */
  PROVIDER_POOL_CONNECTIONS: positiveInt.default(100),
  /** Which kind of provider key the worker expects: a mismatch stops it at start. */
  PROVIDER_EXPECTED_KEY_TYPE: z.enum(['SANDBOX', 'PRODUCTION']).default('SANDBOX'),
  /**
   * After a send whose outcome is unknown, the longest the provider may take to show it in
   * check-ref (its processing plus read lag); no new send before two "not found" that far after
   * the send and that far apart (docs/contributors.md "Never send twice: what we assume of the provider"). 60 s: three times the longest a
   * worker waits for a send's answer by default (headers + body timeouts, 20 s). Read by the API,
   * which fixes it in each new order's input.
   */
  PROVIDER_SETTLE_MS: millis.default(60_000),

  // -- shared: payload encryption --
  /** `keyId:base64key[,keyId:base64key…]`; the first encrypts, all decrypt. Unset = no encryption. */
  PAYLOAD_ENCRYPTION_KEYS: z.string().optional(),

  // -- codec server (npm run codec; see src/codec/server.ts for the authentication modes) --
  CODEC_PORT: port.default(8888),
  /** Without CODEC_AUTH_TOKENS the codec server refuses to listen anywhere but loopback. */
  CODEC_HOST: z.string().default('127.0.0.1'),
  /** Bearer tokens for /encode and /decode (the CLI's `--codec-auth "Bearer …"`). Unset = local dev mode. */
  CODEC_AUTH_TOKENS: commaList
    .pipe(z.array(z.string().min(16, 'each token needs at least 16 characters')).min(1))
    .optional(),
  /** Browser origins (Temporal UI) allowed to call the codec server; default: the dev stack's UI. */
  CODEC_CORS_ORIGINS: commaList
    .pipe(
      z.array(
        z
          .string()
          .refine(
            (s) => URL.canParse(s) && new URL(s).origin === s,
            'each must be an origin: scheme://host[:port]',
          ),
      ),
    )
    .default(['http://127.0.0.1:8233', 'http://localhost:8233']),
  /** Largest request body: the UI and CLI send a batch of payloads (each up to a few MB) at once. */
  CODEC_BODY_LIMIT: z.string().default('8mb'),

  // -- webhooks (docs/integrators.md "Webhooks") --
  /**
   * The key every endpoint's signing secret is derived from (base64, at least 32 bytes): the
   * worker signs with it, `npm run clients` prints an endpoint's secret from it. Unset: the worker
   * delivers nothing (it says so at start if the clients file lists endpoints).
   */
  WEBHOOK_SIGNING_KEY: z
    .string()
    .refine(
      (value) => /^[A-Za-z0-9+/]+={0,2}$/.test(value) && Buffer.from(value, 'base64').length >= 32,
      'expected base64 of at least 32 random bytes (openssl rand -base64 32)',
    )
    .optional(),
  /** The task queue of the delivery workflows and activities: apart from the provider calls' queue and its rate limit. */
  WEBHOOK_TASK_QUEUE: z.string().default('topup-webhooks'),
  /** One delivery attempt: connect, send, and the receiver's answer, all within this. */
  WEBHOOK_TIMEOUT_MS: millis.default(10_000),
  /** The first retry after a failed attempt; each further one waits twice as long, up to the maximum. */
  WEBHOOK_RETRY_INITIAL_MS: millis.default(5_000),
  WEBHOOK_RETRY_MAX_INTERVAL_MS: millis.default(60 * 60_000),
  /** How long an event is retried before it is given up as failed (then only a redelivery sends it). */
  WEBHOOK_RETRY_FOR_MS: millis.default(3 * 24 * 60 * 60_000),
  /** An order's delivery workflow closes once everything is delivered and nothing new came for this long. */
  WEBHOOK_IDLE_CLOSE_MS: millis.default(60_000),
  /**
   * Networks (CIDR) endpoints may be on although they are loopback, private, link-local or
   * otherwise not public unicast; default none. The dev stack allows loopback.
   */
  WEBHOOK_ALLOWED_NETWORKS: commaList
    .pipe(
      z.array(
        z.string().refine((cidr) => isCidr(cidr), 'each must be a CIDR range, e.g. 10.1.0.0/16 or fd00::/8'),
      ),
    )
    .default([]),
  /** Deliveries one worker runs at once (its webhook task queue's activity slots). */
  WEBHOOK_MAX_CONCURRENT_DELIVERIES: positiveInt.default(50),
  /**
   * Of those, the most one endpoint may have in flight: a slow endpoint holds this many slots,
   * the others stay free for other endpoints (an attempt beyond it is deferred: no attempt, tried again soon).
   */
  WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: positiveInt.default(8),
  /** The dev receiver (npm run webhook-receiver): its port, and the secrets (whsec_…, comma-separated) it verifies with. */
  WEBHOOK_RECEIVER_PORT: port.default(4020),
  WEBHOOK_RECEIVER_SECRET: commaList.optional(),

  // -- logging --
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  // -- intake API --
  PORT: port.default(3000),
  /** All interfaces by default (containers); the dev stack binds loopback only. */
  API_HOST: z.string().default('0.0.0.0'),
  /** The clients file (YAML or JSON): clients, scopes and key hashes (src/clients/model.ts). */
  API_CLIENTS_FILE: z.string().optional(),
  /** Legacy: a flat key list, run as one client (`default`) with every scope. */
  API_KEYS: commaList.optional(),
  /**
   * `keyId:base64key[,keyId:base64key…]` (32-byte keys): the first seals list page tokens (HMAC),
   * all open them. Every instance needs the same keys; unset = a random key per process (tokens
   * die with it; see docs/deployers.md).
   */
  API_PAGE_TOKEN_KEYS: z.string().optional(),
  API_BODY_LIMIT: z.string().default('16kb'),
  /** POST /v1/orders/batch: most orders in one request, its body limit, starts in flight at once, time to start them. */
  API_BATCH_MAX_ORDERS: positiveInt.max(5_000).default(500),
  API_BATCH_BODY_LIMIT: z.string().default('1mb'),
  API_BATCH_CONCURRENCY: positiveInt.max(256).default(16),
  API_BATCH_TIMEOUT_MS: millis.default(60_000),
  /**
   * Order starts in flight towards Temporal from this API process, all clients together, handed
   * out round-robin by client with single orders first (src/orders/start-gate.ts): one client's
   * batches cannot saturate Temporal and time out everyone's starts. Temporal serves its calls
   * first come, first served (priority and fairness order only its task queues), so every start in
   * flight is one more call ahead of another client's own order's steps: kept small, a flood's
   * starts queue here, in the gate's fair order, not inside Temporal (docs/deployers.md "Fair under load").
   */
  API_START_CONCURRENCY: positiveInt.max(1_024).default(4),
  /** Per-client limits, for clients without their own in the clients file (src/api/limits.ts). */
  API_RATE_LIMIT_PER_MINUTE: positiveInt.default(600),
  API_ORDERS_PER_MINUTE: positiveInt.default(3_000),
  API_ORDERS_BURST: z.coerce.number().int().nonnegative().default(1_000),
  API_CONCURRENT_REQUESTS: positiveInt.max(1_000).default(16),
  API_REQUEST_TIMEOUT_MS: millis.default(15_000),
  /**
   * Kept days (workflow starts) one GET /v1/statements writes at most; the rest of its figures are
   * summed and answered all the same, and kept by later statements (src/statements/statement.service.ts).
   */
  API_STATEMENT_DAYS_PER_REQUEST: positiveInt.max(366).default(31),
  /**
   * Reads that scale (src/http/read-cache.ts): identical list pages, statements and export rows of
   * one caller share one answer for this long (from its read's start), so readers asking the same
   * at once cost Temporal's visibility one read. 0: every read asks Temporal. At most 60 s.
   */
  API_READ_CACHE_MS: z.coerce.number().int().nonnegative().max(60_000).default(1_000),
  CATALOG_CACHE_TTL_MS: millis.default(60_000),
  /** Deadline of each Temporal call the API makes (start, query, describe, list, signal). */
  API_TEMPORAL_TIMEOUT_MS: millis.default(5_000),
  /**
   * How long the review route waits for a decision's outcome (the workflow asks the provider
   * first) before it answers 202 with the decision still being checked. Capped a second below
   * API_REQUEST_TIMEOUT_MS, so the route answers before the request deadline does.
   */
  API_DECISION_TIMEOUT_MS: millis.default(10_000),
  /** /readyz gives up on Temporal or the provider after this long and answers 503. */
  API_READINESS_TIMEOUT_MS: millis.default(2_000),
  /**
   * How long the provider account's report (/readyz's held orders and operators, the account
   * gauges) is reused: /v3/ping is documented for every 30–60 s.
   */
  API_ACCOUNT_REPORT_TTL_MS: millis.default(30_000),
  /**
   * Node's headersTimeout: a connection's request headers must have arrived this long after it
   * opened (or after the request's first byte on a kept-alive one), checked every second; a
   * connection that sends nothing closes then too. Capped at API_REQUEST_TIMEOUT_MS. 5 s: headers
   * take milliseconds on any working network, and an idle connection holds a file descriptor.
   */
  API_HEADERS_TIMEOUT_MS: millis.default(5_000),
  /** Idle keep-alive sockets close after this; behind a load balancer set it above the balancer's idle timeout. */
  API_KEEP_ALIVE_TIMEOUT_MS: millis.default(5_000),
  /**
   * Connections the API holds at once, in total: at the cap the connection silent longest makes
   * room for a new one, else the one idle longest, else the new one is answered 503. Lowered at
   * start to stay below the open-file limit with room for the API's own descriptors (src/api/server.ts).
   */
  API_MAX_CONNECTIONS: positiveInt.default(4_096),
  /**
   * Connections one address holds at once (an IPv6 /56 counts as one address); beyond it a
   * connection is answered 429 and closed. The peer's address: behind a load balancer every
   * connection comes from the balancer, so raise it above the balancer's connections or set 0 (none).
   */
  API_MAX_CONNECTIONS_PER_ADDRESS: z.coerce.number().int().nonnegative().default(256),
  /**
   * `host:port` of a listener serving /healthz and /readyz only, with connection caps of its own, so
   * the orchestrator's probes are answered while the API's port is flooded. Unset = none.
   */
  API_HEALTH_ADDRESS: hostPort.optional(),
  /** On SIGTERM, requests in flight get this long to finish before the process exits. */
  API_SHUTDOWN_TIMEOUT_MS: millis.default(10_000),
  /** Express `trust proxy` (true, false, a hop count or subnets): which client IP the rate limit sees. */
  API_TRUST_PROXY: z
    .string()
    .default('false')
    .transform((v): boolean | number | string =>
      v === 'true' ? true : v === 'false' ? false : /^\d+$/.test(v) ? Number(v) : v,
    ),

  // -- worker --
  WORKER_MAX_CONCURRENT_ACTIVITIES: positiveInt.default(100),
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: positiveInt.default(40),
  WORKER_MAX_CACHED_WORKFLOWS: positiveInt.default(2_000),
  /**
   * Provider calls per second across ALL workers of the task queue (Temporal enforces it on the
   * server side, so adding workers does not multiply it). Unset = no limit.
   */
  WORKER_PROVIDER_CALLS_PER_SECOND: z.coerce.number().positive().optional(),
  /** Path to a pre-built workflow bundle (npm run build:bundle); unset = bundle at start. */
  WORKER_WORKFLOW_BUNDLE_PATH: z.string().optional(),
  /**
   * The Worker Deployment the worker joins (docs/deployers.md "Deploying a new version"): every
   * build of the service is a version of it, and each order runs pinned on the version it started on.
   * The API reads it too, for /readyz's `deployment`.
   */
  WORKER_DEPLOYMENT_NAME: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, - and _ (Temporal joins it to the build ID with a dot)')
    .default('topup-fulfillment'),
  /**
   * The worker's version in that deployment. Unset = a digest of the workflow bundle it runs
   * (src/worker/build-id.ts): the same code is the same version, changed code a new one.
   */
  WORKER_BUILD_ID: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, ., - and _')
    .max(255)
    .optional(),
  /**
   * When the worker makes its own version current, once its task queues are polled: `first` when
   * the deployment has no current version yet (its first deploy; it never replaces a current
   * version: every later deploy is ramped and made current by the deployer, npm run deploy),
   * `always` whatever is current (the dev stack, restarted with changed code), `never` (every
   * routing change by npm run deploy).
   */
  WORKER_MAKE_CURRENT: z.enum(['first', 'always', 'never']).default('first'),

  // -- order polling (durations in ms; see docs/contributors.md "The order lifecycle") --
  POLL_FIRST_CHECK_MS: millis.default(5_000),
  POLL_HANDLING_CHECK_MS: millis.default(15_000),
  POLL_MAX_INTERVAL_MS: millis.default(60_000),
  /**
   * The provider's pace: while an order is open, a check this often for its type's POLL_PACE_*_MS
   * (the provider's documented give-up), then the schedule above until the deadline. 0 = no pace.
   */
  POLL_INTERVAL_MS: z.coerce.number().int().min(0).default(5_000),
  POLL_PACE_MOBILE_MS: millis.default(5 * 60_000),
  POLL_PACE_INTERNET_MS: millis.default(5 * 60_000),
  POLL_PACE_GIFT_CARD_MS: millis.default(10 * 60_000),
  /** How soon a worker that died while it polled at the pace is found out (a heartbeat timeout). */
  POLL_HEARTBEAT_TIMEOUT_MS: millis.default(60_000),
  ORDER_DEADLINE_MOBILE_MS: millis.default(30 * 60_000),
  ORDER_DEADLINE_INTERNET_MS: millis.default(30 * 60_000),
  ORDER_DEADLINE_GIFT_CARD_MS: millis.default(60 * 60_000),
  REVIEW_RECHECK_INTERVAL_MS: millis.default(30 * 60_000),
  /**
   * Start-to-close timeout of each provider activity attempt (one provider call since the settle
   * patch). Every call ends within it, so it bounds the worker's HTTP timeouts rather than follow
   * them: 30 s is above the default whole call (10 s headers + 10 s body) with room to spare.
   */
  ORDER_ACTIVITY_TIMEOUT_MS: millis.default(30_000),
  /**
   * How often the order sweep (a Temporal Schedule, created by `npm run temporal:setup`) resumes
   * orders whose workflow closed without a final status (terminated, timed out, failed).
   */
  ORDER_SWEEP_INTERVAL_MS: millis.default(5 * 60_000),
  /**
   * When the nightly reconciliation (a Temporal Schedule `order-reconciliation`, created by
   * `npm run temporal:setup`) runs, `HH:MM` in RECONCILE_TIME_ZONE: it reconciles the day before.
   */
  RECONCILE_AT: z
    .string()
    .regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'HH:MM, e.g. 02:30')
    .default('02:30'),
  /** The IANA time zone of the business day the reconciliation closes (and of RECONCILE_AT). */
  RECONCILE_TIME_ZONE: z.string().refine(isTimeZone, 'an IANA time zone, e.g. Africa/Algiers').default('UTC'),
  /**
   * When statements' closed days are summed each night (a Temporal Schedule `statement-days`,
   * created by `npm run temporal:setup`), `HH:MM` UTC: statements' days are UTC days.
   */
  STATEMENT_DAYS_AT: z
    .string()
    .regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'HH:MM, e.g. 00:30')
    .default('00:30'),
  /**
   * When `npm run temporal:setup` creates the `statement-days` Schedule (a fresh deployment): the
   * nights of this many past days are run at once (a Temporal Schedule backfill), so statements
   * over them read kept days from the start. 0 = none.
   */
  STATEMENT_DAYS_BACKFILL_DAYS: z.coerce.number().int().min(0).max(366).default(31),
  /**
   * How long an order an operator resolved without the provider's confirmation keeps being checked
   * against the provider (a later contradiction makes it DISPUTED). A day: providers reverse or
   * complete stuck orders within hours, not weeks. 0 = no watch.
   */
  REVIEW_WATCH_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(24 * 60 * 60_000),
  /** The watch's first check; then the interval doubles up to REVIEW_RECHECK_INTERVAL_MS. */
  REVIEW_WATCH_FIRST_CHECK_MS: millis.default(5 * 60_000),
  /**
   * The longest an order is HELD (the account's balance, an operator down: docs/operators.md
   * "Orders on hold") before it ends FAILED as NOT_SENT: long enough for someone to top up.
   */
  ORDER_MAX_HOLD_MS: millis.default(6 * 60 * 60_000),
  /**
   * While orders are held, the worker's account watch reads the balance and /v3/ping this often
   * (the provider documents ping every 30–60 s); also how old the account state the send gate uses may be.
   */
  PROVIDER_ACCOUNT_CHECK_MS: millis.default(30_000),
  /**
   * QUEUED orders (internet cards the provider delivers within 12–48 h): re-checked this often,
   * and sent to review as stuck this long after they were first QUEUED.
   */
  ORDER_QUEUED_RECHECK_MS: millis.default(6 * 60 * 60_000),
  ORDER_QUEUED_DEADLINE_MS: millis.default(72 * 60 * 60_000),

  // -- observability (docs/deployers.md "Metrics and traces") --
  /**
   * Temporal UI's address as operators open it (e.g. http://127.0.0.1:8233): order views link to
   * their workflow there. Unset = no link.
   */
  TEMPORAL_UI_URL: z
    .url()
    .transform((v) => v.replace(/\/+$/, ''))
    .optional(),
  /** The API's Prometheus endpoint (`/metrics`), on its own listener. Unset = not served. */
  API_METRICS_ADDRESS: hostPort.optional(),
  /** How long the review backlog figures (a few visibility calls) are kept between scrapes. */
  API_REVIEW_METRICS_TTL_MS: millis.default(30_000),
  /** The worker's Prometheus endpoint (Temporal's Runtime telemetry: SDK metrics and ours). Unset = none. */
  WORKER_METRICS_ADDRESS: hostPort.optional(),
  /** OTLP/HTTP endpoint (the collector's base URL): traces go to <it>/v1/traces. Unset = tracing off. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  /** The full OTLP/HTTP URL for traces, instead of the one derived from OTEL_EXPORTER_OTLP_ENDPOINT. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url().optional(),
  /** service.name of the spans; default `topup-api` or `topup-worker`. */
  OTEL_SERVICE_NAME: z.string().min(1).optional(),

  // -- sandbox --
  SANDBOX_PORT: port.default(4010),
  SANDBOX_HOST: z.string().default('127.0.0.1'),
  SANDBOX_KEY: z.string().min(1).default('sandbox-key'),
  SANDBOX_PRODUCTION_KEY: z.string().min(1).default('production-key'),
  SANDBOX_DISABLED_KEY: z.string().min(1).default('disabled-key'),
  SANDBOX_TIME_SCALE: z.coerce.number().positive().default(1),
  /**
   * `spec` (default): every order on the spec's fixed timeline (PENDING 5 s, HANDLING until 20 s).
   * `documented`: each order draws its own from the provider's documented ranges, seeded by
   * SANDBOX_TIMINGS_SEED (docs/sandbox.md "Keys, the account, timings and scripted outcomes"). Also PATCH /admin/settings.
   */
  SANDBOX_TIMINGS: z.enum(['spec', 'documented']).default('spec'),
  SANDBOX_TIMINGS_SEED: z.coerce
    .number()
    .int()
    .min(0)
    .max(2 ** 31)
    .default(1),
  SANDBOX_ADMIN_TOKEN: z.string().min(1).optional(),
  /** Journal the sandbox's orders, counters and settings to this file and resume from it at start. */
  SANDBOX_STATE_FILE: z.string().min(1).optional(),
  /** The sandbox account's balance (DZD) on a fresh start and after a reset; default: plenty. */
  SANDBOX_STARTING_BALANCE: z.coerce.number().min(0).optional(),

  // -- dev stack (npm start) --
  DEV_TEMPORAL_PORT: port.default(7233),
  DEV_TEMPORAL_UI_PORT: port.default(8233),
  /** Where the dev stack keeps Temporal's SQLite file, so a restart resumes in-flight orders. */
  DEV_DATA_DIR: z.string().default('.data'),
});

export type Config = z.infer<typeof schema>;

/** The names of every variable the configuration knows (docker-compose.yml is checked against it). */
export const knownEnvironmentVariables: readonly string[] = Object.keys(schema.shape);

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parse the environment once. Throws ConfigError naming every bad variable, never its value. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // Empty strings count as unset, as in most shells' `VAR=` idiom.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = schema.safeParse(present);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}

/** `host:port` (as validated above) → what `server.listen` takes. */
export function splitHostPort(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  return {
    host: address.slice(0, colon).replace(/^\[(.*)\]$/, '$1'),
    port: Number(address.slice(colon + 1)),
  };
}

/** For the parts that cannot run without a provider key. */
export function requireProviderKey(config: Config): string {
  if (!config.PROVIDER_API_KEY) {
    throw new ConfigError('Invalid configuration:\n  PROVIDER_API_KEY: required (the provider API key)');
  }
  return config.PROVIDER_API_KEY;
}
