/**
 * The reconciliation's reopening of a closed order (src/reconciliation/reconciliation.activities.ts
 * `recheckReconciled`) against a real Temporal dev server, real order workflows and the sandbox
 * over HTTP: what happens when the order changes between the re-check's read and its start of the
 * reopened run, and what the reopened run is listed as from its start. The activity runs in the
 * SDK's activity context (MockActivityEnvironment) so the test can hold its provider call.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import {
  createReconciliationActivities,
  type ReconciliationProvider,
} from '../../src/reconciliation/reconciliation.activities';
import { decideReviewUpdate, type OrderInput, type OrderView } from '../../contract/order';
import type { Mismatch, ReconciliationItem } from '../../contract/reconciliation';
import { mobileRequest, newRef, scaledTimings, startOrder, waitForView } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

describe('reopening a reconciled order', () => {
  let stack: OrderStack<'main'>;
  const run = randomUUID().slice(0, 6);
  const started: string[] = [];

  before(async () => {
    stack = await startOrderStack({ name: 'reconcile-reopen', workers: { main: {} } });
  });
  after(async () => {
    await Promise.allSettled(started.map((id) => stack.client.workflow.getHandle(id).terminate('test done')));
    await stack?.stop();
  });

  /** A FULFILLED order, closed, that the provider has refunded since: a mismatch to re-check. */
  async function refundedSince(): Promise<{ mismatch: Mismatch; ref: string }> {
    const request = mobileRequest(newRef(`reopen-${run}`));
    const handle = await startOrder(stack.client, stack.taskQueues.main, request, {
      timings: scaledTimings(),
    });
    started.push(handle.workflowId);
    const view = (await handle.result()) as OrderView;
    assert.equal(view.status, 'FULFILLED');
    await stack.sandbox.changeTopup(request.ref, { status: 'REFUNDED' });
    const { runId } = await handle.describe();
    return {
      ref: request.ref,
      mismatch: {
        kind: 'refund-of-fulfilled',
        workflowId: handle.workflowId,
        runId,
        ref: request.ref,
        orderType: 'mobile_topup',
        status: 'FULFILLED',
        rows: [],
      },
    };
  }

  /** The start event of the run the reconciliation started. */
  async function reopenedStart(workflowId: string) {
    for await (const execution of stack.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
      const history = await stack.client.workflow.getHandle(workflowId, execution.runId).fetchHistory();
      const start = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      const input = await decodeFromPayloadsAtIndex<OrderInput>(
        stack.client.options.loadedDataConverter,
        0,
        start?.input?.payloads,
      );
      // Its continue-as-new successors drop `reconciled`.
      if (input.reconciled) return start!;
    }
    throw new Error('no reopened run');
  }

  it('a decision settled the dispute while another re-check of the same order waited for the provider: that re-check does not reopen it again', async () => {
    const { mismatch } = await refundedSince();
    const handle = stack.client.workflow.getHandle(mismatch.workflowId);
    // The slow re-check's provider answers only when the test lets it (a slow provider, on cue).
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let asked!: () => void;
    const askedPromise = new Promise<void>((r) => (asked = r));
    const provider = stack.provider.client;
    const slowProvider = Object.create(provider) as ReconciliationProvider;
    slowProvider.checkMobileTopup = async (ref, options) => {
      asked();
      await released;
      return provider.checkMobileTopup(ref, options);
    };
    const slow = createReconciliationActivities(slowProvider, stack.client);
    const prompt = createReconciliationActivities(provider, stack.client);

    const slowCheck: Promise<ReconciliationItem> = new MockActivityEnvironment().run(slow.recheckReconciled, {
      mismatch,
      date: '2001-04-01',
    });
    await askedPromise;
    // Meanwhile another re-check reopens the order, and an operator settles the dispute.
    const first: ReconciliationItem = await new MockActivityEnvironment().run(prompt.recheckReconciled, {
      mismatch,
      date: '2001-04-01',
    });
    assert.equal(first.outcome, 'disputed', first.evidence);
    await waitForView(handle, (v) => v.status === 'DISPUTED');
    const settled = await handle.executeUpdate(decideReviewUpdate, {
      args: [{ decision: 'REFUNDED', operator: 'amina', note: 'refunded' }],
    });
    assert.equal(settled.view.status, 'REFUNDED');
    await handle.result();
    const settledRun = (await handle.describe()).runId;

    release();
    const late = await slowCheck;
    assert.equal(late.outcome, 'open', late.evidence);
    assert.match(late.evidence, /COMPLETED \(REFUNDED\)/);
    // The operator's settlement is the order's last word: no run was started on top of it.
    const latest = await handle.describe();
    assert.deepEqual([latest.runId, latest.status.name], [settledRun, 'COMPLETED']);
  });

  it('the reopened run is listed DISPUTED, not completed, from its start, with none of the closed run’s Temporal attributes', async () => {
    const { mismatch } = await refundedSince();
    const activities = createReconciliationActivities(stack.provider.client, stack.client);
    const item: ReconciliationItem = await new MockActivityEnvironment().run(activities.recheckReconciled, {
      mismatch,
      date: '2001-04-02',
    });
    assert.equal(item.outcome, 'disputed', item.evidence);
    await waitForView(stack.client.workflow.getHandle(mismatch.workflowId), (v) => v.status === 'DISPUTED');
    const start = await reopenedStart(mismatch.workflowId);
    const attributes = Object.fromEntries(
      Object.entries(start.searchAttributes?.indexedFields ?? {}).map(([name, payload]) => [
        name,
        JSON.parse(Buffer.from(payload.data!).toString()) as unknown,
      ]),
    );
    assert.equal(attributes.OrderStatus, 'DISPUTED', JSON.stringify(attributes));
    assert.equal(attributes.CompletedAt, undefined, JSON.stringify(attributes));
    assert.equal(attributes.TemporalChangeVersion, undefined, JSON.stringify(attributes));
    assert.equal(attributes.OrderType, 'mobile_topup');
    assert.ok(attributes.ReviewSince);
  });
});
