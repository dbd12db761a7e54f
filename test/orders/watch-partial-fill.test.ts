/**
 * The watch after a decision meets a partial fill (issue 25: PARTIALLY_FILLED is a final outcome of
 * its own): a gift-card order decided REFUNDED while the provider still processed it, then filled
 * in part — the sandbox's outcome change — reopens as DISPUTED with what was delivered, and an
 * operator's RECHECK settles it PARTIALLY_FULFILLED with the delivered cards. A real Temporal dev
 * server, a real worker and the sandbox over HTTP.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decideReviewUpdate, type ReviewDecision } from '../../contract/order';
import { giftCardRequest, newRef, scaledTimings, waitForView } from '../helpers/orders';
import { useFaultStack } from '../helpers/stack';

describe('the watch after a decision, when the provider then fills the gift-card order in part', () => {
  const stack = useFaultStack({ name: 'partial-fill', workers: { main: {} } });

  before(async () => {
    // Every placement's answer is lost and the provider's gift-card list lags far behind (so the
    // placement is not found there, src/orders/lifecycle/records.workflow.ts): the order goes to review without
    // the provider's orderId.
    await stack.sandbox.addFault({ kind: 'drop_after_commit', routes: ['giftcards.placeOrder'] });
    await stack.sandbox.addFault({ kind: 'lagging_reads', lagMs: 120_000, routes: ['giftcards.list'] });
  });

  it('REFUNDED forced while HANDLING, then PARTIALLY_FILLED: DISPUTED with what was delivered; neither decision settles it, a RECHECK does (PARTIALLY_FULFILLED, the delivered cards)', async () => {
    const handle = await stack.start(giftCardRequest(newRef('partial'), 4), {
      timings: scaledTimings({ reviewWatchMs: 30_000, reviewWatchFirstCheckMs: 300 }),
    });
    await waitForView(handle, (v) => v.status === 'NEEDS_REVIEW', 30_000);
    const [placed] = await stack.sandbox.giftCardOrders();
    assert.ok(placed, 'the sandbox placed the order');
    const { orderId } = placed;
    await stack.sandbox.changeGiftCardOrder(orderId, { status: 'HANDLING' });
    const decide = (decision: ReviewDecision) =>
      handle.executeUpdate(decideReviewUpdate, { args: [decision] });

    const forced = await decide({
      decision: 'REFUNDED',
      operator: 'amina',
      note: 'the provider portal shows it cancelled',
      orderId,
      force: true,
    });
    assert.equal(forced.outcome, 'applied');
    assert.equal(forced.view.status, 'REFUNDED');
    assert.ok(forced.view.watch?.until, 'watched');

    await stack.sandbox.changeGiftCardOrder(orderId, { status: 'PARTIALLY_FILLED' });
    const disputed = await waitForView(handle, (v) => v.status === 'DISPUTED', 30_000);
    assert.deepEqual(
      [disputed.dispute?.decision, disputed.dispute?.providerStatus],
      ['REFUNDED', 'PARTIALLY_FILLED'],
    );
    assert.equal(disputed.watch?.ended?.outcome, 'disputed');
    assert.equal(disputed.completedAt, undefined, 'no longer final');
    assert.match(
      disputed.review?.reason ?? '',
      /reports PARTIALLY_FILLED after the order was resolved REFUNDED/,
    );
    assert.equal(
      disputed.review?.evidence,
      'provider status PARTIALLY_FILLED: 2 of 4 cards delivered, 2 refunded; RECHECK settles the order PARTIALLY_FULFILLED',
    );

    for (const decision of ['FULFILLED', 'REFUNDED'] as const) {
      const refused = await decide({ decision, operator: 'amina', note: 'x' });
      assert.equal(refused.outcome, 'refused');
      assert.match(refused.refusal?.reason ?? '', /PARTIALLY_FILLED: part of the order was delivered/);
    }
    const rechecked = await decide({ decision: 'RECHECK', operator: 'amina', note: 'part was delivered' });
    assert.equal(rechecked.outcome, 'rechecked');
    const final = await handle.result();
    assert.equal(final.status, 'PARTIALLY_FULFILLED');
    assert.equal(final.result?.cards?.length, 2);
    assert.deepEqual(
      [
        final.result?.partial?.quantity,
        final.result?.partial?.fulfilledQuantity,
        final.result?.partial?.refundedQuantity,
      ],
      [4, 2, 2],
    );
    assert.equal(
      final.dispute?.providerStatus,
      'PARTIALLY_FILLED',
      'the view keeps the dispute it came out of',
    );
  });
});
