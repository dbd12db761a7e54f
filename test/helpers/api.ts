/**
 * For tests of the intake API (test/api/): the app on a free loopback port with test
 * configuration, and an HTTP client that sends paths exactly as written (`fetch` would normalise
 * `/v1/orders/..` away before the server ever saw it).
 */
import assert from 'node:assert/strict';
import { unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import pino, { type Logger } from 'pino';
import { Pool } from 'undici';
import { stringify } from 'yaml';
import { hashApiKey } from '../../src/clients/keys';
import type { ClientsFile, Scope } from '../../src/clients/model';
import type { OrderView } from '../../src/orders/order.service';
import { loadConfig, type Config } from '../../src/config';
import { createApp, type AppDeps } from '../../src/api/app';
import { loggerOptions } from '../../src/logging';
import { listen } from '../../src/api/server';

/** The default client `shop`'s two keys (a rotation in progress). */
export const TEST_API_KEY = 'test-api-key-1';
export const OTHER_TEST_API_KEY = 'test-api-key-2';

/**
 * The test clients, each with one key (shop has two): every kind of caller the access rules know.
 * Test keys are readable strings; real ones are generated (src/clients/keys.ts).
 */
export const testClients = {
  /** The default client (keeps `order-<ref>` workflow IDs): a back office that also decides its reviews. */
  shop: {
    key: TEST_API_KEY,
    scopes: ['orders:write', 'orders:read', 'reviews:write', 'webhooks:read', 'webhooks:write'],
  },
  /** Another back office with the same rights: its orders are none of shop's business, and back. */
  acme: {
    key: 'test-key-acme',
    scopes: ['orders:write', 'orders:read', 'reviews:write', 'webhooks:read', 'webhooks:write'],
  },
  writer: { key: 'test-key-writer', scopes: ['orders:write'] },
  reader: { key: 'test-key-reader', scopes: ['orders:read'] },
  operator: { key: 'test-key-operator', scopes: ['orders:read', 'reviews:write'], operator: true },
  /** Reads every order's audit, and may reveal it (card codes in clear). */
  auditor: { key: 'test-key-auditor', scopes: ['orders:read', 'audit:read', 'audit:reveal'] },
  /** A back office that is also an auditor: it reads the audit of its own orders (and everyone's), masked. */
  ledger: { key: 'test-key-ledger', scopes: ['orders:write', 'orders:read', 'audit:read'] },
} satisfies Record<string, { key: string; scopes: Scope[]; operator?: boolean }>;
export type TestClientId = keyof typeof testClients;

/** Who calls a route in a test: one of the test clients, or `nobody` (no key). */
export type TestCaller = TestClientId | 'nobody';

/** The API key `caller` sends: none for `nobody`. */
export const testCallerKey = (caller: TestCaller): string | null =>
  caller === 'nobody' ? null : testClients[caller].key;

export const testClientsFile: ClientsFile = {
  defaultClient: 'shop',
  clients: Object.entries(testClients).map(([id, c]) => ({
    id,
    name: `Test client ${id}`,
    scopes: c.scopes,
    ...('operator' in c ? { role: 'operator' as const } : {}),
    keys: [
      { id: 'k1', hash: hashApiKey(c.key) },
      ...(id === 'shop' ? [{ id: 'k2', hash: hashApiKey(OTHER_TEST_API_KEY) }] : []),
    ],
  })),
};

let clientsFilePath: string | undefined;

/** testClientsFile as a YAML file, written once per process (API_CLIENTS_FILE for test configs). */
export function testClientsFilePath(): string {
  if (!clientsFilePath) {
    const path = join(tmpdir(), `topup-test-clients-${process.pid}.yaml`);
    writeFileSync(path, stringify(testClientsFile));
    process.once('exit', () => unlinkSync(path));
    clientsFilePath = path;
  }
  return clientsFilePath;
}

/**
 * Test configuration: the test clients (API_CLIENTS_FILE), short Temporal deadlines; `env`
 * overrides any variable (`API_CLIENTS_FILE: ''` with API_KEYS runs the legacy mode).
 */
export function apiTestConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    API_CLIENTS_FILE: testClientsFilePath(),
    API_TEMPORAL_TIMEOUT_MS: '3000',
    API_READINESS_TIMEOUT_MS: '1500',
    LOG_LEVEL: 'info',
    ...env,
  });
}

/** A logger whose lines (parsed JSON) are kept in memory, with the app's redaction. */
export function capturingLogger(): { logger: Logger; lines: Record<string, unknown>[]; raw: string[] } {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      callback();
    },
  });
  return {
    logger: pino({ level: 'debug', ...loggerOptions }, stream),
    lines,
    raw,
  };
}

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The parsed body when it is JSON (problem+json included), else undefined. */
  body: T;
}

export interface RequestOptions {
  /** An object is sent as JSON; a string or Buffer as is. */
  body?: unknown;
  /** `undefined` = the test key; `null` = no Authorization header. */
  apiKey?: string | null;
  headers?: Record<string, string>;
}

export interface TestApi {
  url: string;
  config: Config;
  request<T = unknown>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  close(): Promise<void>;
}

export async function startTestApi(
  deps: Omit<AppDeps, 'config' | 'logger'> & { config?: Config; logger?: Logger },
): Promise<TestApi> {
  const config = deps.config ?? apiTestConfig();
  const app = createApp({ ...deps, config, logger: deps.logger ?? pino({ level: 'silent' }) });
  const server = await listen(app, { port: 0, host: '127.0.0.1', config });
  const pool = new Pool(server.url);

  async function request<T>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.apiKey !== null) headers.authorization ??= `Bearer ${options.apiKey ?? TEST_API_KEY}`;
    let body: string | Buffer | undefined;
    if (typeof options.body === 'string' || Buffer.isBuffer(options.body)) body = options.body;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await pool.request({ method, path, headers, body });
    const text = await response.body.text();
    const contentType = String(response.headers['content-type'] ?? '');
    const parsed: unknown = /[/+]json\b/.test(contentType) && text ? JSON.parse(text) : undefined;
    return { status: response.statusCode, headers: response.headers, text, body: parsed as T };
  }

  return {
    url: server.url,
    config,
    request,
    close: async () => {
      await pool.close();
      await server.close(1_000);
    },
  };
}

/**
 * Reads GET /v1/orders/{ref} through `api` (as `apiKey`, default the default client's), each read a
 * 200, every 100 ms until `done` holds for the view: that view. Fails after `timeoutMs` (default
 * 20 s) saying the order did not reach `what`, with the last view.
 */
export async function apiViewUntil(
  api: TestApi,
  ref: string,
  done: (view: OrderView) => boolean,
  options: { what?: string; timeoutMs?: number; apiKey?: string | null } = {},
): Promise<OrderView> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  let last: unknown;
  while (Date.now() < deadline) {
    const res = await api.request<OrderView>('GET', `/v1/orders/${ref}`, {
      ...(options.apiKey !== undefined && { apiKey: options.apiKey }),
    });
    assert.equal(res.status, 200, res.text);
    last = res.body;
    if (done(res.body)) return res.body;
    await sleep(100);
  }
  throw new Error(
    `order ${ref} did not reach ${options.what ?? 'the condition'}; last view: ${JSON.stringify(last)}`,
  );
}
