/**
 * POST /v1/orders/batch: many orders in one request, each answered exactly as POST /v1/orders
 * would have answered it alone — 201 with its `location` and view, 200 with the same order, 409,
 * 400 naming its fields, 503 — in the order they came.
 *
 * - One bad item never blocks the others: each is validated and submitted on its own.
 * - Items with the same ref are submitted one after another, in their order, exactly as two
 *   single requests sent one after the other would be: the second answers 200 (same body) or 409.
 * - At most API_BATCH_CONCURRENCY submissions of the batch are under way at once, and each start
 *   waits its turn at the API's start gate (start-gate.ts, API_START_CONCURRENCY for all clients),
 *   behind single orders and in turn with other clients' batch items.
 * - Items not yet started when API_BATCH_TIMEOUT_MS has passed, whether queued in the batch or at
 *   the start gate, answer 503 without being tried, so a slow or busy Temporal gives a partial
 *   answer the client can retry item by item, never a lost one.
 * - Items not yet started when the caller is gone (`signal`: it hung up, or the request deadline
 *   answered) are not started either: no one reads their answers, and sent again they start then.
 */
import pLimit from 'p-limit';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Caller } from '../clients';
import { OrderRequest } from '../../contract/schemas';
import { temporarilyUnavailable, toApiError } from '../http';
import type { Problem } from '../http';
import { orderLocation, type OrderService, type OrderView } from './order.service';
import { StartNotRun } from './start-gate';
import { validateRequest } from '../http';

export type BatchItemResult =
  | { status: 201; location: string; body: OrderView }
  | { status: 200; body: OrderView }
  | { status: number; body: Problem };

/** The envelope only: each item is checked on its own, so a bad one is that item's 400, not the batch's. */
export function batchEnvelope(maxOrders: number) {
  return z.strictObject({
    orders: z
      .array(z.unknown())
      .min(1, 'send at least one order')
      .max(maxOrders, `at most ${maxOrders} orders per batch`),
  });
}

export interface BatchOptions {
  concurrency: number;
  timeoutMs: number;
  requestId?: string;
  log: Logger;
  /** Aborted once the caller is gone: no further item is started. */
  signal?: AbortSignal;
  now?: () => number;
}

export async function submitBatch(
  orders: OrderService,
  caller: Caller,
  items: readonly unknown[],
  options: BatchOptions,
): Promise<BatchItemResult[]> {
  const now = options.now ?? Date.now;
  const startBy = now() + options.timeoutMs;
  const results: BatchItemResult[] = new Array<BatchItemResult>(items.length);

  const problem = (err: unknown): BatchItemResult => {
    const apiError = toApiError(err);
    if (apiError.status >= 500) options.log.warn({ err: apiError.cause ?? apiError }, 'batch item failed');
    return { status: apiError.status, body: apiError.toProblem({ requestId: options.requestId }) };
  };

  const outOfTime = () =>
    problem(
      temporarilyUnavailable('Not submitted: the batch ran out of time before this order; submit it again.'),
    );
  const closed = (): BatchItemResult => {
    // Not logged item by item: the request's own line says it was closed.
    const closedError = temporarilyUnavailable(
      'Not submitted: the request was closed before this order; submit it again.',
    );
    return { status: closedError.status, body: closedError.toProblem({ requestId: options.requestId }) };
  };

  const submitOne = async (item: unknown): Promise<BatchItemResult> => {
    if (now() > startBy) return outOfTime();
    if (options.signal?.aborted) return closed();
    try {
      const { body } = validateRequest(
        { body: OrderRequest },
        { body: item, path: undefined, query: undefined },
      );
      const { created, view } = await orders.submit(caller, body, options.log, 'batch', {
        // The gate's wait counts in real time (its timer), whatever `now` says.
        startBy: Date.now() + (startBy - now()),
        ...(options.signal && { signal: options.signal }),
      });
      return created
        ? { status: 201, location: orderLocation(view.ref), body: view }
        : { status: 200, body: view };
    } catch (err) {
      if (err instanceof StartNotRun) return err.reason === 'aborted' ? closed() : outOfTime();
      return problem(err);
    }
  };

  // Items sharing a ref form one lane, run in order; lanes run side by side.
  const lanes = new Map<string, number[]>();
  items.forEach((item, index) => {
    const ref = (item as { ref?: unknown } | null)?.ref;
    const key = typeof ref === 'string' ? `ref:${ref}` : `item:${index}`;
    lanes.set(key, [...(lanes.get(key) ?? []), index]);
  });
  const limit = pLimit(options.concurrency);
  const runLane = async (lane: number[]) => {
    for (const index of lane) results[index] = await submitOne(items[index]);
  };
  await Promise.all([...lanes.values()].map((lane) => limit(runLane, lane)));
  return results;
}
