/**
 * A gift-card placement whose answer was lost, settled from the provider's records
 * (workflows/order/records.ts) against the sandbox over HTTP: found alone in the gift-card list →
 * carried on with and FULFILLED under that provider order id; two of our orders of the same item
 * losing their answers together → both in review with the candidates; never committed → placed
 * again once the list has not shown it twice. Fault rules apply to the whole sandbox, so the tests
 * run one after another, each with a quantity of its own (the item the search matches on).
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { placementReviewReasons } from '../../contract/placement-records';
import {
  giftCardRequest,
  newRef,
  scaledTimings,
  startOrder,
  waitForView,
  type TestSandbox,
} from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

describe("a lost gift-card placement, looked for in the provider's records", () => {
  let sandbox: TestSandbox;
  let env: OrderStack<'main'>;

  before(async () => {
    env = await startOrderStack({ name: 'placement-records', workers: { main: {} } });
    sandbox = env.sandbox;
  });
  afterEach(async () => {
    await sandbox.clearFaults();
  });
  after(async () => {
    await env.stop();
  });

  const start = (request: ReturnType<typeof giftCardRequest>) =>
    startOrder(env.client, env.taskQueues.main, request, { timings: scaledTimings() });
  const placedFor = async (workflowId: string) =>
    (await sandbox.giftCardOrders()).filter((o) => o.clientRef === workflowId);

  it('the provider committed the placement and its answer was lost: the one order in the list is adopted, FULFILLED with its cards', async () => {
    await sandbox.addFault({ kind: 'drop_after_commit', routes: ['giftcards.placeOrder'], times: 1 });
    const handle = await start(giftCardRequest(newRef('records-found'), 2));
    const view = await waitForView(
      handle,
      (v) => !['ACCEPTED', 'SUBMITTED', 'PROCESSING'].includes(v.status),
      60_000,
    );

    assert.equal(view.status, 'FULFILLED', `${view.review?.reason}: ${view.review?.evidence}`);
    const placed = await placedFor(handle.workflowId);
    assert.equal(placed.length, 1, 'placed once');
    assert.equal(view.providerReference, placed[0]!.orderId);
    assert.equal(view.result?.cards?.length, 2);
    assert.ok(view.timeline.some((e) => e.event.includes("Found in the provider's gift-card list")));
  });

  it('two of our orders of the same item lose their answers together: both go to review with both candidates, neither guesses', async () => {
    await sandbox.addFault({ kind: 'drop_after_commit', routes: ['giftcards.placeOrder'], times: 2 });
    const handles = await Promise.all([
      start(giftCardRequest(newRef('records-twin-a'), 3)),
      start(giftCardRequest(newRef('records-twin-b'), 3)),
    ]);
    const views = await Promise.all(
      handles.map((h) => waitForView(h, (v) => v.status === 'NEEDS_REVIEW', 60_000)),
    );
    const placed = (await Promise.all(handles.map((h) => placedFor(h.workflowId)))).flat();

    assert.equal(placed.length, 2, 'each placed once');
    for (const view of views) {
      assert.equal(view.review?.reason, placementReviewReasons.ambiguous);
      assert.equal(view.providerReference, undefined);
      for (const { orderId } of placed)
        assert.ok(view.review?.evidence?.includes(orderId), view.review?.evidence);
      assert.doesNotMatch(view.review?.evidence ?? '', /SANDBOX-CARD|"value"/);
    }
    await Promise.all(handles.map((h) => h.terminate('test over')));
  });

  it('the placement failed before the provider committed it: not in the list twice, so it is placed again, once, and FULFILLED', async () => {
    await sandbox.addFault({ kind: 'error', status: 502, routes: ['giftcards.placeOrder'], times: 1 });
    const handle = await start(giftCardRequest(newRef('records-none'), 1));
    const view = await handle.result();

    assert.equal(view.status, 'FULFILLED', `${view.review?.reason}: ${view.review?.evidence}`);
    const placed = await placedFor(handle.workflowId);
    assert.equal(placed.length, 1, 'placed once in all');
    assert.equal(view.providerReference, placed[0]!.orderId);
    assert.ok(view.timeline.some((e) => e.event.includes('never placed; placing again')));
  });
});
