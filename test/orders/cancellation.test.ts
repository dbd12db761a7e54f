/**
 * What Temporal's cancellation (Temporal UI's Request Cancellation, `temporal workflow cancel`)
 * does to an order (src/orders/lifecycle/cancellation.workflow.ts): never an order left without its outcome.
 * Real Temporal, a real worker, the sandbox over HTTP; fault rules apply to the whole sandbox, so
 * these tests run one after another and each leaves none behind.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { WorkflowHandle } from '@temporalio/client';
import { ListOrdersQuery } from '../../src/http/schemas';
import { orderStatuses } from '../../contract/schemas';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { webhookEventTypes } from '../../contract/event-types';
import { decideReviewUpdate, orderWorkflowId, type OrderView } from '../../contract/order';
import { mobileRequest, newRef, waitForView } from '../helpers/orders';
import { useFaultStack } from '../helpers/stack';

describe('the CANCELLED status', () => {
  it('is a final status the list filters on and clients may subscribe to (order.cancelled)', () => {
    assert.equal(ListOrdersQuery.parse({ status: 'CANCELLED' }).status, 'CANCELLED');
    assert.ok(webhookEventTypes(orderStatuses).includes('order.cancelled'));
  });
});

describe('an order whose workflow Temporal is asked to cancel', () => {
  const env = useFaultStack({ name: 'cancellation', workers: { main: {} } });

  const start = (ref: string, msisdn?: string) => env.start(mobileRequest(ref, msisdn));
  /** As Temporal UI's button and the CLI do: the workflow ID's latest run. */
  const cancel = (ref: string) => env.client.workflow.getHandle(orderWorkflowId(ref)).cancel();
  const events = (view: OrderView) => view.timeline.map((e) => `${e.status}: ${e.event}`).join('\n');
  const sendsReceived = async (since: number) =>
    (await env.sandbox.requests('mobile.send')).filter((r) => r.receivedAt >= since).length;

  it('before anything reached the provider (every send refused with 429): ends CANCELLED, nothing sent', async () => {
    await env.sandbox.addFault({ kind: 'rate_limit', routes: ['mobile.send'], retryAfterSeconds: 1 });
    const ref = newRef('cancel-unsent');
    const since = Date.now();
    const handle = await start(ref);
    while ((await sendsReceived(since)) < 2) await new Promise((r) => setTimeout(r, 20));
    await cancel(ref);

    const view = await handle.result();
    assert.equal(view.status, 'CANCELLED', events(view));
    assert.match(events(view), /Cancellation requested in Temporal at .*: nothing more is sent/);
    assert.match(
      events(view),
      /CANCELLED: Cancelled as requested: the provider was never reached; nothing sent/,
    );
    assert.ok(view.completedAt);
    assert.equal((await env.sandbox.sendsOf(ref)).accepted, 0);
    const description = await handle.describe();
    assert.equal(description.status.name, 'COMPLETED');
    assert.equal(description.searchAttributes.OrderStatus?.[0], 'CANCELLED');
  });

  it('while its first send (a local activity) is at the provider: counts as after the send, carries on to FULFILLED, sent once', async () => {
    // Slow, but answered within the test client's 1 s timeout: the send succeeds.
    await env.sandbox.addFault({ kind: 'latency', latencyMs: 700, routes: ['mobile.send'], times: 1 });
    const ref = newRef('cancel-in-flight');
    const since = Date.now();
    const handle = await start(ref);
    while ((await sendsReceived(since)) === 0) await new Promise((r) => setTimeout(r, 20));
    await cancel(ref);

    const view = await handle.result();
    assert.equal(view.status, 'FULFILLED', events(view));
    assert.match(
      events(view),
      /Cancellation requested in Temporal at .*: (nothing more is sent|not cancelled, the provider may have the order)/,
    );
    assert.equal((await env.sandbox.sendsOf(ref)).accepted, 1);
  });

  it('after the send (the provider still HANDLING): carries on to the provider outcome, and the timeline says when it was asked', async () => {
    const ref = newRef('cancel-after-send');
    await env.sandbox.changeTopup(ref, { status: 'HANDLING' });
    const handle = await start(ref);
    await waitForView(handle, (v) => v.status === 'SUBMITTED');
    await cancel(ref);
    await waitForView(handle, (v) => v.timeline.some((e) => e.event.startsWith('Cancellation requested')));
    await env.sandbox.changeTopup(ref, { status: 'FULFILLED' });

    const view = await handle.result();
    assert.equal(view.status, 'FULFILLED', events(view));
    assert.match(
      events(view),
      /SUBMITTED: Cancellation requested in Temporal at .*: not cancelled, the provider may have the order; following it to its outcome/,
    );
    assert.equal((await env.sandbox.sendsOf(ref)).accepted, 1);
    assert.equal((await handle.describe()).status.name, 'COMPLETED');
  });

  it('in review: keeps waiting, the cancel request is in its timeline, and an operator decision still settles it', async () => {
    const ref = newRef('cancel-in-review');
    const first = await start(ref, sandboxSpecialNumbers.unknownError);
    await waitForView(first, (v) => v.status === 'NEEDS_REVIEW');
    const latest: WorkflowHandle = env.client.workflow.getHandle(orderWorkflowId(ref));
    // The order shows its review in a run of its own: cancel that one, as the button would.
    while ((await latest.describe()).runId === first.firstExecutionRunId) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await cancel(ref);
    await waitForView(latest, (v) => v.timeline.some((e) => e.event.startsWith('Cancellation requested')));
    assert.equal((await latest.describe()).status.name, 'RUNNING');

    const outcome = await latest
      .executeUpdate(decideReviewUpdate, {
        args: [{ decision: 'REFUNDED', operator: 'ops', note: 'provider confirmed no credit', force: true }],
      })
      .catch((err: unknown) => assert.fail(`update failed: ${String((err as Error).cause ?? err)}`));
    assert.equal(outcome.outcome, 'applied');
    const view = await latest.result();
    assert.equal(view.status, 'REFUNDED', events(view));
    assert.match(
      events(view),
      /NEEDS_REVIEW: Cancellation requested in Temporal at .*: not cancelled, the order waits for an operator's decision/,
    );
  });
});
