/**
 * Orders whose workflow run Temporal closes or replaces under them (docs/operators.md "What
 * Temporal's buttons do to an order"): terminated → the sweep's Schedule resumes them; reset to
 * the first workflow task → the order looks its ref up and never sends again. Real Temporal, a
 * real worker, the sandbox over HTTP with no unique refs (a second send would be a second top-up).
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { temporal as proto } from '@temporalio/proto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createSweepActivities } from '../../src/orders/sweep.activities';
import { ensureOrderSweepSchedule } from '../../src/orders/sweep.schedule';
import { orderWorkflowId, searchAttributeDefinitions, type OrderView } from '../../contract/order';
import { giftCardRequest, mobileRequest, newRef, scaledTimings, waitForView } from '../helpers/orders';
import { useFaultStack } from '../helpers/stack';

describe('an order whose workflow run is terminated or reset', () => {
  const scheduleId = `order-sweep-test-${randomUUID()}`;
  const env = useFaultStack({ name: 'sweep-reset', workers: { main: {} } }, async (stack) => {
    await stack.client.schedule.getHandle(scheduleId).delete();
    await stack.sandbox.settings({ uniqueRefs: true });
  });

  before(async () => {
    // An hour apart: the test triggers each sweep itself.
    await ensureOrderSweepSchedule(env.client, {
      taskQueue: env.taskQueues.main,
      intervalMs: 60 * 60_000,
      scheduleId,
    });
    await env.sandbox.settings({ uniqueRefs: false });
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
    await env.sandbox.changeTopup(ref, { status: 'HANDLING' });
    const handle = await env.start(mobileRequest(ref));
    await waitForView(handle, (v) => v.status === 'SUBMITTED');
    await handle.terminate('pressed Terminate');
    await env.sandbox.changeTopup(ref, { status: 'FULFILLED' });

    const view = await sweptOrder(handle.workflowId, handle.firstExecutionRunId);
    assert.equal(view.status, 'FULFILLED', events(view));
    assert.match(events(view), /Resumed by the sweep: the workflow run before closed as TERMINATED/);
    assert.deepEqual(await env.sandbox.sendsOf(ref), { ref, accepted: 1, attempts: 1 });
  });

  it('a gift card terminated after its placement: resumed with its orderId and polled to FULFILLED, placed once', async () => {
    const request = giftCardRequest(newRef('terminated-gift'));
    const placedBefore = (await env.sandbox.giftCardOrders()).length;
    const handle = await env.start(request, {
      timings: scaledTimings({ firstCheckMs: 60_000 }),
    });
    const submitted = await waitForView(handle, (v) => v.status === 'SUBMITTED');
    assert.ok(submitted.providerReference);
    await handle.terminate('pressed Terminate');

    const view = await sweptOrder(handle.workflowId, handle.firstExecutionRunId);
    assert.equal(view.status, 'FULFILLED', events(view));
    assert.equal(view.providerReference, submitted.providerReference);
    assert.equal((await env.sandbox.giftCardOrders()).length, placedBefore + 1, 'placed once');
  });

  it('reset to its first workflow task once FULFILLED: the new run looks its ref up first and never sends again', async () => {
    const ref = newRef('reset');
    const handle = await env.start(mobileRequest(ref));
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
    assert.deepEqual(await env.sandbox.sendsOf(ref), { ref, accepted: 1, attempts: 1 });
  });

  it('two sweeps at once on one terminated order: it is resumed once, neither sweep fails, and the new run carries only the service’s search attributes', async () => {
    const ref = newRef('two-sweeps');
    await env.sandbox.changeTopup(ref, { status: 'HANDLING' });
    const handle = await env.start(mobileRequest(ref));
    await waitForView(handle, (v) => v.status === 'SUBMITTED');
    await handle.terminate('pressed Terminate');
    // Visibility lists the closed run as stranded a moment after the terminate.
    const sweep = createSweepActivities(env.client);
    const sweepOnce = () =>
      new MockActivityEnvironment().run(() => sweep.resumeStrandedOrders(env.taskQueues.main));
    const mine = (r: { resumed: string[] }) => r.resumed.filter((id) => id === handle.workflowId).length;
    for (const deadline = Date.now() + 30_000; ;) {
      // Both read the same closed run before either starts the new one (a second worker's sweep, a manual trigger).
      const results = await Promise.allSettled([sweepOnce(), sweepOnce()]);
      for (const r of results)
        assert.equal(r.status, 'fulfilled', String((r as PromiseRejectedResult).reason));
      const resumed = results.map((r) => mine((r as PromiseFulfilledResult<{ resumed: string[] }>).value));
      if (resumed[0]! + resumed[1]! > 0) {
        assert.deepEqual(resumed.sort(), [0, 1], 'resumed by exactly one sweep');
        break;
      }
      assert.ok(Date.now() < deadline, 'the sweeps saw the terminated order');
      await new Promise((r) => setTimeout(r, 500));
    }
    const runs: string[] = [];
    for await (const e of env.client.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` }))
      runs.push(e.runId);
    assert.equal(runs.length, 2, 'the terminated run and one resumed run');

    const resumedRun = await env.client.workflow.getHandle(handle.workflowId).describe();
    const start = (await env.client.workflow.getHandle(handle.workflowId, resumedRun.runId).fetchHistory())
      .events?.[0]?.workflowExecutionStartedEventAttributes;
    const startedWith = Object.keys(start?.searchAttributes?.indexedFields ?? {});
    const closedRun = await env.client.workflow
      .getHandle(handle.workflowId, handle.firstExecutionRunId)
      .describe();
    assert.ok(
      closedRun.typedSearchAttributes
        .getAll()
        .some((p) => !Object.hasOwn(searchAttributeDefinitions, p.key.name)),
      `the closed run carries one of Temporal's own: ${closedRun.typedSearchAttributes.getAll().map((p) => p.key.name)}`,
    );
    assert.deepEqual(
      startedWith.filter((name) => !Object.hasOwn(searchAttributeDefinitions, name)),
      [],
      `started with ${startedWith}`,
    );
    await env.sandbox.changeTopup(ref, { status: 'FULFILLED' });
    assert.equal((await env.client.workflow.getHandle(handle.workflowId).result()).status, 'FULFILLED');
    assert.deepEqual(await env.sandbox.sendsOf(ref), { ref, accepted: 1, attempts: 1 });
  });
});
