/**
 * What Temporal lets anyone do to an order that is HELD for the account (docs/operators.md "What
 * Temporal's buttons do to an order", "Orders on hold"): cancel, terminate, reset, and an operator
 * decision sent to it. The balance is emptied through the sandbox's admin surface, so nothing can
 * be sent; each test then tops it up and checks that nothing was lost, nothing sent twice, and the
 * back office heard of the order's end. Real Temporal, the order and account workflows, the
 * sandbox over HTTP, events delivered to a real receiver. Tests share the account: they run in order.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { temporal as proto } from '@temporalio/proto';
import type { SandboxAdmin } from '../../src/sandbox/admin-client';
import type { RunningReceiver } from '../../src/webhooks/receiver';
import { ensureOrderSweepSchedule } from '../../src/orders/sweep.schedule';
import { orderWorkflowId, resolveReviewSignal, type OrderView } from '../../contract/order';
import { mobileRequest, scaledTimings, refsPrefixed } from '../helpers/orders';
import { clientOrders, eventually } from '../helpers/webhooks';
import type { OrderStack } from '../helpers/stack';
import { startHookedClient, type HookedClientStack } from '../helpers/hooked-client';

const KEY = 'test-key-held-actions';
const CLIENT = 'heldops';
const newRef = refsPrefixed('HELDOPS');
const ACCOUNT_CHECK_MS = 500;

describe('operator actions on a HELD order', { timeout: 300_000 }, () => {
  const scheduleId = `order-sweep-held-${randomUUID()}`;
  let stack: OrderStack<'orders'>;
  let receiver: RunningReceiver;
  let hooked: HookedClientStack;
  let admin: SandboxAdmin;

  before(async () => {
    ({ stack, receiver, admin } = hooked = await startHookedClient({
      name: 'held-actions',
      id: CLIENT,
      key: KEY,
      account: { checkMs: ACCOUNT_CHECK_MS },
      timingsFor: () => scaledTimings(),
    }));
    // An hour apart: the test triggers the sweep itself.
    await ensureOrderSweepSchedule(stack.client, {
      taskQueue: stack.taskQueues.orders,
      intervalMs: 60 * 60_000,
      scheduleId,
    });
  });
  afterEach(() => admin.settings({ balance: 1_000_000 }));
  after(async () => {
    await stack?.client.schedule.getHandle(scheduleId).delete();
    await hooked?.stop();
  });

  const { call, viewOf, until, eventsOf } = clientOrders(
    () => stack,
    KEY,
    () => receiver,
  );
  const handleOf = (ref: string) => stack.client.workflow.getHandle(orderWorkflowId(ref, CLIENT));
  const events = (view: OrderView) => view.timeline.map((e) => `${e.status}: ${e.event}`).join('\n');
  const sendsOf = async (ref: string) => stack.sandbox.sendsOf((await viewOf(ref)).providerRef!);

  /** An order submitted while the balance is 0: HELD, nothing sent. */
  async function heldOrder(label: string): Promise<string> {
    await admin.settings({ balance: 0 });
    const ref = newRef(label);
    const res = await call('POST', '/v1/orders', mobileRequest(ref));
    assert.equal(res.status, 201, res.text);
    const held = await until(ref, (v) => v.status === 'HELD', 'HELD');
    assert.equal(held.hold?.reason, 'balance');
    assert.equal((await sendsOf(ref)).accepted, 0, 'nothing sent while held');
    return ref;
  }

  /** Tops the balance up: the held order is then sent once, FULFILLED, and its client told. */
  async function topUpAndExpectSentOnce(ref: string): Promise<void> {
    await admin.settings({ balance: 10_000 });
    const done = await until(ref, (v) => v.status === 'FULFILLED', 'FULFILLED');
    assert.equal((await sendsOf(ref)).accepted, 1, `sent once:\n${events(done)}`);
    await eventually(
      () => eventsOf(ref),
      (e) => e.includes('order.fulfilled'),
      'order.fulfilled delivered',
    );
  }

  it('a decision sent to a HELD order is answered at once: 409 not in review through the API, recorded and ignored as a signal; the order stays HELD', async () => {
    const ref = await heldOrder('decision');
    const res = await call<{ type: string; detail: string }>('POST', `/v1/orders/${ref}/review`, {
      decision: 'REFUNDED',
      note: 'customer asks for a refund',
    });
    assert.equal(res.status, 409, res.text);
    assert.equal(res.body.type, '/problems/order-not-in-review');
    assert.match(res.body.detail, /is HELD; only an order in NEEDS_REVIEW or DISPUTED takes a decision/);

    await handleOf(ref).signal(resolveReviewSignal, { decision: 'REFUNDED', operator: 'amina', note: 'x' });
    const view = await until(
      ref,
      (v) => v.timeline.some((e) => e.event.includes('ignored: the order is not in review')),
      'the signal recorded',
    );
    assert.equal(view.status, 'HELD');
    await admin.settings({ balance: 10_000 });
    await until(ref, (v) => v.status === 'FULFILLED', 'FULFILLED once the balance covers it');
    assert.equal((await sendsOf(ref)).accepted, 1, 'sent once');
  });

  it('cancelled (Temporal cancel request): ends CANCELLED, nothing sent, order.cancelled delivered; topped up later, still nothing sent', async () => {
    const ref = await heldOrder('cancel');
    await handleOf(ref).cancel();
    const view = await until(ref, (v) => v.status === 'CANCELLED', 'CANCELLED');
    assert.match(
      events(view),
      /HELD: Cancellation requested in Temporal at .*: held, nothing was sent; it ends CANCELLED/,
    );
    assert.equal((await handleOf(ref).describe()).status.name, 'COMPLETED', 'the workflow ends normally');
    await eventually(
      () => eventsOf(ref),
      (e) => e.includes('order.cancelled'),
      'order.cancelled delivered',
    );
    await admin.settings({ balance: 10_000 });
    await sleep(4 * ACCOUNT_CHECK_MS);
    assert.equal((await sendsOf(ref)).accepted, 0, 'never sent');
    assert.equal((await viewOf(ref)).status, 'CANCELLED');
  });

  it('terminated: the sweep resumes it HELD, nothing sent; topped up, it is sent once and FULFILLED, and the back office is told', async () => {
    const ref = await heldOrder('terminate');
    const handle = handleOf(ref);
    const { runId } = await handle.describe();
    await handle.terminate('pressed Terminate');
    const deadline = Date.now() + 30_000;
    while ((await handle.describe()).runId === runId) {
      assert.ok(Date.now() < deadline, 'the sweep resumed the order');
      await stack.client.schedule.getHandle(scheduleId).trigger();
      await sleep(1_000);
    }
    const resumed = await until(
      ref,
      (v) => v.status === 'HELD' && v.timeline.some((e) => e.event.startsWith('Resumed by the sweep')),
      'HELD again in the resumed run',
    );
    assert.match(events(resumed), /Resumed by the sweep: the workflow run before closed as TERMINATED/);
    assert.equal((await sendsOf(ref)).accepted, 0, 'still nothing sent');

    await topUpAndExpectSentOnce(ref);
  });

  it('reset to its first workflow task: the new run is HELD again, nothing sent; topped up, it is sent once and FULFILLED', async () => {
    const ref = await heldOrder('reset');
    const handle = handleOf(ref);
    const { runId } = await handle.describe();
    const history = (await handle.fetchHistory()).events ?? [];
    const firstTaskCompleted = history.find(
      (e) => e.eventType === proto.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    );
    assert.ok(firstTaskCompleted?.eventId);
    const reset = await stack.client.workflowService.resetWorkflowExecution({
      namespace: stack.client.options.namespace,
      workflowExecution: { workflowId: handle.workflowId, runId },
      reason: 'pressed Reset (first workflow task)',
      workflowTaskFinishEventId: firstTaskCompleted.eventId,
      requestId: randomUUID(),
    });
    assert.ok(reset.runId && reset.runId !== runId);
    const again = await until(
      ref,
      (v) => v.status === 'HELD' && v.workflowStatus === 'RUNNING',
      'HELD in the reset run',
    );
    assert.equal((await handle.describe()).runId, reset.runId);
    assert.equal((await sendsOf(ref)).accepted, 0, `nothing sent:\n${events(again)}`);

    await topUpAndExpectSentOnce(ref);
  });
});
