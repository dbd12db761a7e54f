/**
 * A late event of an order (one an operator's decision or the watch announces after the order's
 * delivery workflow has closed) starts a new run of that workflow, with no state carried over. The
 * order's view still shows what the earlier run delivered: it reads the earlier runs too
 * (src/webhooks/webhook-records.service.ts), on the dev server with the real delivery activities and a real receiver.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { RunningReceiver } from '../../src/webhooks/receiver';
import type { EventDeliveryView } from '../../src/webhooks/webhook.service';
import { orderWorkflowId } from '../../contract/order';
import { REVIEW_DECISION_EVENT } from '../../contract/event-types';
import {
  webhookDeliveryWorkflowId,
  webhookDeliveryWorkflowType,
  webhookEventSignal,
  type WebhookDeliveryInput,
  type WebhookDeliveryPolicy,
  type WebhookDeliveryState,
} from '../../contract/webhooks';
import { mobileRequest, newRef, scaledTimings } from '../helpers/orders';
import { eventually, fabricatedEvent } from '../helpers/webhooks';
import type { OrderStack } from '../helpers/stack';
import { startHookedClient, type HookedClientStack } from '../helpers/hooked-client';

const CLIENT = 'late';
const KEY = 'test-key-late';
const POLICY: WebhookDeliveryPolicy = {
  attemptTimeoutMs: 5_000,
  retryInitialMs: 200,
  retryMaxIntervalMs: 1_000,
  retryForMs: 20_000,
  // A short idle close: the first run completes soon after the order is final.
  idleCloseMs: 1_000,
};

type Deliveries = { ref: string; events: EventDeliveryView[] };

describe('a late event after the delivery workflow completed', { timeout: 300_000 }, () => {
  let stack: OrderStack<'orders'>;
  let receiver: RunningReceiver;
  let hooked: HookedClientStack;

  before(async () => {
    ({ stack, receiver } = hooked = await startHookedClient({
      name: 'late-event',
      id: CLIENT,
      key: KEY,
      timingsFor: () => scaledTimings(),
      receiver: { answer: () => ({ status: 204 }) },
      endpointPath: '',
      // No first tries: every event is handed off to the order's delivery workflow.
      webhooks: { direct: { maxInFlight: 0 }, policy: POLICY },
    }));
  });
  after(() => hooked?.stop());

  async function deliveriesView(ref: string): Promise<Deliveries> {
    const res = await stack.api.request<Deliveries>('GET', `/v1/orders/${ref}/webhooks`, { apiKey: KEY });
    assert.equal(res.status, 200, res.text);
    return res.body;
  }

  it('starts a new run; the view still shows the events the completed run delivered as delivered', async () => {
    const ref = newRef('late');
    const res = await stack.api.request('POST', '/v1/orders', { body: mobileRequest(ref), apiKey: KEY });
    assert.equal(res.status, 201, res.text);
    const orderWfId = orderWorkflowId(ref, CLIENT);
    await stack.client.workflow.getHandle(orderWfId).result();
    const workflowId = webhookDeliveryWorkflowId(orderWfId);
    // The run completes on its own: everything delivered, the order final, idle for idleCloseMs.
    const first = await eventually(
      () =>
        stack.client.workflow
          .getHandle(workflowId)
          .describe()
          .catch(() => undefined),
      (d) => d?.status.name === 'COMPLETED',
      `${workflowId}: completed`,
    );
    const completed = (await stack.client.workflow
      .getHandle(workflowId, first!.runId)
      .result()) as WebhookDeliveryState;
    assert.ok(completed.events.length >= 2, JSON.stringify(completed));
    const before = await deliveriesView(ref);
    assert.ok(
      before.events.every((e) => e.deliveries.every((d) => d.state === 'delivered')),
      JSON.stringify(before),
    );

    // The later event, handed off as an announcement hands it off: a new run, nothing carried.
    const sequence = before.events.length + 1;
    const later = fabricatedEvent({
      orderWorkflowId: orderWfId,
      client: CLIENT,
      targets: ['main'],
      sequence,
      type: REVIEW_DECISION_EVENT,
      ref,
      status: 'FULFILLED',
    });
    const input: WebhookDeliveryInput = { orderWorkflowId: orderWfId, client: CLIENT, policy: POLICY };
    const second = await stack.client.workflow.signalWithStart(webhookDeliveryWorkflowType, {
      workflowId,
      taskQueue: stack.webhooks.taskQueue,
      args: [input],
      signal: webhookEventSignal,
      signalArgs: [later],
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
    assert.notEqual(second.signaledRunId, first!.runId, 'a new run');

    const view = await eventually(
      () => deliveriesView(ref),
      (v) => v.events.length === sequence && v.events.at(-1)!.deliveries[0]?.state === 'delivered',
      `${ref}: the later event delivered`,
    );
    for (const [i, e] of view.events.slice(0, -1).entries()) {
      const d = e.deliveries[0]!;
      assert.equal(
        d.state,
        'delivered',
        `event ${i + 1}, as the completed run delivered it: ${JSON.stringify(e)}`,
      );
      assert.equal(d.attempts, 1, JSON.stringify(e));
      assert.equal(d.lastError, undefined, JSON.stringify(e));
    }
    assert.deepEqual(
      (await stack.webhooks.deliveryState(orderWfId))?.events.map((e) => e.deliveries[0]!.state),
      view.events.map(() => 'delivered'),
      'the test helper reads as the routes do',
    );
    const received = receiver.deliveries
      .filter((d) => d.message?.data.workflowId === orderWfId)
      .map((d) => d.id);
    assert.deepEqual(
      received,
      view.events.map((e) => e.id),
      'each event once, none asked to be redelivered',
    );
  });
});
