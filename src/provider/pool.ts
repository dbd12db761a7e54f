/**
 * Construction of the provider's connection pool and client from configuration.
 *
 * One Pool per origin, created once per process and shared by every activity: keep-alive
 * connections are reused and the number of concurrent connections to the provider is bounded.
 */
import { Pool } from 'undici';
import { requireProviderKey, type Config } from '../config';
import { ProviderClient, type ProviderCallRecord } from './client';

export function createProviderPool(options: {
  baseUrl: string;
  connectTimeoutMs: number;
  connections: number;
}): Pool {
  // A Pool takes an origin only; a path in the base URL is the client's business.
  return new Pool(new URL(options.baseUrl).origin, {
    connections: options.connections,
    // Connect failures are the one "certainly not sent" case; fail them fast so a retry comes soon.
    connectTimeout: options.connectTimeoutMs,
  });
}

/**
 * Convenience for the worker/API: builds pool + client from the parsed Config (requires
 * PROVIDER_API_KEY). `onCall` hears of every call (metrics).
 */
export function createProviderClientFromConfig(
  config: Config,
  { onCall }: { onCall?: (call: ProviderCallRecord) => void } = {},
): {
  client: ProviderClient;
  pool: Pool;
  close(): Promise<void>;
} {
  const apiKey = requireProviderKey(config);
  const pool = createProviderPool({
    baseUrl: config.PROVIDER_BASE_URL,
    connectTimeoutMs: config.PROVIDER_CONNECT_TIMEOUT_MS,
    connections: config.PROVIDER_POOL_CONNECTIONS,
  });
  const client = new ProviderClient({
    baseUrl: config.PROVIDER_BASE_URL,
    apiKey,
    dispatcher: pool,
    headersTimeoutMs: config.PROVIDER_HEADERS_TIMEOUT_MS,
    bodyTimeoutMs: config.PROVIDER_BODY_TIMEOUT_MS,
    onCall,
  });
  // close() lets requests in flight finish, then releases the sockets (worker shutdown). It is
  // idempotent: shutdown paths often run twice (signal + finally), and a second pool.close() rejects.
  let closing: Promise<void> | undefined;
  return { client, pool, close: () => (closing ??= pool.close()) };
}
