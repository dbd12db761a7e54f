/**
 * The API as `npm run api` runs it, in a process of its own on a test stack (startOrderStack), and
 * callers that reach it the way a back office does: each request on a connection of its own. For
 * the tests that need the real process (open-file limits, connection caps, metrics listeners).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { startPart, waitForHttp, type ManagedProcess } from '../../scripts/lib/processes';
import { freePort } from '../../src/temporal/dev-server';
import { defaultOrderTimings, type OrderView } from '../../contract/order';
import type { OrderType } from '../../contract/schemas';
import { testClientsFilePath, TEST_API_KEY } from './api';
import { internetRequest, SANDBOX_KEY } from './orders';
import { terminateOrders } from './orders';
import { startOrderStack, type OrderStack } from './stack';

/** Variables of the caller's environment that would change what a test process does: none of them reach it. */
const AMBIENT = [
  'API_KEYS',
  'API_MAX_CONNECTIONS',
  'API_MAX_CONNECTIONS_PER_ADDRESS',
  'API_HEADERS_TIMEOUT_MS',
  'PAYLOAD_ENCRYPTION_KEYS',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
];

/** The order timings of `type` (POLL_*, PROVIDER_SETTLE_MS) at `scale`: a sandbox running at that scale. */
export function scaledTimingsEnv(type: OrderType, scale: number): Record<string, string> {
  const spec = defaultOrderTimings[type];
  return {
    POLL_FIRST_CHECK_MS: String(spec.firstCheckMs * scale),
    POLL_HANDLING_CHECK_MS: String(spec.handlingCheckMs * scale),
    POLL_MAX_INTERVAL_MS: String(spec.maxIntervalMs * scale),
    POLL_INTERVAL_MS: String(spec.pollIntervalMs * scale),
    POLL_PACE_MOBILE_MS: String(spec.pollPaceMs * scale),
    PROVIDER_SETTLE_MS: String(spec.settleMs * scale),
  };
}

/**
 * The environment of a service process on the stack: its Temporal server, the sandbox with the
 * sandbox key, `taskQueue`; the caller's environment without AMBIENT; then `env`.
 */
export function stackProcessEnv(
  stack: Pick<OrderStack<string>, 'temporal' | 'sandbox'>,
  taskQueue: string,
  env: Record<string, string>,
): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of AMBIENT) delete base[name];
  return {
    ...base,
    TEMPORAL_ADDRESS: stack.temporal.address,
    TEMPORAL_NAMESPACE: stack.temporal.namespace,
    TEMPORAL_TASK_QUEUE: taskQueue,
    PROVIDER_BASE_URL: stack.sandbox.url,
    PROVIDER_API_KEY: SANDBOX_KEY,
    ...env,
  };
}

export interface ApiProcess {
  url: string;
  port: number;
  process: ManagedProcess;
  /** Its output lines so far. */
  output: string[];
  stop(): Promise<void>;
}

/**
 * `npm run api` on the stack's `main` worker queue, with the test clients, internet top-up timings
 * at `scale` (the sandbox's), no review watch, warnings only; `env` on top. Resolves once /healthz answers.
 */
export async function startApiProcess(
  stack: OrderStack<'main'>,
  options: { scale: number; env?: Record<string, string>; openFiles?: number },
): Promise<ApiProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const output: string[] = [];
  const env = stackProcessEnv(stack, stack.taskQueues.main, {
    PORT: String(port),
    API_HOST: '127.0.0.1',
    API_CLIENTS_FILE: testClientsFilePath(),
    ...scaledTimingsEnv('internet_topup', options.scale),
    REVIEW_WATCH_MS: '0',
    LOG_LEVEL: 'warn',
    ...options.env,
  });
  const api = startPart('api', {
    env,
    ...(options.openFiles !== undefined && { openFiles: options.openFiles }),
    onLine: (line) => output.push(line),
  });
  await waitForHttp(`${url}/healthz`, { timeoutMs: 120_000 });
  return { url, port, process: api, output, stop: () => api.stop() };
}

export interface FreshAnswer {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/** One request on a connection of its own from 127.0.0.1: a caller that connects now, not one reusing a socket. */
export function freshRequest(
  url: string,
  options: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<FreshAnswer> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = httpRequest(
      url,
      {
        method: options.method ?? 'GET',
        agent: false,
        localAddress: '127.0.0.1',
        timeout: 5_000,
        headers: {
          ...options.headers,
          ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString(),
            headers: res.headers,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * The default client submits an internet top-up `ref` and reads it until it is FULFILLED, each
 * call on a new connection: the ms it took. Fails on any other answer, or after 60 s.
 */
export async function freshOrderFinal(apiUrl: string, ref: string): Promise<number> {
  const bearer = { authorization: `Bearer ${TEST_API_KEY}` };
  const started = Date.now();
  const submitted = await freshRequest(`${apiUrl}/v1/orders`, {
    method: 'POST',
    body: internetRequest(ref),
    headers: bearer,
  });
  assert.equal(submitted.status, 201, submitted.body);
  let last = '';
  while (Date.now() - started < 60_000) {
    const read = await freshRequest(`${apiUrl}/v1/orders/${ref}`, { headers: bearer });
    assert.equal(read.status, 200, read.body);
    last = (JSON.parse(read.body) as OrderView).status;
    if (last === 'FULFILLED') return Date.now() - started;
    await sleep(100);
  }
  assert.fail(`the order ${ref} is ${last} after 60 s`);
}

export interface ApiProcessStack {
  stack: OrderStack<'main'>;
  api: ApiProcess;
  /**
   * The default client submits the next internet top-up (`<refPrefix>-<run>-<n>`) and reads it until
   * it is FULFILLED, each call on a new connection (freshOrderFinal): the ms it took.
   */
  orderFinal(): Promise<number>;
  /** Stops the API, terminates every order orderFinal started, stops the stack. */
  stop(): Promise<void>;
}

/**
 * A stack named `name` with one `main` worker and the sandbox at `scale`, and the API process on it
 * (startApiProcess with `scale`, `openFiles` and `env`): the set-up of the connection floods.
 */
export async function startApiProcessStack(options: {
  name: string;
  refPrefix: string;
  scale: number;
  openFiles?: number;
  env?: Record<string, string>;
}): Promise<ApiProcessStack> {
  const stack = await startOrderStack({
    name: options.name,
    sandbox: { timeScale: options.scale },
    workers: { main: {} },
  });
  const api = await startApiProcess(stack, {
    scale: options.scale,
    ...(options.openFiles !== undefined && { openFiles: options.openFiles }),
    ...(options.env && { env: options.env }),
  }).catch(async (err: unknown) => {
    await stack.stop();
    throw err;
  });
  const run = randomUUID().slice(0, 8);
  const refs: string[] = [];
  return {
    stack,
    api,
    orderFinal() {
      const ref = `${options.refPrefix}-${run}-${refs.length}`;
      refs.push(ref);
      return freshOrderFinal(api.url, ref);
    },
    async stop() {
      await api.stop();
      await terminateOrders(stack.client, refs);
      await stack.stop();
    },
  };
}
