/**
 * What Temporal's buttons do to a delivery workflow whose attempts are deferred (the endpoint at its
 * cap of attempts in flight, WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT; patch webhook-deferred-attempt), on
 * the dev server with the real delivery activities and a real receiver: a reset, a terminate, and
 * the retry window ending while the event waits its turn (patch webhook-deferral-window).
 *
 * The endpoint's one slot is held by a blocker: a delivery the receiver answers only after
 * `HOLD_MS` (the sender and the attempt allow a minute). Meanwhile every other event for the
 * endpoint is deferred, once a second (the deferral wait is at most `retryMaxIntervalMs`).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { temporal as proto } from '@temporalio/proto';
import type { RunningReceiver } from '../../src/webhooks/receiver';
import { webhookEventId } from '../../src/webhooks/message';
import type { EventDeliveryView } from '../../src/webhooks/webhook.service';
import { orderWorkflowId } from '../../contract/order';
import {
  webhookDeliveriesQuery,
  webhookDeliveryWorkflowId,
  webhookDeliveryWorkflowType,
  webhookEventSignal,
  type EndpointDelivery,
  type WebhookDeliveryInput,
  type WebhookDeliveryPolicy,
  type WebhookDeliveryState,
  type WebhookEvent,
} from '../../contract/webhooks';
import { mobileRequest, newRef, scaledTimings } from '../helpers/orders';
import type { OrderView } from '../../src/orders/order.service';
import { eventually, statusEvents, fabricatedEvent } from '../helpers/webhooks';
import type { OrderStack } from '../helpers/stack';
import { startHookedClient, type HookedClientStack } from '../helpers/hooked-client';

const CLIENT = 'deferring';
const KEY = 'test-key-deferring';
const HOLD_MS = 15_000;
const POLICY: WebhookDeliveryPolicy = {
  attemptTimeoutMs: 60_000,
  retryInitialMs: 200,
  // A deferral waits its turn, at most this long.
  retryMaxIntervalMs: 1_000,
  retryForMs: 120_000,
  idleCloseMs: 1_500,
};

type Deliveries = { ref: string; events: EventDeliveryView[] };

describe(
  'a deferred delivery through reset, terminate and the end of its retry window',
  { timeout: 600_000 },
  () => {
    let stack: OrderStack<'orders'>;
    let receiver: RunningReceiver;
    let hooked: HookedClientStack;
    /** Event ids the receiver answers only after HOLD_MS. */
    const held = new Set<string>();

    before(async () => {
      ({ stack, receiver } = hooked = await startHookedClient({
        name: 'deferred-lifecycle',
        id: CLIENT,
        key: KEY,
        timingsFor: () => scaledTimings(),
        receiver: { answer: (d) => (held.has(d.id) ? { status: 204, delayMs: HOLD_MS } : { status: 204 }) },
        endpointPath: '',
        webhooks: {
          // No first tries: every event goes to its order's delivery workflow, whose attempts meet the cap.
          direct: { maxInFlight: 0 },
          maxInFlightPerEndpoint: 1,
          senderTimeoutMs: 60_000,
          policy: POLICY,
        },
      }));
    });
    after(() => hooked?.stop());

    /** An event for the endpoint, of an order only the delivery workflow knows (no order workflow). */
    function fabricated(orderWorkflowId: string): WebhookEvent {
      const ref = orderWorkflowId.split(':').at(-1)!;
      return fabricatedEvent({
        orderWorkflowId,
        client: CLIENT,
        targets: ['main'],
        type: 'order.fulfilled',
        ref,
        status: 'FULFILLED',
      });
    }

    async function startDelivery(event: WebhookEvent, policy: WebhookDeliveryPolicy = POLICY) {
      const input: WebhookDeliveryInput = { orderWorkflowId: event.orderWorkflowId, client: CLIENT, policy };
      return stack.client.workflow.signalWithStart(webhookDeliveryWorkflowType, {
        workflowId: webhookDeliveryWorkflowId(event.orderWorkflowId),
        taskQueue: stack.webhooks.taskQueue,
        args: [input],
        signal: webhookEventSignal,
        signalArgs: [event],
      });
    }

    /** Takes the endpoint's one slot for HOLD_MS: resolves once the blocker's attempt is at the receiver. */
    async function holdTheEndpoint(): Promise<{ released: Promise<unknown> }> {
      const event = fabricated(`order:${CLIENT}:BLOCK-${randomUUID().slice(0, 8)}`);
      held.add(event.id);
      const handle = await startDelivery(event);
      await eventually(
        () => receiver.deliveries.some((d) => d.id === event.id),
        (got) => got,
        'the blocker at the receiver',
      );
      return { released: handle.result() };
    }

    async function submit(ref: string): Promise<string> {
      const res = await stack.api.request('POST', '/v1/orders', { body: mobileRequest(ref), apiKey: KEY });
      assert.equal(res.status, 201, res.text);
      return orderWorkflowId(ref, CLIENT);
    }

    async function deliveriesView(ref: string): Promise<Deliveries> {
      const res = await stack.api.request<Deliveries>('GET', `/v1/orders/${ref}/webhooks`, { apiKey: KEY });
      assert.equal(res.status, 200, res.text);
      return res.body;
    }

    const firstDelivery = (s: WebhookDeliveryState | undefined): EndpointDelivery | undefined =>
      s?.events[0]?.deliveries[0];

    /** The order's delivery workflow while its first event is being deferred (nothing sent yet). */
    async function deferring(workflowId: string): Promise<WebhookDeliveryState | undefined> {
      return eventually(
        () =>
          stack.client.workflow
            .getHandle(workflowId)
            .query(webhookDeliveriesQuery)
            .catch(() => undefined), // not started yet
        (s) => (firstDelivery(s)?.deferrals ?? 0) >= 2,
        `${workflowId}: deferred twice`,
      );
    }

    /** The order's event ids, as the receiver got them, in arrival order. */
    const receivedFor = (orderWfId: string) =>
      receiver.deliveries.filter((d) => d.message?.data.workflowId === orderWfId).map((d) => d.id);

    it('reset to its first workflow task while deferring: every event delivered once, with its own id, in order', async () => {
      const { released } = await holdTheEndpoint();
      const ref = newRef('dl-reset');
      const orderWfId = await submit(ref);
      const workflowId = webhookDeliveryWorkflowId(orderWfId);
      await deferring(workflowId);
      const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
      const firstTask = history.events!.find(
        (e) => e.eventType === proto.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      )!;
      // What `temporal workflow reset --type FirstWorkflowTask` does; later signals are reapplied.
      await stack.client.workflowService.resetWorkflowExecution({
        namespace: stack.temporal.namespace,
        workflowExecution: { workflowId },
        workflowTaskFinishEventId: firstTask.eventId,
        requestId: randomUUID(),
        reason: 'test: reset while deferring',
      });
      await released;
      const view = await eventually(
        () => deliveriesView(ref),
        (v) =>
          v.events.some((e) => e.type === 'order.fulfilled') &&
          v.events.every((e) => e.deliveries.every((d) => d.state === 'delivered')),
        `${ref}: every event delivered after the reset`,
        60_000,
      );
      const expected = view.events.map((e) => webhookEventId(orderWfId, e.sequence));
      assert.deepEqual(
        view.events.map((e) => e.id),
        expected,
      );
      assert.deepEqual(
        receivedFor(orderWfId),
        expected,
        'each event once, with its own id, in sequence order',
      );
      for (const e of view.events) assert.equal(e.deliveries[0]!.attempts, 1, JSON.stringify(e));
    });

    it('terminated while deferring: the view says the events will not be sent and how to send them; redeliveries send each once, with its own id', async () => {
      const { released } = await holdTheEndpoint();
      const ref = newRef('dl-term');
      const orderWfId = await submit(ref);
      const workflowId = webhookDeliveryWorkflowId(orderWfId);
      await deferring(workflowId);
      // Every event of the order handed to this run first: one handed off after the terminate would
      // start a new run, and be delivered there.
      // As many as its status changes: a check that finds the provider past HANDLING skips PROCESSING.
      const announced = statusEvents(
        (await stack.client.workflow.getHandle(orderWfId).result()) as Pick<OrderView, 'timeline'>,
      ).length;
      await eventually(
        () => stack.client.workflow.getHandle(workflowId).query(webhookDeliveriesQuery),
        (s) => s.events.length === announced && s.events.some((e) => e.event.type === 'order.fulfilled'),
        `${workflowId}: the order's ${announced} events, order.fulfilled among them`,
      );
      await stack.client.workflow.getHandle(workflowId).terminate('test: terminated while deferring');
      const stopped = await eventually(
        () => deliveriesView(ref),
        (v) => v.events.some((e) => e.type === 'order.fulfilled'),
        `${ref}: every event announced`,
      );
      assert.equal(stopped.events.length, announced, JSON.stringify(stopped));
      for (const e of stopped.events) {
        const d = e.deliveries[0]!;
        // Not `pending` with a next attempt in the past, for ever: nothing will try it again.
        assert.equal(d.state, 'failed', JSON.stringify(e));
        assert.match(d.lastError ?? '', /delivery workflow was terminated; redeliver the event to send it/);
        assert.equal(d.nextAttemptAt, undefined, JSON.stringify(e));
        assert.equal(d.attempts, 0, JSON.stringify(e));
      }

      // A later event of the order (one an operator's decision would announce) starts a new run, as
      // the announcement does: that run never had the events the terminated one held, and the
      // view still shows them as the terminated run left them.
      const later: WebhookEvent = {
        ...fabricated(orderWfId),
        id: webhookEventId(orderWfId, announced + 1),
        sequence: announced + 1,
      };
      await startDelivery(later);
      const afterNewRun = await eventually(
        () => deliveriesView(ref),
        (v) => v.events.length === announced + 1,
        `${ref}: the later event in the view`,
      );
      for (const e of afterNewRun.events.slice(0, announced)) {
        assert.equal(e.deliveries.length, 1, `the endpoint still shown: ${JSON.stringify(e)}`);
        assert.equal(e.deliveries[0]!.state, 'failed', JSON.stringify(e));
        assert.match(
          e.deliveries[0]!.lastError ?? '',
          /delivery workflow was terminated; redeliver the event to send it/,
        );
        assert.equal(e.deliveries[0]!.nextAttemptAt, undefined, JSON.stringify(e));
      }
      await released;
      assert.deepEqual(
        receivedFor(orderWfId).filter((id) => id !== later.id),
        [],
        'nothing the terminated run held sent before the redeliveries',
      );
      for (const e of afterNewRun.events.slice(0, announced)) {
        const res = await stack.api.request('POST', `/v1/orders/${ref}/webhooks/${e.id}/redeliver`, {
          apiKey: KEY,
        });
        assert.equal(res.status, 202, res.text);
      }
      const done = await eventually(
        () => deliveriesView(ref),
        (v) => v.events.every((e) => e.deliveries.every((d) => d.state === 'delivered')),
        `${ref}: every event delivered after its redelivery`,
        60_000,
      );
      const ids = done.events.map((e) => e.id);
      assert.deepEqual(
        ids,
        Array.from({ length: announced + 1 }, (_, i) => webhookEventId(orderWfId, i + 1)),
      );
      const received = receivedFor(orderWfId);
      assert.deepEqual([...received].sort(), [...ids].sort(), 'each event once, with its own id, none lost');
    });

    it('the retry window ends while the event waits its turn: it fails as a failed attempt would end it, and the workflow closes', async () => {
      const { released } = await holdTheEndpoint();
      const event = fabricated(`order:${CLIENT}:WINDOW-${randomUUID().slice(0, 8)}`);
      const handle = await startDelivery(event, { ...POLICY, retryForMs: 3_000 });
      const result = (await Promise.race([
        handle.result(),
        released.then(() => 'the blocker was released first'),
      ])) as WebhookDeliveryState | string;
      assert.notEqual(
        typeof result,
        'string',
        'expected the event to fail and its workflow to close while the endpoint was held',
      );
      const d = firstDelivery(result as WebhookDeliveryState)!;
      assert.equal(d.state, 'failed', JSON.stringify(d));
      assert.equal(d.attempts, 0, JSON.stringify(d));
      assert.ok((d.deferrals ?? 0) >= 1, JSON.stringify(d));
      assert.match(
        d.lastError ?? '',
        /^the retry window ended before its next attempt could be made \(.*\)$/,
      );
      assert.equal(d.nextAttemptAt, undefined);
      assert.ok(Date.now() - Date.parse(d.dueSince) >= 3_000);
      await released;
      assert.deepEqual(receivedFor(event.orderWorkflowId), [], 'nothing sent for the failed event');
    });
  },
);
