/**
 * What the order workflow tests share: a sandbox with its admin surface, a provider client with
 * short timeouts, scaled timings, order requests and a way to start an order as the API does.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type Client,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode } from '@temporalio/worker';
import { FIGURES_MEMO, orderFigures } from '../../src/orders/figures';
import type { WorkflowCode } from '../../src/worker/worker';
import { workflowBundleOptions } from '../../src/worker/bundle';
import { workflowCodeOptions } from './temporal';
import { createProviderPool, ProviderClient } from '../../src/provider';
import {
  AcceptedAtAttribute,
  CompletedAtAttribute,
  defaultOrderTimings,
  OrderClientAttribute,
  OrderStatusAttribute,
  OrderTypeAttribute,
  orderWorkflowId,
  SETTLEMENT_MEMO,
  type OrderSettlement,
  workflowTypeByOrderType,
  type OrderInput,
  type OrderRequest,
  type OrderResult,
  type OrderStatus,
  type OrderTimings,
  type OrderView,
} from '../../contract/order';
import {
  giftCardRequest,
  internetRequest,
  mobileRequest,
  SANDBOX_KEY,
  TIME_SCALE,
} from '../../scripts/lib/sandbox-orders';

/** Shared with the scripts that run orders against the sandbox (the cluster tier's rainbow deploy). */
export {
  ADMIN_TOKEN,
  giftCardRequest,
  installTestRuntime,
  internetRequest,
  mobileRequest,
  NORMAL_NUMBER,
  SANDBOX_KEY,
  startTestSandbox,
  TIME_SCALE,
  type TestSandbox,
  waitForView,
} from '../../scripts/lib/sandbox-orders';

export const PRODUCTION_KEY = 'production-key';

/** The provider client's HTTP timeouts in tests: a hang fault costs a second, not ten. */
export const TEST_HTTP_TIMEOUTS = { connectTimeoutMs: 500, headersTimeoutMs: 1_000, bodyTimeoutMs: 1_000 };

/** The spec's timings × TIME_SCALE; deadline and review recheck stay long unless a test shortens them. */
export function scaledTimings(overrides: Partial<OrderTimings> = {}): Partial<OrderTimings> {
  const spec = defaultOrderTimings.mobile_topup;
  return {
    firstCheckMs: spec.firstCheckMs * TIME_SCALE,
    handlingCheckMs: spec.handlingCheckMs * TIME_SCALE,
    maxIntervalMs: spec.maxIntervalMs * TIME_SCALE,
    pollIntervalMs: spec.pollIntervalMs * TIME_SCALE,
    pollPaceMs: spec.pollPaceMs * TIME_SCALE,
    deadlineMs: 20_000,
    reviewRecheckMs: 60_000,
    // No watch after a decision unless a test asks for one: the workflow would stay open.
    reviewWatchMs: 0,
    reviewWatchFirstCheckMs: 200,
    // Room for the old path's two calls of the test client's timeouts, plus head room.
    activityTimeoutMs: 2 * (TEST_HTTP_TIMEOUTS.headersTimeoutMs + TEST_HTTP_TIMEOUTS.bodyTimeoutMs) + 1_000,
    settleMs: spec.settleMs * TIME_SCALE,
    ...overrides,
  };
}

export function testProvider(
  baseUrl: string,
  apiKey = SANDBOX_KEY,
): { client: ProviderClient; close(): Promise<void> } {
  const pool = createProviderPool({
    baseUrl,
    connectTimeoutMs: TEST_HTTP_TIMEOUTS.connectTimeoutMs,
    connections: 16,
  });
  const client = new ProviderClient({ baseUrl, apiKey, dispatcher: pool, ...TEST_HTTP_TIMEOUTS });
  return { client, close: () => pool.close() };
}

/** A fresh ref per order: tests share one Temporal server and run in parallel. */
export function newRef(label: string): string {
  return `${label}-${randomUUID().slice(0, 8)}`;
}

/** newRef with a file's prefix (`API-<label>-…`), so that a file's orders are easy to tell apart. */
export const refsPrefixed =
  (prefix: string) =>
  (label: string): string =>
    newRef(`${prefix}-${label}`);

/** The owner startOrder records, as the intake API records the client that submitted an order. */
export const TEST_ORDER_CLIENT = 'workflow_tests';

/** Starts the order's workflow the way the intake API does (ID, reuse policy, search attributes). */
export function startOrder(
  client: Client,
  taskQueue: string,
  request: OrderRequest,
  extra: Omit<OrderInput, 'request' | 'acceptedAt'> = {},
): Promise<WorkflowHandleWithFirstExecutionRunId<(input: OrderInput) => Promise<OrderView>>> {
  return startOrderAs(client, {
    taskQueue,
    // As the API starts orders.
    input: { request, acceptedAt: new Date().toISOString(), ...extra },
    owner: TEST_ORDER_CLIENT,
    rejectDuplicate: true,
    // The API keeps a fingerprint of the request here; it must survive continue-as-new.
    memo: { requestHash: `test-${request.ref}`, [FIGURES_MEMO]: orderFigures(request) },
  });
}

/**
 * Whether the run's first workflow task was lost to its start-to-close timeout (a worker too
 * starved to finish it). Such an order takes the recovery path (its ref looked up before any send),
 * so the lean lifecycle's budgets do not apply to it; sending once still does.
 */
export function firstTaskTimedOut(events: readonly temporal.api.history.v1.IHistoryEvent[]): boolean {
  const { EventType, TimeoutType } = temporal.api.enums.v1;
  for (const e of events) {
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) return false;
    if (
      e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT &&
      e.workflowTaskTimedOutEventAttributes?.timeoutType === TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE
    )
      return true;
  }
  return false;
}

/** The number of events in the workflow's history (all runs are one run here). */
export async function historyLength(handle: WorkflowHandle): Promise<number> {
  return (await handle.fetchHistory()).events?.length ?? 0;
}

/**
 * Wraps a provider client to count its calls per ref (the first argument, or its `ref` field;
 * `*` when there is none, e.g. a gift-card placement) and method.
 */
export function countingProvider<P extends object>(
  provider: P,
): {
  provider: P;
  callsFor(key: string): Record<string, number>;
  total(): number;
} {
  const counts = new Map<string, Record<string, number>>();
  const keyOf = (arg: unknown) =>
    typeof arg === 'string' ? arg : ((arg as { ref?: string } | undefined)?.ref ?? '*');
  const proxy = new Proxy(provider, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const perKey = counts.get(keyOf(args[0])) ?? {};
        perKey[String(prop)] = (perKey[String(prop)] ?? 0) + 1;
        counts.set(keyOf(args[0]), perKey);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return {
    provider: proxy,
    callsFor: (key) => counts.get(key) ?? {},
    total: () =>
      [...counts.values()].reduce((sum, c) => sum + Object.values(c).reduce((a, b) => a + b, 0), 0),
  };
}

/** The run's pre-built bundle, or one bundle for all the workers of this file. */
export async function bundledWorkflows(): Promise<WorkflowCode> {
  const options = workflowCodeOptions();
  if ('workflowBundle' in options) return options;
  const { code } = await bundleWorkflowCode({ ...workflowBundleOptions, logger: undefined });
  return { workflowBundle: { code } };
}

/**
 * The i-th order of a statement test's mix: a type by `i % 3` with amounts varying with `i`, the
 * status `statuses[i]` (cycling; a partial fill only for a gift card) and the settlement figures
 * such an order records (a partial split, a debit on most fulfilled orders, none refunded).
 */
export function statementMixOrder(
  i: number,
  ref: string,
  statuses: readonly OrderStatus[],
): { request: OrderRequest; status: OrderStatus; open: boolean; settlement?: OrderSettlement } {
  const request =
    i % 3 === 0
      ? { ...mobileRequest(ref), amount: 100 + i }
      : i % 3 === 1
        ? internetRequest(ref)
        : giftCardRequest(ref, 1 + (i % 4));
  const drawn = statuses[i % statuses.length]!;
  const status = drawn === 'PARTIALLY_FULFILLED' && request.type !== 'gift_card' ? 'FULFILLED' : drawn;
  const open = status === 'NEEDS_REVIEW' || status === 'PROCESSING';
  const settlement: OrderSettlement | undefined =
    status === 'PARTIALLY_FULFILLED' && request.type === 'gift_card'
      ? {
          debit: { amount: 750.5, source: 'fulfilled_amount' },
          partial: {
            quantity: request.quantity,
            fulfilledQuantity: 1,
            refundedQuantity: request.quantity - 1,
            fulfilledAmount: 750.5,
          },
        }
      : status === 'FULFILLED' && i % 4 !== 0
        ? { debit: { amount: 10 * i + 0.15, source: 'balance_amount' } }
        : status === 'REFUNDED'
          ? { debit: { amount: 0, source: 'balance_amount' } }
          : undefined;
  return { request, status, open, ...(settlement && { settlement }) };
}

/**
 * An order as the list, the statements and the export see it, without a worker: started on a
 * queue nobody polls, with the search attributes the API and the workflow set (and, with
 * `figures`, the memo's figures the API stores), so a read route can be tested at any size.
 */
export function seedListedOrder(
  client: Client,
  order: {
    taskQueue: string;
    owner: string;
    request: OrderRequest;
    status: OrderStatus;
    acceptedAt: Date;
    completedAt?: Date;
    figures?: boolean;
    /** What the order recorded as it settled (the workflow's memo `settlement`). */
    settlement?: OrderSettlement;
    /** The workflow's input, when a test reads the order's view; none otherwise. */
    input?: OrderInput;
    /** Accepted before clients: no OrderClient attribute (counted as the default client's). */
    noClient?: boolean;
  },
): Promise<WorkflowHandle> {
  const { request, completedAt } = order;
  return client.workflow.start(workflowTypeByOrderType[request.type], {
    taskQueue: order.taskQueue,
    workflowId: orderWorkflowId(request.ref, order.owner),
    args: order.input ? [order.input] : [],
    memo: {
      ...(order.figures && { [FIGURES_MEMO]: orderFigures(request) }),
      ...(order.settlement && { [SETTLEMENT_MEMO]: order.settlement }),
    },
    typedSearchAttributes: [
      { key: OrderTypeAttribute, value: request.type },
      { key: OrderStatusAttribute, value: order.status },
      ...(order.noClient ? [] : [{ key: OrderClientAttribute, value: order.owner }]),
      { key: AcceptedAtAttribute, value: order.acceptedAt },
      ...(completedAt ? [{ key: CompletedAtAttribute, value: completedAt }] : []),
    ],
  }) as Promise<WorkflowHandle>;
}

/**
 * Seeds `orders` (seedListedOrder), then waits, 30 s at most, until `visibleCount()` counts them all:
 * visibility trails the starts a little.
 */
export async function seedVisibleOrders(
  client: Client,
  orders: readonly Parameters<typeof seedListedOrder>[1][],
  visibleCount: () => Promise<number>,
): Promise<void> {
  await Promise.all(orders.map((order) => seedListedOrder(client, order)));
  const deadline = Date.now() + 30_000;
  while ((await visibleCount()) < orders.length) {
    assert.ok(Date.now() < deadline, 'the orders became visible');
    await sleep(300);
  }
}

/** Terminates the orders `refs` of `owner` (default: the default client), whatever became of them: for `after()`. */
export async function terminateOrders(
  client: Client,
  refs: readonly string[],
  owner?: string,
): Promise<void> {
  await Promise.allSettled(
    refs.map((ref) => client.workflow.getHandle(orderWorkflowId(ref, owner)).terminate('test done')),
  );
}

/**
 * Starts an order's workflow straight on Temporal, with the search attributes the API sets: its
 * type, ACCEPTED, `owner` (none when undefined: as before clients) and, unless `acceptedAtAttribute`
 * is false, `input.acceptedAt`. ID `orderWorkflowId(ref)` unless `workflowId` says otherwise.
 */
export function startOrderAs(
  client: Client,
  order: {
    taskQueue: string;
    input: OrderInput;
    owner: string | undefined;
    memo: Record<string, unknown>;
    workflowId?: string;
    rejectDuplicate?: boolean;
    acceptedAtAttribute?: boolean;
  },
): Promise<WorkflowHandleWithFirstExecutionRunId<(input: OrderInput) => Promise<OrderView>>> {
  const { request, acceptedAt } = order.input;
  return client.workflow.start<(input: OrderInput) => Promise<OrderView>>(
    workflowTypeByOrderType[request.type],
    {
      taskQueue: order.taskQueue,
      workflowId: order.workflowId ?? orderWorkflowId(request.ref),
      args: [order.input],
      ...(order.rejectDuplicate && { workflowIdReusePolicy: 'REJECT_DUPLICATE' as const }),
      memo: order.memo,
      typedSearchAttributes: [
        { key: OrderTypeAttribute, value: request.type },
        { key: OrderStatusAttribute, value: 'ACCEPTED' },
        ...(order.owner ? [{ key: OrderClientAttribute, value: order.owner }] : []),
        ...(order.acceptedAtAttribute === false
          ? []
          : [{ key: AcceptedAtAttribute, value: new Date(acceptedAt) }]),
      ],
    },
  );
}

/**
 * A fulfilled mobile top-up's result without what the provider debited, once that is checked to be
 * the provider's own figure: the sandbox debits a plan's cost per dinar (`balance_amount`), never
 * more than the amount sent.
 */
export function mobileResultBesidesDebit(result: OrderResult | undefined): OrderResult | undefined {
  if (!result) return result;
  const { debit, ...rest } = result;
  assert.equal(debit?.source, 'balance_amount', 'the debit is the provider’s balance_amount');
  assert.ok(
    debit.amount > 0 && debit.amount <= (rest.amount ?? 0),
    `debit ${debit.amount} of ${rest.amount}`,
  );
  return rest;
}

/**
 * A normal order's history events (docs/contributors.md "The order lifecycle"), whatever its type:
 * the start and its first task (4), the local send's marker, the SUBMITTED upsert, the polling
 * activity (3), the last task (3), the final upsert (with what the provider debited) and the
 * completion.
 */
export const LEAN_ORDER_EVENTS = 14;

/** A PARTIALLY_FULFILLED gift card records its split in the memo: one event more (src/orders/lifecycle/debit.workflow.ts). */
export const PARTIAL_SPLIT_MEMO_EVENTS = 1;
