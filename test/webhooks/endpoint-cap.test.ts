/**
 * The per-endpoint cap (WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT) on the dev server: an attempt the worker
 * does not make because the endpoint already has as many in flight as it may is `deferred` — no
 * attempt counted, no `lastError`, no back-off for the endpoint, the retry window still measured
 * from when the event became due — and it comes again soon. Four orders of one client whose
 * receiver answers in 600 ms, with a cap of one and first tries off, so their delivery workflows'
 * attempts meet the cap.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import type { OrderView } from '../../src/orders/order.service';
import type { EndpointDeliverySummary } from '../../src/webhooks/webhook.service';
import { endpointSecret } from '../../src/webhooks/secrets';
import { startReceiver, type RunningReceiver } from '../../src/webhooks/receiver';
import { orderWorkflowId } from '../../contract/order';
import type { WebhookDeliveryState } from '../../contract/webhooks';
import { mobileRequest, scaledTimings } from '../helpers/orders';
import { clientsWith, eventually } from '../helpers/webhooks';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const KEY = 'test-key-capped';
const ORDERS = 4;
const ANSWER_MS = 600;

describe('an endpoint at its cap of attempts in flight', { timeout: 300_000 }, () => {
  const signingKey = randomBytes(32);
  let stack: OrderStack<'orders'>;
  let receiver: RunningReceiver;
  let inFlight = 0;
  let mostInFlight = 0;

  before(async () => {
    receiver = await startReceiver({
      secrets: [endpointSecret(signingKey, 'capped', 'main', 1)],
      onDelivery: () => {
        inFlight += 1;
        mostInFlight = Math.max(mostInFlight, inFlight);
        setTimeout(() => (inFlight -= 1), ANSWER_MS);
      },
      answer: () => ({ status: 204, delayMs: ANSWER_MS }),
    });
    stack = await startOrderStack({
      name: 'endpoint-cap',
      workers: { orders: {} },
      api: { timingsFor: () => scaledTimings() },
      webhooks: {
        clients: clientsWith({ capped: { key: KEY, webhooks: [{ id: 'main', url: receiver.url }] } }),
        signingKey,
        // No first tries: every event goes to its order's delivery workflow, whose attempts meet the cap.
        direct: { maxInFlight: 0 },
        maxInFlightPerEndpoint: 1,
        // Well above the receiver's answer time: on a loaded machine an attempt is never cut short.
        senderTimeoutMs: 5_000,
      },
    });
  });
  after(async () => {
    await stack?.stop();
    await receiver?.close();
  });

  it('an attempt beyond the cap is deferred, not failed: every event delivered on its one attempt, no error shown, the window from when it became due', async () => {
    const refs = Array.from({ length: ORDERS }, () => `CAP-${randomUUID().slice(0, 8)}`);
    await Promise.all(
      refs.map(async (ref) => {
        const res = await stack.api.request('POST', '/v1/orders', { body: mobileRequest(ref), apiKey: KEY });
        assert.equal(res.status, 201, res.text);
      }),
    );
    const states: WebhookDeliveryState[] = [];
    for (const ref of refs) {
      const state = await eventually(
        () => stack.webhooks.deliveryState(orderWorkflowId(ref, 'capped')),
        (state) =>
          !!state?.orderFinal &&
          state.events.every((e) => e.deliveries.every((d) => d.state === 'delivered')),
        `${ref}: every event delivered`,
        120_000,
      );
      states.push(state!);
    }
    const deliveries = states.flatMap((s) => s.events.flatMap((e) => e.deliveries));
    assert.equal(mostInFlight, 1, 'the cap held at the receiver');
    for (const d of deliveries) {
      assert.equal(d.attempts, 1, `one attempt each, deferrals not counted: ${JSON.stringify(d)}`);
      assert.equal(d.lastError, undefined, `no made-up failure: ${JSON.stringify(d)}`);
      // The retry window was not moved by the deferrals: it runs from when the event became due.
      if (d.deferrals)
        assert.ok(Date.parse(d.lastAttemptAt!) - Date.parse(d.dueSince) >= 150, JSON.stringify(d));
    }
    assert.ok(
      deliveries.some((d) => (d.deferrals ?? 0) > 0),
      `the cap deferred some attempts: ${JSON.stringify(deliveries)}`,
    );
    // No back-off left behind for the endpoint: deferrals are not the endpoint's failures.
    for (const s of states) assert.deepEqual(s.backoffMs, {});
    for (const ref of refs) {
      const view = (
        await stack.api.request<OrderView & { webhooks?: EndpointDeliverySummary[] }>(
          'GET',
          `/v1/orders/${ref}`,
          {
            apiKey: KEY,
          },
        )
      ).body;
      assert.equal(view.webhooks?.[0]?.lastError, undefined, JSON.stringify(view.webhooks));
    }
    // Every event reached the receiver exactly once: a deferred attempt sent nothing.
    const ids = receiver.deliveries.map((d) => d.id);
    assert.equal(new Set(ids).size, ids.length, 'no event sent twice');
    assert.equal(ids.length, deliveries.length);
  });
});
