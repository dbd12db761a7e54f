/**
 * What a normal order costs in Temporal Cloud's billable actions (docs/contributors.md "Cost per
 * order"), counted from its history: real dev server, real worker, the sandbox at the spec's own
 * timings (PENDING 5 s, HANDLING 15 s more), so each order takes about 20 s.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { billableActions, pollHeartbeats } from '../../scripts/bench/billable-actions';
import { defaultOrderTimings, type OrderRequest } from '../../contract/order';
import type { PollOutcome } from '../../contract/activity-outcomes';
import {
  giftCardRequest,
  internetRequest,
  mobileRequest,
  newRef,
  startOrder,
  startTestSandbox,
  testProvider,
  firstTaskTimedOut,
  LEAN_ORDER_EVENTS,
  type TestSandbox,
} from '../helpers/orders';
import { pollCompletions } from '../helpers/histories';
import { startOrderTestWorkers, type OrderTestWorkers } from '../helpers/stack';

/** The target of issue 23 for a normal top-up. */
const MAX_ACTIONS = 5;

describe('billable actions of a normal order at the spec timings', { concurrency: true }, () => {
  let sandbox: TestSandbox;
  let provider: ReturnType<typeof testProvider>;
  let env: OrderTestWorkers<'sandbox'>;

  before(async () => {
    sandbox = await startTestSandbox(1);
    provider = testProvider(sandbox.url);
    env = await startOrderTestWorkers({ sandbox: provider.client });
  });
  after(async () => {
    await env.stop();
    await provider.close();
    await sandbox.close();
  });

  async function orderCost(request: OrderRequest) {
    const handle = await startOrder(env.client, env.taskQueues.sandbox, request, {
      timings: defaultOrderTimings[request.type],
    });
    const view = await handle.result();
    const events = (await handle.fetchHistory()).events ?? [];
    // The polling activity's result: what the provider showed at each check.
    const polled = pollCompletions(events);
    assert.equal(polled.length, 1, 'one polling activity');
    const { observed } = await decodeFromPayloadsAtIndex<PollOutcome<{ status: string }>>(
      env.client.options.loadedDataConverter,
      0,
      polled[0]?.result?.payloads,
    );
    // A starved worker's order (its first task timed out) takes the recovery path: not what is costed here.
    if (firstTaskTimedOut(events)) return { view, observed };
    const heartbeats = await pollHeartbeats(events, env.client.options.loadedDataConverter);
    // The polling is the order's only activity on the task queue: the send is a local one.
    const completed = events.flatMap((e) => e.activityTaskCompletedEventAttributes ?? []);
    assert.equal(completed.length, 1);
    // The lean lifecycle's events (and the settlement memo's update for a type whose answer gives the debit).
    assert.ok(events.length <= LEAN_ORDER_EVENTS, `history events: ${events.length}`);
    return { view, actions: billableActions(events, { heartbeats }), observed, events: events.length };
  }

  for (const [label, request] of [
    ['mobile top-up', () => mobileRequest(newRef('cost-mobile'))],
    ['internet top-up', () => internetRequest(newRef('cost-internet'))],
    ['gift card', () => giftCardRequest(newRef('cost-gift'), 1)],
  ] as const) {
    it(`a normal ${label} costs at most ${MAX_ACTIONS} actions, and its history keeps every status the provider reported`, async (t) => {
      const { view, actions, observed, events } = await orderCost(request());
      assert.equal(view.status, 'FULFILLED');
      if (actions) {
        assert.ok(actions.total <= MAX_ACTIONS, `actions: ${JSON.stringify(actions)}`);
        t.diagnostic(`${label}: ${events} history events, ${actions.total} actions`);
      } else t.diagnostic('the first workflow task timed out: the recovery path, not costed');
      // The open status the provider showed at the first check, then the final one.
      assert.deepEqual(
        observed.map((o) => o.answer).slice(-1),
        ['FULFILLED'],
        `observed: ${JSON.stringify(observed)}`,
      );
      assert.ok(observed.length >= 2, `observed: ${JSON.stringify(observed)}`);
      assert.match(view.timeline.map((e) => e.status).join(' '), /^ACCEPTED SUBMITTED PROCESSING FULFILLED$/);
    });
  }
});
