/**
 * Orders whose workflow run Temporal closes or replaces under them (docs/operators.md "What
 * Temporal's buttons do to an order"): terminated → the sweep's Schedule resumes them; reset to
 * the first workflow task → the order looks its ref up and never sends again. Real Temporal, a
 * real worker, the sandbox over HTTP with no unique refs (a second send would be a second top-up).
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { temporal as proto } from '@temporalio/proto';
import { ensureOrderSweepSchedule } from '../../src/temporal/sweep-schedule';
import { orderWorkflowId, type OrderView } from '../../contract/order';
import {
  giftCardRequest,
  mobileRequest,
  newRef,
  scaledTimings,
  startOrder,
  waitForView,
  type TestSandbox,
} from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

describe('an order whose workflow run is terminated or reset', () => {
  let sandbox: TestSandbox;
  let env: OrderStack<'main'>;
  const scheduleId = `order-sweep-test-${randomUUID()}`;

  before(async () => {
    env = await startOrderStack({ name: 'sweep-reset', workers: { main: {} } });
    sandbox = env.sandbox;
    // An hour apart: the test triggers each sweep itself.
    await ensureOrderSweepSchedule(env.client, {
      taskQueue: env.taskQueues.main,
      intervalMs: 60 * 60_000,
      scheduleId,
    });
    await sandbox.settings({ uniqueRefs: false });
  });
  afterEach(() => sandbox.clearFaults());
  after(async () => {
    await env.client.schedule.getHandle(scheduleId).delete();
    await sandbox.settings({ uniqueRefs: true });
    await env.stop();
  });

  const events = (view: OrderView) => view.timeline.map((e) => `${e.status}: ${e.event}`).join('\n');

  /** Triggers the sweep until the order's workflow has a run after `closedRunId`; returns its view. */
  async function sweptOrder(workflowId: string, closedRunId: string): Promise<OrderView> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      await env.client.schedule.getHandle(scheduleId).trigger();
      await new Promise((r) => setTimeout(r, 1_000));
      const latest = await env.client.workflow.getHandle(workflowId).describe();
      if (latest.runId !== closedRunId) return env.client.workflow.getHandle(workflowId).result();
      assert.ok(Date.now() < deadline, 'the sweep resumed the order');
    }
  }

  it('terminated after the send: the sweep resumes it, the new run looks it up and follows it to FULFILLED, sent once', async () => {
    const ref = newRef('terminated');
    await sandbox.changeTopup(ref, { status: 'HANDLING' });
    const handle = await startOrder(env.client, env.taskQueues.main, mobileRequest(ref), {
      timings: scaledTimings(),
    });
    await waitForView(handle, (v) => v.status === 'SUBMITTED');
    await handle.terminate('pressed Terminate');
    await sandbox.changeTopup(ref, { status: 'FULFILLED' });

    const view = await sweptOrder(handle.workflowId, handle.firstExecutionRunId);
    assert.equal(view.status, 'FULFILLED', events(view));
    assert.match(events(view), /Resumed by the sweep: the workflow run before closed as TERMINATED/);
    assert.deepEqual(await sandbox.sendsOf(ref), { ref, accepted: 1, attempts: 1 });
  });

  it('a gift card terminated after its placement: resumed with its orderId and polled to FULFILLED, placed once', async () => {
    const request = giftCardRequest(newRef('terminated-gift'));
    const placedBefore = (await sandbox.giftCardOrders()).length;
    const handle = await startOrder(env.client, env.taskQueues.main, request, {
      timings: scaledTimings({ firstCheckMs: 60_000 }),
    });
    const submitted = await waitForView(handle, (v) => v.status === 'SUBMITTED');
    assert.ok(submitted.providerReference);
    await handle.terminate('pressed Terminate');

    const view = await sweptOrder(handle.workflowId, handle.firstExecutionRunId);
    assert.equal(view.status, 'FULFILLED', events(view));
    assert.equal(view.providerReference, submitted.providerReference);
    assert.equal((await sandbox.giftCardOrders()).length, placedBefore + 1, 'placed once');
  });

  it('reset to its first workflow task once FULFILLED: the new run looks its ref up first and never sends again', async () => {
    const ref = newRef('reset');
    const handle = await startOrder(env.client, env.taskQueues.main, mobileRequest(ref), {
      timings: scaledTimings(),
    });
    assert.equal((await handle.result()).status, 'FULFILLED');
    const history = (await handle.fetchHistory()).events ?? [];
    const firstTaskCompleted = history.find(
      (e) => e.eventType === proto.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    );
    assert.ok(firstTaskCompleted?.eventId);

    const { runId } = await env.client.workflowService.resetWorkflowExecution({
      namespace: env.temporal.namespace,
      workflowExecution: { workflowId: orderWorkflowId(ref), runId: handle.firstExecutionRunId },
      reason: 'pressed Reset (first workflow task)',
      workflowTaskFinishEventId: firstTaskCompleted.eventId,
      requestId: randomUUID(),
    });
    const view = await env.client.workflow.getHandle(orderWorkflowId(ref), runId ?? undefined).result();
    assert.equal(view.status, 'FULFILLED', events(view));
    assert.match(events(view), /already had this order from an earlier attempt; not sent again/);
    assert.deepEqual(await sandbox.sendsOf(ref), { ref, accepted: 1, attempts: 1 });
  });
});
