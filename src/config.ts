/**
 * Configuration, parsed and validated once at start-up from the environment.
 *
 * Every variable is declared here with its default and documented in the README's configuration
 * table. Bad configuration stops the program with a message naming each bad variable (never its
 * value: several are secrets).
 */
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
const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

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

  // -- shared: provider --
  PROVIDER_BASE_URL: z.url().default('http://127.0.0.1:4010'),
  PROVIDER_API_KEY: z.string().min(1).optional(),
  PROVIDER_CONNECT_TIMEOUT_MS: millis.default(2_000),
  PROVIDER_HEADERS_TIMEOUT_MS: millis.default(10_000),
  PROVIDER_BODY_TIMEOUT_MS: millis.default(10_000),
  PROVIDER_POOL_CONNECTIONS: positiveInt.default(32),
  /** Which kind of provider key the worker expects: a mismatch stops it at start. */
  PROVIDER_EXPECTED_KEY_TYPE: z.enum(['SANDBOX', 'PRODUCTION']).default('SANDBOX'),

  // -- shared: payload encryption --
  /** `keyId:base64key[,keyId:base64key…]`; the first encrypts, all decrypt. Unset = no encryption. */
  PAYLOAD_ENCRYPTION_KEYS: z.string().optional(),

  // -- logging --
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  // -- intake API --
  PORT: port.default(3000),
  API_KEYS: commaList.optional(),
  API_BODY_LIMIT: z.string().default('16kb'),
  API_RATE_LIMIT_PER_MINUTE: positiveInt.default(600),
  API_REQUEST_TIMEOUT_MS: millis.default(15_000),
  CATALOG_CACHE_TTL_MS: millis.default(60_000),

  // -- worker --
  WORKER_MAX_CONCURRENT_ACTIVITIES: positiveInt.default(100),
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: positiveInt.default(40),
  WORKER_MAX_CACHED_WORKFLOWS: positiveInt.default(2_000),
  /** Path to a pre-built workflow bundle (npm run build:bundle); unset = bundle at start. */
  WORKER_WORKFLOW_BUNDLE_PATH: z.string().optional(),

  // -- order polling (durations in ms; see README "Polling") --
  POLL_FIRST_CHECK_MS: millis.default(5_000),
  POLL_MAX_INTERVAL_MS: millis.default(60_000),
  ORDER_DEADLINE_MOBILE_MS: millis.default(30 * 60_000),
  ORDER_DEADLINE_INTERNET_MS: millis.default(30 * 60_000),
  ORDER_DEADLINE_GIFT_CARD_MS: millis.default(60 * 60_000),
  REVIEW_RECHECK_INTERVAL_MS: millis.default(30 * 60_000),

  // -- sandbox --
  SANDBOX_PORT: port.default(4010),
  SANDBOX_HOST: z.string().default('127.0.0.1'),
  SANDBOX_KEY: z.string().min(1).default('sandbox-key'),
  SANDBOX_PRODUCTION_KEY: z.string().min(1).default('production-key'),
  SANDBOX_DISABLED_KEY: z.string().min(1).default('disabled-key'),
  SANDBOX_TIME_SCALE: z.coerce.number().positive().default(1),
  SANDBOX_ADMIN_TOKEN: z.string().min(1).optional(),
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

/** For the parts that cannot run without a provider key. */
export function requireProviderKey(config: Config): string {
  if (!config.PROVIDER_API_KEY) {
    throw new ConfigError('Invalid configuration:\n  PROVIDER_API_KEY: required (the provider API key)');
  }
  return config.PROVIDER_API_KEY;
}
