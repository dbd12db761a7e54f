/**
 * For webhook tests: the delivery policy scaled down, test clients with endpoints, and how a test
 * reads a client's orders and the events its receiver got. The stack itself is startOrderStack
 * with `webhooks` (test/helpers/stack.ts).
 */
import { accountReport } from '../../src/provider-account/account.service';
import { registerAccountGauges } from '../../src/api/metrics';
import { PrometheusMetrics } from '../../src/observability/prometheus';
import { testClientsFile, type TestApi } from './api';
import type { ClientsFile, WebhookEndpoint } from '../../src/clients/model';
import { hashApiKey } from '../../src/clients/keys';
import type { OrderView } from '../../src/orders/order.service';
import type { RunningReceiver } from '../../src/webhooks/receiver';
import type { WebhookDeliveryPolicy, WebhookEvent } from '../../contract/webhooks';
import { webhookEventId } from '../../src/webhooks/message';
import type { OrderStack } from './stack';

/**
 * Scaled down so a test sees several retries in seconds: 1 s per attempt, back-off 200 ms doubling
 * to 1 s, given up after 8 s, closed 1.5 s after the last event once the order is final.
 */
export const TEST_WEBHOOK_POLICY: WebhookDeliveryPolicy = {
  attemptTimeoutMs: 1_000 + 2_000,
  retryInitialMs: 200,
  retryMaxIntervalMs: 1_000,
  retryForMs: 8_000,
  idleCloseMs: 1_500,
};
export const TEST_WEBHOOK_TIMEOUT_MS = 1_000;

export interface HookedClient {
  key: string;
  scopes?: ClientsFile['clients'][number]['scopes'];
  webhooks?: WebhookEndpoint[];
}

/** The test clients (test/helpers/api.ts) plus `extra` clients, some with webhook endpoints. */
export function clientsWith(extra: Record<string, HookedClient>): ClientsFile {
  return {
    ...testClientsFile,
    clients: [
      ...testClientsFile.clients,
      ...Object.entries(extra).map(([id, c]) => ({
        id,
        name: `Test client ${id}`,
        scopes: c.scopes ?? [
          'orders:write',
          'orders:read',
          'reviews:write',
          'webhooks:read',
          'webhooks:write',
        ],
        keys: [{ id: 'k1', hash: hashApiKey(c.key) }],
        ...(c.webhooks ? { webhooks: c.webhooks } : {}),
      })),
    ],
  };
}

/** Polls `read` until `done` holds for its value, or fails after `timeoutMs` naming what it last saw. */
export async function eventually<T>(
  read: () => Promise<T> | T,
  done: (value: T) => boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await read();
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms; last: ${JSON.stringify(last)?.slice(0, 2_000)}`);
}

/**
 * How a test reads one client's orders through the stack's API and the events its receiver got.
 * Getters, since the stack and the receiver start in the test file's `before`.
 */
export function clientOrders(stack: () => { api: TestApi }, apiKey: string, receiver: () => RunningReceiver) {
  const call = <T>(method: string, path: string, body?: unknown) =>
    stack().api.request<T>(method, path, { body, apiKey });
  const viewOf = async (ref: string) => (await call<OrderView>('GET', `/v1/orders/${ref}`)).body;
  const until = (ref: string, done: (v: OrderView) => boolean, what: string, timeoutMs = 60_000) =>
    eventually(() => viewOf(ref), done, `${ref}: ${what}`, timeoutMs);
  const eventsOf = (ref: string) =>
    receiver()
      .deliveries.filter((d) => d.message?.data.ref === ref)
      .map((d) => d.message!.type);
  return { call, viewOf, until, eventsOf };
}

/** The API's account gauges (src/api/metrics.ts) as a scrape would read them now: no cached report. */
export async function scrapeAccountGauges(
  stack: OrderStack<'orders'>,
  provider: Parameters<typeof accountReport>[0]['provider'],
): Promise<string> {
  const metrics = new PrometheusMetrics({ processMetrics: false });
  registerAccountGauges(
    metrics,
    accountReport({
      client: stack.client,
      taskQueue: stack.taskQueues.orders,
      provider,
      timeoutMs: 1_500,
      ttlMs: 0,
    }),
  );
  return (await metrics.exposition()).body;
}

/**
 * The status events an order's timeline says it should have produced, in order: one per change of
 * status (a check that finds the provider a phase further than expected skips a status).
 */
export function statusEvents(view: Pick<OrderView, 'timeline'>): string[] {
  const events: string[] = [];
  let previous = 'ACCEPTED';
  for (const { status } of view.timeline) {
    if (status !== previous) events.push(`order.${status.toLowerCase()}`);
    previous = status;
  }
  return events;
}

/**
 * An event for a delivery test, of an order only the delivery side knows (no order workflow behind
 * it): event `sequence` (default 1) of `orderWorkflowId` for `client`'s endpoints `targets`, whose
 * view holds only `ref` and `status`. Its id is the one the announcement gives it unless `id` says otherwise.
 */
export function fabricatedEvent(event: {
  orderWorkflowId: string;
  client: string;
  targets: string[];
  type: string;
  ref: string;
  status: string;
  sequence?: number;
  id?: string;
}): WebhookEvent {
  const sequence = event.sequence ?? 1;
  return {
    id: event.id ?? webhookEventId(event.orderWorkflowId, sequence),
    orderWorkflowId: event.orderWorkflowId,
    targets: event.targets,
    sequence,
    type: event.type,
    timestamp: new Date().toISOString(),
    client: event.client,
    view: { ref: event.ref, status: event.status, timeline: [] },
  } as unknown as WebhookEvent;
}
