/**
 * A gift-card placement whose answer was lost, settled from the provider's records
 * (src/orders/lifecycle/records.workflow.ts) against the sandbox over HTTP: found alone in the gift-card list →
 * carried on with and FULFILLED under that provider order id; two of our orders of the same item
 * losing their answers together → both in review with the candidates; not shown by the list
 * twice (committed behind a lagging list, or never) → review, never placed again. Fault rules apply to the whole sandbox, so the tests
 * run one after another, each with a quantity of its own (the item the search matches on).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ProviderOrderIdAttribute } from '../../contract/order';
import { FIGURES_MEMO_KEY } from '../../src/orders/gift-card-records.activities';
import { FIGURES_MEMO } from '../../src/orders/figures';
import { placementReviewReasons } from '../../contract/placement-records';
import { giftCardRequest, newRef, scaledTimings, waitForView } from '../helpers/orders';
import { useFaultStack } from '../helpers/stack';

describe("a lost gift-card placement, looked for in the provider's records", () => {
  const env = useFaultStack({ name: 'placement-records', workers: { main: {} } });

  it("reads other orders' items from the memo key intake writes", () => {
    assert.equal(FIGURES_MEMO_KEY, FIGURES_MEMO);
  });

  const start = (
    request: ReturnType<typeof giftCardRequest>,
    timings: Parameters<typeof scaledTimings>[0] = {},
  ) => env.start(request, { timings: scaledTimings(timings) });
  const placedFor = async (workflowId: string) =>
    (await env.sandbox.giftCardOrders()).filter((o) => o.clientRef === workflowId);

  /**
   * The fault that kept the order in review ends: a review recheck finds the placement in the list
   * and settles the order FULFILLED with it, placed once.
   */
  async function settledByRecheck(handle: Parameters<typeof waitForView>[0]): Promise<void> {
    await env.sandbox.clearFaults();
    const view = await waitForView(handle, (v) => v.status !== 'NEEDS_REVIEW', 60_000);
    assert.equal(view.status, 'FULFILLED', `${view.review?.reason}: ${view.review?.evidence}`);
    const placed = await placedFor(handle.workflowId);
    assert.equal(placed.length, 1, 'placed once');
    assert.equal(view.providerReference, placed[0]!.orderId);
    assert.ok(
      view.timeline.some((e) => e.event.startsWith("Recheck: found in the provider's gift-card list")),
    );
  }

  it('the provider committed the placement and its answer was lost: the one order in the list is adopted, FULFILLED with its cards', async () => {
    await env.sandbox.addFault({ kind: 'drop_after_commit', routes: ['giftcards.placeOrder'], times: 1 });
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

  it('another order of ours placed the same item just before and knows its order id: that one is claimed (ProviderOrderId), ours is adopted', async () => {
    const other = await start(giftCardRequest(newRef('records-claimed-other'), 5));
    await waitForView(other, (v) => v.providerReference !== undefined, 30_000);
    await env.sandbox.addFault({ kind: 'drop_after_commit', routes: ['giftcards.placeOrder'], times: 1 });
    const handle = await start(giftCardRequest(newRef('records-claimed'), 5));
    const view = await waitForView(
      handle,
      (v) => !['ACCEPTED', 'SUBMITTED', 'PROCESSING'].includes(v.status),
      60_000,
    );

    const [ours] = await placedFor(handle.workflowId);
    const [theirs] = await placedFor(other.workflowId);
    assert.ok(ours && theirs);
    // The other's placement is inside our window (it starts 2 s before ours): a candidate there.
    assert.ok(Date.parse(ours.placedAt) - Date.parse(theirs.placedAt) < 2_000, 'both in the window');
    assert.equal(view.status, 'FULFILLED', `${view.review?.reason}: ${view.review?.evidence}`);
    assert.equal(view.providerReference, ours.orderId);
    // The claim is published for visibility, in the search attribute the search reads.
    const published = (await other.describe()).typedSearchAttributes.get(ProviderOrderIdAttribute);
    assert.equal(published, theirs.orderId);
  });

  it('two of our orders of the same item lose their answers together: both go to review with both candidates, neither guesses', async () => {
    await env.sandbox.addFault({ kind: 'drop_after_commit', routes: ['giftcards.placeOrder'], times: 2 });
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

  it("the list cannot be read until the deadline: review; the review's recheck searches it again once it can, finds the placement and settles the order", async () => {
    await env.sandbox.addFault({ kind: 'drop_after_commit', routes: ['giftcards.placeOrder'], times: 1 });
    await env.sandbox.addFault({ kind: 'error', status: 503, routes: ['giftcards.list'] });
    const handle = await start(giftCardRequest(newRef('records-recheck'), 6), {
      deadlineMs: 5_000,
      reviewRecheckMs: 2_000,
    });
    const inReview = await waitForView(handle, (v) => v.status === 'NEEDS_REVIEW', 60_000);
    assert.match(inReview.review?.evidence ?? '', /could not be searched/);
    await settledByRecheck(handle);
  });

  it("the placement committed but the list lags behind it: not in the list twice, so review with when it was read, never placed again; the review's recheck searches again once the list shows it and settles the order", async () => {
    await env.sandbox.addFault({ kind: 'drop_after_commit', routes: ['giftcards.placeOrder'], times: 1 });
    await env.sandbox.addFault({ kind: 'lagging_reads', lagMs: 120_000, routes: ['giftcards.list'] });
    const handle = await start(giftCardRequest(newRef('records-lagging'), 4), { reviewRecheckMs: 2_000 });
    const inReview = await waitForView(handle, (v) => v.status === 'NEEDS_REVIEW', 60_000);

    assert.equal(inReview.review?.reason, placementReviewReasons.notFound, inReview.review?.evidence);
    assert.match(
      inReview.review?.evidence ?? '',
      /not in the provider's gift-card list between \S+ and \S+, read at \S+ and \S+/,
    );
    assert.equal(inReview.providerReference, undefined);
    // A recheck while the list still lags: noted, nothing placed.
    const stillLagging = await waitForView(
      handle,
      (v) => v.timeline.some((e) => e.event.startsWith("Recheck: not in the provider's gift-card list")),
      30_000,
    );
    assert.equal(stillLagging.status, 'NEEDS_REVIEW');
    assert.equal((await placedFor(handle.workflowId)).length, 1, 'placed once, never again');

    await settledByRecheck(handle);
  });

  it('the placement failed before the provider committed it: not in the list twice, so review; not placed again, not FAILED', async () => {
    await env.sandbox.addFault({ kind: 'error', status: 502, routes: ['giftcards.placeOrder'], times: 1 });
    const handle = await start(giftCardRequest(newRef('records-none'), 1));
    const view = await waitForView(handle, (v) => v.status === 'NEEDS_REVIEW', 60_000);

    assert.equal(view.review?.reason, placementReviewReasons.notFound, view.review?.evidence);
    assert.equal((await placedFor(handle.workflowId)).length, 0, 'nothing placed, nothing placed again');
    await handle.terminate('test over');
  });
});
