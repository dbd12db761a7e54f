/**
 * Every sandbox outcome end to end: real Temporal dev server, real worker, real sandbox over HTTP
 * (100× faster than the spec), orders started the way the intake API starts them.
 */
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { WorkflowHandle } from '@temporalio/client';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { HANDLING_MS, PENDING_MS, sandboxRefundMessages } from '../../src/sandbox/simulation';
import {
  CompletedAtAttribute,
  defaultOrderTimings,
  OrderClientAttribute,
  OrderStatusAttribute,
  resolveReviewSignal,
  type OrderView,
} from '../../contract/order';
import {
  countingProvider,
  giftCardRequest,
  historyLength,
  internetRequest,
  mobileRequest,
  newRef,
  NORMAL_NUMBER,
  scaledTimings,
  startOrder,
  startTestSandbox,
  TEST_ORDER_CLIENT,
  testProvider,
  waitForView,
  firstTaskTimedOut,
  type TestSandbox,
  mobileResultBesidesDebit,
  LEAN_ORDER_EVENTS,
} from '../helpers/orders';
import { startOrderTestWorkers, type OrderTestWorkers } from '../helpers/stack';

/**
 * The checks a normal order may make: one per pace interval from the send until the sandbox settles
 * it (its spec timeline, scaled as the pace is), and one more for a check that lands just before.
 */
const MAX_CHECKS =
  Math.ceil((PENDING_MS + HANDLING_MS) / defaultOrderTimings.mobile_topup.pollIntervalMs) + 1;

describe('order workflows against the sandbox', { concurrency: true }, () => {
  let sandbox: TestSandbox;
  let provider: ReturnType<typeof testProvider>;
  let counted: ReturnType<typeof countingProvider<ReturnType<typeof testProvider>['client']>>;
  // A second sandbox so slow (PENDING for 5,000 s) that its orders never finish.
  let slowSandbox: TestSandbox;
  let slowProvider: ReturnType<typeof testProvider>;
  let slowCounted: typeof counted;
  let env: OrderTestWorkers<'sandbox' | 'neverFinishing' | 'queueSends'>;

  before(async () => {
    [sandbox, slowSandbox] = await Promise.all([startTestSandbox(), startTestSandbox(1_000)]);
    provider = testProvider(sandbox.url);
    slowProvider = testProvider(slowSandbox.url);
    counted = countingProvider(provider.client);
    slowCounted = countingProvider(slowProvider.client);
    env = await startOrderTestWorkers(
      { sandbox: counted.provider, neverFinishing: slowCounted.provider, queueSends: counted.provider },
      { queueSendsOnly: ['queueSends'] },
    );
  });
  after(async () => {
    await env.stop();
    await Promise.all([provider.close(), slowProvider.close()]);
    await Promise.all([sandbox.close(), slowSandbox.close()]);
  });

  const start = (request: Parameters<typeof startOrder>[2], extra: Parameters<typeof startOrder>[3] = {}) =>
    startOrder(env.client, env.taskQueues.sandbox, request, { timings: scaledTimings(), ...extra });

  async function statusAttribute(handle: WorkflowHandle): Promise<string | undefined> {
    return (await handle.describe()).typedSearchAttributes.get(OrderStatusAttribute);
  }

  /**
   * The lean lifecycle's budget (checks and history events), unless the order's first workflow task
   * timed out on a starved worker: that order took the recovery path (firstTaskTimedOut).
   */
  async function assertLeanBudget(handle: WorkflowHandle, t: TestContext, checks = 0): Promise<void> {
    const history = (await handle.fetchHistory()).events ?? [];
    if (firstTaskTimedOut(history)) {
      t.diagnostic('the first workflow task timed out: the recovery path, not the lean budget');
      return;
    }
    assert.ok(checks <= MAX_CHECKS, `checks: ${checks}`);
    assert.ok(history.length <= LEAN_ORDER_EVENTS, `history events: ${history.length}`);
    t.diagnostic(`history events: ${history.length}`);
  }

  async function waitForReview(handle: WorkflowHandle): Promise<OrderView> {
    return waitForView(handle, (v) => v.status === 'NEEDS_REVIEW');
  }

  it('a mobile top-up to a normal number is FULFILLED with number and amount, checked at the provider’s pace, in the lean event budget', async (t) => {
    const request = mobileRequest(newRef('mobile-ok'));
    const handle = await start(request);
    const view = await handle.result();

    assert.equal(view.status, 'FULFILLED');
    assert.deepEqual(mobileResultBesidesDebit(view.result), { msisdn: NORMAL_NUMBER, amount: 500 });
    assert.equal(view.providerStatus, 'FULFILLED');
    assert.ok(view.providerReference, 'the topupId is kept');
    // PROCESSING shows only if a check lands inside the sandbox's (scaled) HANDLING window.
    assert.match(
      view.timeline.map((e) => e.status).join(' '),
      /^ACCEPTED SUBMITTED (PROCESSING )?FULFILLED$/,
    );
    assert.ok(!JSON.stringify(view.timeline).includes(NORMAL_NUMBER), 'no phone number in the timeline');
    assert.equal(await statusAttribute(handle), 'FULFILLED');
    assert.equal(
      (await handle.describe()).typedSearchAttributes.get(CompletedAtAttribute)?.toISOString(),
      view.completedAt,
      'CompletedAt is the view’s completedAt',
    );
    const calls = counted.callsFor(request.ref);
    assert.equal(calls.sendMobileTopup, 1);
    assert.equal((await sandbox.sendsOf(request.ref)).accepted, 1);
    await assertLeanBudget(handle, t, calls.checkMobileTopup);
  });

  it('on a worker whose provider calls are rate-limited by the task queue, the send goes through the queue (an activity) and is made once', async () => {
    const request = mobileRequest(newRef('mobile-queued-send'));
    const handle = await startOrder(env.client, env.taskQueues.queueSends, request, {
      timings: scaledTimings(),
    });
    const view = await handle.result();
    assert.equal(view.status, 'FULFILLED');
    const history = (await handle.fetchHistory()).events ?? [];
    const activities = history.flatMap(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? [],
    );
    assert.deepEqual(activities, ['sendMobileTopup', 'pollMobileTopup']);
    assert.equal(counted.callsFor(request.ref).sendMobileTopup, 1);
    assert.deepEqual(await sandbox.sendsOf(request.ref), { ref: request.ref, accepted: 1, attempts: 1 });
  });

  it('an internet top-up is FULFILLED with the card code and transaction number, checked at the provider’s pace, in the lean event budget', async (t) => {
    const request = internetRequest(newRef('internet-ok'));
    const handle = await start(request);
    const view = await handle.result();
    assert.equal(view.status, 'FULFILLED');
    assert.match(view.result?.cardCode ?? '', /^\d+$/);
    assert.ok(view.result?.transactionNumber);
    assert.equal(await statusAttribute(handle), 'FULFILLED');
    const calls = counted.callsFor(request.ref);
    assert.equal(calls.sendInternetTopup, 1);
    await assertLeanBudget(handle, t, calls.checkInternetTopup);
  });

  it('a gift-card order is FULFILLED with one code and serial per card ordered, checked at the provider’s pace, in the lean event budget', async (t) => {
    const handle = await start(giftCardRequest(newRef('gift-ok'), 2));
    const view = await handle.result();
    assert.equal(view.status, 'FULFILLED');
    assert.equal(view.result?.cards?.length, 2);
    for (const card of view.result?.cards ?? []) {
      assert.ok(card.code && card.serial, 'each card has a code and a serial');
    }
    assert.ok(view.providerReference, 'the orderId is kept');
    assert.equal(await statusAttribute(handle), 'FULFILLED');
    const checks = counted.callsFor(view.providerReference).checkGiftCardOrder ?? 0;
    assert.ok(checks >= 1 && checks <= MAX_CHECKS, `checks: ${checks}`);
    const history = (await handle.fetchHistory()).events ?? [];
    if (!firstTaskTimedOut(history)) {
      assert.ok(history.length <= LEAN_ORDER_EVENTS, `history events: ${history.length}`);
      t.diagnostic(`history events: ${history.length}`);
    }
    const placements = history.filter(
      (e) =>
        e.markerRecordedEventAttributes?.markerName === 'core_local_activity' ||
        e.activityTaskScheduledEventAttributes?.activityType?.name === 'placeGiftCardOrder',
    );
    assert.equal(placements.length, 1, 'placed once');
  });

  it('a top-up to 0600000001 is REFUNDED with the provider’s refund_message for the customer', async () => {
    const view = await (
      await start(mobileRequest(newRef('refund'), sandboxSpecialNumbers.refunded))
    ).result();
    assert.equal(view.status, 'REFUNDED');
    assert.equal(view.result?.refundMessage, sandboxRefundMessages.refunded, 'the Arabic message is kept');
    assert.equal(view.result?.suggestedOffers, undefined);
  });

  it('a top-up to 0600000002 is REFUNDED with the refund_message and the suggested_offers', async () => {
    const view = await (
      await start(mobileRequest(newRef('mismatch'), sandboxSpecialNumbers.planMismatch))
    ).result();
    assert.equal(view.status, 'REFUNDED');
    assert.equal(view.result?.refundMessage, sandboxRefundMessages.planMismatch);
    assert.deepEqual(view.result?.suggestedOffers, [
      { planCode: 'FACTURE_DJEZZY', amount: 500, typename: 'Facture' },
    ]);
  });

  for (const decision of ['FULFILLED', 'REFUNDED'] as const) {
    it(`a top-up to 0600000003 waits in NEEDS_REVIEW, findable by search attribute, until an operator decides ${decision}`, async () => {
      const handle = await start(
        mobileRequest(newRef(`review-${decision}`), sandboxSpecialNumbers.unknownError),
      );
      const inReview = await waitForReview(handle);
      assert.equal(inReview.providerStatus, 'UNKNOWN_ERROR');
      assert.ok(inReview.review?.reason.includes('UNKNOWN_ERROR'));
      assert.ok(inReview.review?.since);
      assert.equal(await statusAttribute(handle), 'NEEDS_REVIEW');

      // A refund before the provider says so needs force (docs/operators.md, the decision table).
      const force = decision === 'REFUNDED' ? { force: true } : {};
      await handle.signal(resolveReviewSignal, {
        decision,
        operator: 'amina',
        note: 'checked with the provider',
        ...force,
      });
      const view = await handle.result();

      assert.equal(view.status, decision);
      assert.equal(view.review?.resolution?.force, force.force);
      assert.equal(view.review?.resolution?.decision, decision);
      assert.equal(view.review?.resolution?.operator, 'amina');
      assert.equal(view.review?.resolution?.note, 'checked with the provider');
      assert.ok(view.review?.resolution?.at);
      assert.equal(await statusAttribute(handle), decision);
    });
  }

  it('a RECHECK decision checks the provider now and records the answer; the order stays in review while it is open', async () => {
    const ref = newRef('recheck');
    const handle = await start(mobileRequest(ref, sandboxSpecialNumbers.unknownError));
    await waitForReview(handle);
    const checksBefore = counted.callsFor(ref).checkMobileTopup ?? 0;

    await handle.signal(resolveReviewSignal, { decision: 'RECHECK', operator: 'amina', note: 'try again' });
    const rechecked = await waitForView(handle, (v) =>
      v.timeline.some((e) => e.event.includes('still in review')),
    );

    assert.equal(rechecked.status, 'NEEDS_REVIEW');
    assert.equal(counted.callsFor(ref).checkMobileTopup, checksBefore + 1);
    assert.ok(rechecked.timeline.some((e) => e.event === 'Recheck requested by amina'));
    await handle.signal(resolveReviewSignal, {
      decision: 'REFUNDED',
      operator: 'amina',
      note: 'refunded by hand',
      force: true,
    });
    assert.equal((await handle.result()).status, 'REFUNDED');
  });

  it('an invalid review decision is recorded and ignored; a valid one then resolves the order', async () => {
    const handle = await start(mobileRequest(newRef('invalid-decision'), sandboxSpecialNumbers.unknownError));
    await waitForReview(handle);

    await handle.signal(resolveReviewSignal, { decision: 'MAYBE', operator: '' } as never);
    const view = await waitForView(handle, (v) =>
      v.timeline.some((e) => e.event.startsWith('Invalid review decision')),
    );
    assert.equal(view.status, 'NEEDS_REVIEW');
    assert.match(view.timeline.at(-1)?.event ?? '', /decision, operator, note/);

    await handle.signal(resolveReviewSignal, { decision: 'FULFILLED', operator: 'amina', note: 'ok' });
    assert.equal((await handle.result()).status, 'FULFILLED');
  });

  it('a review decision for an order that is not in review is recorded and ignored', async () => {
    // A long first check keeps the order SUBMITTED while the decision arrives.
    const handle = await start(mobileRequest(newRef('not-in-review')), {
      timings: scaledTimings({ firstCheckMs: 1_500 }),
    });
    await waitForView(handle, (v) => v.status === 'SUBMITTED');

    await handle.signal(resolveReviewSignal, {
      decision: 'REFUNDED',
      operator: 'amina',
      note: 'wrong order',
    });
    const view = await handle.result();

    assert.equal(view.status, 'FULFILLED');
    assert.equal(view.review, undefined);
    assert.ok(
      view.timeline.some(
        (e) => e.event === 'Review decision REFUNDED by amina ignored: the order is not in review',
      ),
    );
  });

  it('an order the provider never finishes is checked on the capped back-off until its deadline, then waits in review with a bounded history', async (t) => {
    // The dev server fires timers on a ~1 s grid, so the cap is 1 s here; the cost per check is what counts.
    const ref = newRef('never-finishes');
    const handle = await startOrder(env.client, env.taskQueues.neverFinishing, mobileRequest(ref), {
      timings: scaledTimings({
        firstCheckMs: 1_000,
        handlingCheckMs: 1_000,
        maxIntervalMs: 1_000,
        deadlineMs: 5_000,
        // The back-off after the provider's pace: no pace here, the back-off from the start.
        pollIntervalMs: 0,
      }),
    });
    const inReview = await waitForView(handle, (v) => v.status === 'NEEDS_REVIEW');
    const events = await historyLength(handle);
    const checks = slowCounted.callsFor(ref).checkMobileTopup ?? 0;
    t.diagnostic(`never finishing: ${checks} checks, ${events} history events at the deadline`);

    assert.match(inReview.review?.reason ?? '', /stuck/);
    assert.equal(inReview.review?.evidence, 'provider status PENDING');
    // Four checks fit in the 5 s when the machine is idle; a loaded 2-core machine (CI with chaos
    // alongside) delays activities, so the floor only proves the polling repeats after the first.
    assert.ok(checks >= 2 && checks <= 6, `checks: ${checks}`);
    // A check costs a timer, an activity and two workflow tasks: 11 events. At the production
    // timings (deadline 30 min, cap 60 s) that is about 31 checks, some 350 events.
    assert.ok(events <= 11 * checks + 20, `history events: ${events}`);
    // The provider still says PENDING, so a plain REFUNDED would be refused (it may still fulfil it).
    await handle.signal(resolveReviewSignal, {
      decision: 'REFUNDED',
      operator: 'amina',
      note: 'never arrived',
      force: true,
    });
    assert.equal((await handle.result()).status, 'REFUNDED');
  });

  it('a long watch after a decision continues as new with its state, and still reports a dispute', async () => {
    const ref = newRef('watch-continue');
    const handle = await start(mobileRequest(ref, sandboxSpecialNumbers.unknownError), {
      // Checked every second (the dev server's timer grid), so the history grows past 60 events soon.
      timings: scaledTimings({
        reviewWatchMs: 60_000,
        reviewWatchFirstCheckMs: 1_000,
        reviewRecheckMs: 1_000,
      }),
      historyEventLimit: 60,
    });
    await waitForReview(handle);
    await handle.signal(resolveReviewSignal, { decision: 'FULFILLED', operator: 'amina', note: 'by phone' });
    const decided = await waitForView(handle, (v) => v.status === 'FULFILLED');
    const first = await handle.describe();
    assert.equal(first.typedSearchAttributes.get(CompletedAtAttribute)?.toISOString(), decided.completedAt);
    const deadline = Date.now() + 30_000;
    while ((await handle.describe()).runId === first.runId) {
      assert.ok(Date.now() < deadline, 'the workflow continued as new while watching');
      await new Promise((r) => setTimeout(r, 200));
    }

    await sandbox.changeTopup(ref, { status: 'REFUNDED' });
    const disputed = await waitForView(handle, (v) => v.status === 'DISPUTED', 15_000);
    assert.equal(disputed.dispute?.decision, 'FULFILLED', 'the watch carried the decision over');
    assert.equal(disputed.review?.resolution?.operator, 'amina');
    assert.equal(disputed.timeline[0]?.status, 'ACCEPTED', 'the timeline was carried over');
    const reopened = await handle.describe();
    assert.equal(reopened.typedSearchAttributes.get(OrderStatusAttribute), 'DISPUTED');
    assert.equal(
      reopened.typedSearchAttributes.get(CompletedAtAttribute),
      undefined,
      'a dispute is not complete',
    );
    await handle.terminate('test done: a dispute waits for an operator');
  });

  it('a long review continues as new with its state, and a decision still resolves it', async () => {
    const handle = await start(mobileRequest(newRef('continue'), sandboxSpecialNumbers.unknownError), {
      timings: scaledTimings({ reviewRecheckMs: 50 }),
      historyEventLimit: 40,
    });
    const first = await handle.describe();
    await waitForReview(handle);
    const deadline = Date.now() + 15_000;
    while ((await handle.describe()).runId === first.runId) {
      assert.ok(Date.now() < deadline, 'the workflow continued as new');
      await new Promise((r) => setTimeout(r, 100));
    }
    const continued = await handle.describe();
    assert.equal(continued.typedSearchAttributes.get(OrderStatusAttribute), 'NEEDS_REVIEW');
    assert.equal(
      continued.typedSearchAttributes.get(OrderClientAttribute),
      TEST_ORDER_CLIENT,
      'the owner was carried over',
    );
    assert.deepEqual(continued.memo, first.memo, "the starter's memo was carried over");

    await handle.signal(resolveReviewSignal, {
      decision: 'REFUNDED',
      operator: 'amina',
      note: 'after a long wait',
      force: true,
    });
    const view = await handle.result();
    assert.equal(view.status, 'REFUNDED');
    assert.equal(view.timeline[0]?.status, 'ACCEPTED', 'the timeline was carried over');
    assert.equal(view.review?.resolution?.operator, 'amina');
    assert.ok((await historyLength(handle)) <= 60, 'the latest run is short');
  });
});
