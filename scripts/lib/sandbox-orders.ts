/**
 * What the tests and the scripts that run orders against the sandbox share (test/helpers/orders.ts
 * re-exports it; the cluster tier's rainbow deploy uses it): the sandbox with its admin surface,
 * order requests, waiting for an order's view, and the SDK's runtime logging.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { Runtime } from '@temporalio/worker';
import { createWorkerLogger } from '../../src/worker/logger';
import { startSandbox, type StartedSandbox } from '../../src/sandbox/server';
import type { FaultSpecInput, RouteName } from '../../src/sandbox/faults';
import type { RequestRecord, SandboxSettings } from '../../src/sandbox/state';
import type { OutcomeChangeSpecInput } from '../../src/sandbox/outcome-changes';
import type { OrderView } from '../../contract/order';
import type { GiftCardRequest, InternetTopupRequest, MobileTopupRequest } from '../../contract/schemas';

export const ADMIN_TOKEN = 'test-admin-token';
export const SANDBOX_KEY = 'sandbox-key';

/**
 * The sandbox runs 100× faster than the spec (PENDING 50 ms, HANDLING until 200 ms) and the
 * order timings follow: a normal order finishes in a fraction of a second.
 */
export const TIME_SCALE = 0.01;

export interface TestSandbox extends StartedSandbox {
  addFault(fault: FaultSpecInput): Promise<void>;
  clearFaults(): Promise<void>;
  sendsOf(ref: string): Promise<{ ref: string; accepted: number; attempts: number }>;
  report(): Promise<{
    refs: Record<string, { accepted: number; attempts: number }>;
    giftCardOrders: { placed: number };
  }>;
  /** `balance`: the account's balance from now on (DZD). */
  settings(
    changes: Partial<SandboxSettings> & { balance?: number },
  ): Promise<SandboxSettings & { balance: number }>;
  requests(route: RouteName): Promise<RequestRecord[]>;
  /**
   * Resolves once every request to `route` received so far is at least `commitDelayMs` old (plus
   * head room): whatever a `late_commit` rule was holding has been committed by then.
   */
  pendingCommitsDone(route: RouteName, commitDelayMs: number): Promise<void>;
  /** From `afterMs` on, the top-up sent under `ref` has the given status (outcomes that change later). */
  changeTopup(ref: string, change: OutcomeChangeSpecInput): Promise<void>;
  changeGiftCardOrder(orderId: string, change: OutcomeChangeSpecInput): Promise<void>;
  /** Every gift-card order the sandbox placed, oldest first. */
  giftCardOrders(): Promise<{ orderId: string; quantity: number; placedAt: string; clientRef?: string }[]>;
}

export async function startTestSandbox(timeScale = TIME_SCALE): Promise<TestSandbox> {
  const sandbox = await startSandbox({ port: 0, timeScale, adminToken: ADMIN_TOKEN });
  const admin = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${sandbox.url}${path}`, {
      method,
      headers: { 'x-admin-token': ADMIN_TOKEN, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json()) as { data: T };
    if (!res.ok) throw new Error(`sandbox admin ${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json.data;
  };
  return {
    ...sandbox,
    addFault: (fault) => admin('POST', '/admin/faults', fault),
    clearFaults: () => admin('DELETE', '/admin/faults'),
    sendsOf: (ref) => admin('GET', `/admin/sends/${encodeURIComponent(ref)}`),
    report: () => admin('GET', '/admin/sends'),
    settings: (changes) => admin('PATCH', '/admin/settings', changes),
    requests: async (route) =>
      (await admin<{ requests: RequestRecord[] }>('GET', `/admin/requests?route=${route}`)).requests,
    async pendingCommitsDone(route, commitDelayMs) {
      const { requests } = await admin<{ requests: RequestRecord[] }>(
        'GET',
        `/admin/requests?route=${route}`,
      );
      const latest = Math.max(0, ...requests.map((r) => r.receivedAt));
      const wait = latest + commitDelayMs + 500 - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    },
    changeTopup: (ref, change) => admin('POST', `/admin/topups/${encodeURIComponent(ref)}/outcome`, change),
    changeGiftCardOrder: (orderId, change) =>
      admin('POST', `/admin/gift-card-orders/${encodeURIComponent(orderId)}/outcome`, change),
    giftCardOrders: async () =>
      (
        await admin<{
          orders: { orderId: string; quantity: number; placedAt: string; clientRef?: string }[];
        }>('GET', '/admin/gift-card-orders')
      ).orders,
  };
}

export const NORMAL_NUMBER = '0551234567';

export function mobileRequest(ref: string, msisdn = NORMAL_NUMBER): MobileTopupRequest {
  return { type: 'mobile_topup', ref, planCode: 'PREPAID_DJEZZY', msisdn, amount: 500 };
}

export function internetRequest(ref: string): InternetTopupRequest {
  return { type: 'internet_topup', ref, lineType: 'ADSL', number: '021123456', value: 1000 };
}

export function giftCardRequest(ref: string, quantity = 2): GiftCardRequest {
  return { type: 'gift_card', ref, productId: 'GOOGLE_PLAY', typeId: 'GOOGLE_PLAY_1000', quantity };
}

/** Polls until `predicate` holds for the order's view (the status query), or fails after `timeoutMs`. */
export async function waitForView(
  handle: WorkflowHandle,
  predicate: (view: OrderView) => boolean,
  timeoutMs = 15_000,
): Promise<OrderView> {
  const deadline = Date.now() + timeoutMs;
  let last: OrderView | undefined;
  let failedInARow = 0;
  while (Date.now() < deadline) {
    try {
      last = await handle.query<OrderView>('status');
      failedInARow = 0;
    } catch (err) {
      // A query that races a run's continue-as-new (an order entering review does) can fail once:
      // its legacy-query replay fails (docs/contributors.md "Review in a run of its own"). Twice in a row is a failure.
      if (++failedInARow > 1) throw err;
      continue;
    }
    if (predicate(last)) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`order view did not reach the expected state; last: ${JSON.stringify(last?.timeline)}`);
}

let runtimeInstalled = false;
/** The SDK logs through our pino adapter at LOG_LEVEL (npm test: silent); once per process. */
export function installTestRuntime(): void {
  if (runtimeInstalled) return;
  Runtime.install({ logger: createWorkerLogger(process.env.LOG_LEVEL ?? 'warn') });
  runtimeInstalled = true;
}
