/**
 * The load: a closed loop of C callers taking the next of N items until none is left, timing each
 * call. Drives the intake API over HTTP (an undici Pool of C keep-alive connections) and the
 * baselines' starts through a Temporal Client, so both are measured the same way.
 */
import { Pool } from 'undici';
import { type Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import pLimit from 'p-limit';
import pino from 'pino';
import { OrderService } from '../../src/orders/order.service';
import { ClientRegistry, legacyClientsFile } from '../../src/clients/registry';
import { loadConfig } from '../../src/config';
import type { OrderRequest } from '../../contract/schemas';
import { timingsFromConfig } from '../../src/orders/timings';
import type { Stack } from './stack';
import { nowMs, summarize, type Summary } from './stats';

export interface Call {
  index: number;
  /** Epoch ms when the call was made / answered. */
  startMs: number;
  endMs: number;
  /** "ok", or what went wrong ("HTTP 429", "timeout", …). */
  outcome: string;
}

export interface LoadResult {
  calls: Call[];
  ok: number;
  failures: Record<string, number>;
  durationS: number;
  /** Successful calls per second over the whole phase. */
  perSecond: number;
  /** Latency of the successful calls, ms. */
  latencyMs: Summary;
}

export async function closedLoop(
  n: number,
  concurrency: number,
  call: (index: number) => Promise<string>,
): Promise<LoadResult> {
  const t0 = nowMs();
  const limit = pLimit(concurrency);
  const timed = async (index: number): Promise<Call> => {
    const startMs = nowMs();
    let outcome: string;
    try {
      outcome = await call(index);
    } catch (err) {
      outcome = failureOutcome(err);
    }
    return { index, startMs, endMs: nowMs(), outcome };
  };
  const calls = await Promise.all(Array.from({ length: n }, (_, index) => limit(timed, index)));
  return loadResult(calls, t0);
}

/** A failed call's outcome: its error, short enough to count alike failures together. */
function failureOutcome(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message.slice(0, 80)}` : String(err);
}

/** Throughput, failures by kind and the latency of the good calls, over the run since `t0`. */
function loadResult(calls: Call[], t0: number): LoadResult {
  const durationS = (nowMs() - t0) / 1000;
  const good = calls.filter((c) => c.outcome === 'ok');
  const failures: Record<string, number> = {};
  for (const c of calls) if (c.outcome !== 'ok') failures[c.outcome] = (failures[c.outcome] ?? 0) + 1;
  return {
    calls,
    ok: good.length,
    failures,
    durationS,
    perSecond: good.length / durationS,
    latencyMs: summarize(good.map((c) => c.endMs - c.startMs)),
  };
}

/** POST /v1/orders over keep-alive connections; 201 is the only success (a new order). */
export function apiSubmitter(apiUrl: string, apiKey: string, connections: number) {
  const pool = new Pool(apiUrl, { connections, pipelining: 1, headersTimeout: 60_000, bodyTimeout: 60_000 });
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  return {
    async submit(order: OrderRequest): Promise<string> {
      const response = await pool.request({
        method: 'POST',
        path: '/v1/orders',
        headers,
        body: JSON.stringify(order),
      });
      await response.body.dump();
      return response.statusCode === 201 ? 'ok' : `HTTP ${response.statusCode}`;
    },
    close: () => pool.close(),
  };
}

/**
 * The API's own start path (OrderService.submit) without HTTP: where the API's time goes. The
 * service is configured as the API the bench started is (task queue, timings, its clients; the bench's key is the default client's).
 */
type DirectStack = Pick<Stack, 'taskQueue' | 'partEnv' | 'apiKey' | 'clients'>;

function directService(client: Client, stack: DirectStack) {
  const partConfig = loadConfig({ ...process.env, ...stack.partEnv });
  const clients = stack.clients
    ? new ClientRegistry(stack.clients.file)
    : new ClientRegistry(legacyClientsFile([stack.apiKey]), { legacy: true });
  const caller = clients.identify(stack.apiKey)!;
  const service = new OrderService({
    client,
    clients,
    taskQueue: stack.taskQueue ?? partConfig.TEMPORAL_TASK_QUEUE,
    timeoutMs: partConfig.API_TEMPORAL_TIMEOUT_MS,
    clock: () => new Date(),
    timingsFor: (type) => timingsFromConfig(partConfig, type),
    logger: pino({ level: 'silent' }),
  });
  return { service, caller };
}

export function directSubmitter(client: Client, stack: DirectStack) {
  const { service, caller } = directService(client, stack);
  return async (order: OrderRequest): Promise<string> => {
    const { created } = await service.submit(caller, order);
    return created ? 'ok' : 'already existed';
  };
}

/**
 * POST /v1/orders/batch: each call sends `orders` in one request. Every order gets a Call of its
 * own, timed as its batch was, so a phase of batches is read like a phase of single requests
 * (orders/s, and each order's submit-to-final latency).
 */
export function batchSubmitter(apiUrl: string, apiKey: string, connections: number) {
  const pool = new Pool(apiUrl, {
    connections,
    pipelining: 1,
    headersTimeout: 300_000,
    bodyTimeout: 300_000,
  });
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  return {
    async submit(orders: OrderRequest[]): Promise<string[]> {
      const response = await pool.request({
        method: 'POST',
        path: '/v1/orders/batch',
        headers,
        body: JSON.stringify({ orders }),
      });
      if (response.statusCode !== 200) {
        await response.body.dump();
        return orders.map(() => `HTTP ${response.statusCode}`);
      }
      const { results } = (await response.body.json()) as { results: { status: number }[] };
      return results.map((r) => (r.status === 201 ? 'ok' : `item ${r.status}`));
    },
    close: () => pool.close(),
  };
}

/** `n` orders in batches of `size`, `concurrency` batches at once; one Call per order. */
export async function batchLoop(
  n: number,
  size: number,
  concurrency: number,
  submit: (indices: number[]) => Promise<string[]>,
): Promise<LoadResult> {
  const t0 = nowMs();
  const batches = Array.from({ length: Math.ceil(n / size) }, (_, b) =>
    Array.from({ length: Math.min(size, n - b * size) }, (_, i) => b * size + i),
  );
  const limit = pLimit(concurrency);
  const timed = async (indices: number[]): Promise<Call[]> => {
    const startMs = nowMs();
    let outcomes: string[];
    try {
      outcomes = await submit(indices);
    } catch (err) {
      outcomes = indices.map(() => failureOutcome(err));
    }
    const endMs = nowMs();
    return indices.map((index, i) => ({ index, startMs, endMs, outcome: outcomes[i] ?? 'no answer' }));
  };
  const perBatch = await Promise.all(batches.map((indices) => limit(timed, indices)));
  // Per order: each carries the latency of the request that carried it.
  return loadResult(perBatch.flat(), t0);
}

/** The API's read path (OrderService.view) without HTTP, configured as the API the bench started. */
export function directReader(client: Client, stack: DirectStack) {
  const { service, caller } = directService(client, stack);
  return async (ref: string): Promise<string> => {
    await service.view(caller, { client: caller.id, ref });
    return 'ok';
  };
}

/** A raw start of a baseline workflow: no memo, no search attributes, default policies. */
export function rawStarter(client: Client, taskQueue: string) {
  return async (workflowType: string, workflowId: string, args: unknown[]): Promise<string> => {
    try {
      await client.workflow.start(workflowType, { taskQueue, workflowId, args });
      return 'ok';
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return 'already started';
      throw err;
    }
  };
}
