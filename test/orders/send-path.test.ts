/**
 * Never send twice against a provider that commits late, reads behind its writes, enforces no
 * unique ref and sometimes cannot be asked (docs/contributors.md "Never send twice: what we assume of the
 * provider"). Real Temporal, real workers, the sandbox over HTTP with the faults real providers
 * have. Fault rules and settings apply to the whole sandbox, so these tests run one after another
 * and each leaves none behind.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { WorkflowHandle } from '@temporalio/client';
import { HoldReasonAttribute, OrderStatusAttribute, type OrderView } from '../../contract/order';
import { internetRequest, mobileRequest, newRef, scaledTimings, waitForView } from '../helpers/orders';
import { useFaultStack } from '../helpers/stack';
import { createProviderPool, ProviderClient } from '../../src/provider';

/** How long before the order another back office used its ref (past our retention). */
const RETENTION_EXPIRED_AGO_MS = 90 * 24 * 3_600_000;

/** A worker whose HTTP timeouts are far longer than the activity timeout the order gets. */
const SLOW_HTTP_TIMEOUTS = { headersTimeoutMs: 10_000, bodyTimeoutMs: 10_000 };

describe('the send path against a provider that commits late and reads behind', () => {
  let short: ProviderClient;
  let slowPool: { close(): Promise<void> } | undefined;
  const env = useFaultStack({
    name: 'send-path',
    workers: {
      short: { account: { checkMs: 200 } },
      slow: {
        provider: ({ url }) => {
          const pool = createProviderPool({ baseUrl: url, connectTimeoutMs: 500, connections: 16 });
          slowPool = pool;
          return new ProviderClient({
            baseUrl: url,
            apiKey: 'sandbox-key',
            dispatcher: pool,
            ...SLOW_HTTP_TIMEOUTS,
          });
        },
      },
    },
  });
  const { start } = env;

  before(() => {
    short = env.provider.client;
  });
  afterEach(async () => {
    await env.sandbox.settings({ uniqueRefs: true, balance: 1_000_000_000, backdateSendsMs: 0 });
  });
  // After the stack's own `after`: the slow worker has stopped using its pool.
  after(async () => {
    await slowPool?.close();
  });

  const settled = (handle: WorkflowHandle, timeoutMs = 60_000): Promise<OrderView> =>
    waitForView(
      handle,
      (v) => !['ACCEPTED', 'HELD', 'SUBMITTED', 'PROCESSING'].includes(v.status),
      timeoutMs,
    );

  it('when the provider commits a send after the worker gave up on it (no unique refs), the top-up is sent once and FULFILLED', async () => {
    // Hole 1: the worker's send times out after ~1-2 s; the provider commits it at 3 s. A retry that
    // looks the ref up a second later finds nothing yet and sends again.
    await env.sandbox.settings({ uniqueRefs: false });
    await env.sandbox.addFault({
      kind: 'late_commit',
      commitDelayMs: 3_000,
      routes: ['mobile.send'],
      times: 1,
    });
    const request = mobileRequest(newRef('late-commit'));
    const handle = await start(request, { timings: scaledTimings({ settleMs: 3_000 }) });
    const view = await handle.result();
    await env.sandbox.pendingCommitsDone('mobile.send', 3_000);

    assert.deepEqual(await env.sandbox.sendsOf(request.ref), { ref: request.ref, accepted: 1, attempts: 1 });
    assert.equal(view.status, 'FULFILLED', JSON.stringify(view.timeline));
    assert.ok(
      view.timeline.some((e) => e.event.includes('already had this order')),
      'the settled look-up found the late commit',
    );
  });

  it('when check-ref lags behind the commits (no unique refs), a lost answer is found after the settle window and the top-up is sent once', async () => {
    await env.sandbox.settings({ uniqueRefs: false });
    await env.sandbox.addFault({ kind: 'drop_after_commit', routes: ['mobile.send'], times: 1 });
    await env.sandbox.addFault({ kind: 'lagging_reads', lagMs: 1_500, routes: ['mobile.check'] });
    const request = mobileRequest(newRef('lagging'));
    const view = await (await start(request, { timings: scaledTimings({ settleMs: 2_000 }) })).result();

    assert.deepEqual(await env.sandbox.sendsOf(request.ref), { ref: request.ref, accepted: 1, attempts: 1 });
    assert.equal(view.status, 'FULFILLED', JSON.stringify(view.timeline));
  });

  it('when the ref was already used at the provider before this order (retention expired), the first send meets 403 DUPLICATED_REF and the order goes to NEEDS_REVIEW without adopting the old top-up', async () => {
    // Hole 3: same body, same ref, months ago; the old top-up is FULFILLED and looks like ours.
    const request = mobileRequest(newRef('reused'));
    const providerRef = `p-${request.ref}`;
    await short.sendMobileTopup({
      plan_code: request.planCode,
      MSSIDN: request.msisdn,
      amount: request.amount,
      ref: providerRef,
    });
    const handle = await start(request, { providerRef });
    const view = await settled(handle);

    assert.equal(view.status, 'NEEDS_REVIEW', JSON.stringify(view.timeline));
    assert.match(view.review?.reason ?? '', /ref already used at the provider/);
    assert.equal(view.result, undefined, 'the old top-up is not adopted');
    assert.deepEqual(await env.sandbox.sendsOf(providerRef), { ref: providerRef, accepted: 1, attempts: 2 });
    assert.deepEqual(await env.sandbox.sendsOf(request.ref), { ref: request.ref, accepted: 0, attempts: 0 });
    await handle.terminate('test done');
  });

  /**
   * A top-up made 90 days ago under `providerRef` with the order's own body: another back office's
   * order, whose ref is reused after our retention expired (the sandbox dates it back).
   */
  const oldTopupUnder = async (
    providerRef: string,
    request: ReturnType<typeof mobileRequest> | ReturnType<typeof internetRequest>,
  ) => {
    await env.sandbox.settings({ backdateSendsMs: RETENTION_EXPIRED_AGO_MS });
    try {
      await (request.type === 'mobile_topup'
        ? short.sendMobileTopup({
            plan_code: request.planCode,
            MSSIDN: request.msisdn,
            amount: request.amount,
            ref: providerRef,
          })
        : short.sendInternetTopup({
            type: request.lineType,
            number: request.number,
            value: request.value,
            ref: providerRef,
          }));
    } finally {
      await env.sandbox.settings({ backdateSendsMs: 0 });
    }
  };

  const assertNotAdopted = (view: OrderView) => {
    assert.equal(view.status, 'NEEDS_REVIEW', JSON.stringify(view.timeline));
    assert.match(view.review?.reason ?? '', /top-up under this ref is not this order's/);
    assert.match(view.review?.evidence ?? '', /made 90 days before the order was accepted/);
    assert.equal(view.result, undefined, 'the old top-up is not adopted');
  };

  for (const [label, request, sendRoute] of [
    ['a mobile top-up', () => mobileRequest(newRef('reused-lost')), 'mobile.send'],
    ['an internet top-up', () => internetRequest(newRef('reused-internet')), 'internet.send'],
  ] as const) {
    it(`when ${label}’s ref was used at the provider 90 days before this order and the send’s answer is lost, check-ref finds that old top-up with the same body: it is not adopted, NEEDS_REVIEW, nothing sent`, async () => {
      const order = request();
      const providerRef = `p-${order.ref}`;
      await oldTopupUnder(providerRef, order);
      // The provider answers DUPLICATED_REF to our send, and that answer is lost: the order looks the ref up.
      await env.sandbox.addFault({ kind: 'drop_after_commit', routes: [sendRoute], times: 1 });
      const handle = await start(order, { providerRef });
      const view = await settled(handle);

      assertNotAdopted(view);
      assert.deepEqual(await env.sandbox.sendsOf(providerRef), {
        ref: providerRef,
        accepted: 1,
        attempts: 2,
      });
      await handle.terminate('test done');
    });
  }

  it('when the ref was used at the provider 90 days before this order and the run may have sent before (a first task that did not complete, a run the sweep resumed), the look-up before any send does not adopt the old top-up', async () => {
    const request = mobileRequest(newRef('reused-resumed'));
    const providerRef = `p-${request.ref}`;
    await oldTopupUnder(providerRef, request);
    // As the sweep starts a run after one that closed unsettled: the send refuses unsent, the ref is looked up.
    const resumed = { closedAs: 'TERMINATED', at: new Date().toISOString() };
    const handle = await start(request, { providerRef, resumed });
    const view = await settled(handle);

    assertNotAdopted(view);
    assert.deepEqual(await env.sandbox.sendsOf(providerRef), { ref: providerRef, accepted: 1, attempts: 1 });
    await handle.terminate('test done');
  });

  it('when the ref was used at the provider 90 days before this order and the first send meets DUPLICATED_REF, the review’s recheck does not settle the order with the old top-up', async () => {
    const request = mobileRequest(newRef('reused-recheck'));
    const providerRef = `p-${request.ref}`;
    await oldTopupUnder(providerRef, request);
    const handle = await start(request, { providerRef, timings: scaledTimings({ reviewRecheckMs: 300 }) });
    const inReview = await settled(handle);
    assert.match(inReview.review?.reason ?? '', /ref already used at the provider/);
    // Lifecycle 1.0's recheck read the old top-up as this order's FULFILLED one.
    const since = Date.parse(inReview.review?.since ?? '');
    const rechecks = async () =>
      (await env.sandbox.requests('mobile.check')).filter(
        (r) => r.receivedAt > since && r.endedAt !== undefined,
      ).length;
    let view = inReview;
    // Two rechecks answered, or the order left review (lifecycle 1.0: after the first).
    for (const giveUpAt = Date.now() + 30_000; view.status === 'NEEDS_REVIEW' && (await rechecks()) < 2;) {
      assert.ok(Date.now() < giveUpAt, 'the review rechecked the ref twice within 30 s');
      await new Promise((r) => setTimeout(r, 200));
      view = await waitForView(handle, () => true);
    }
    assert.equal(view.status, 'NEEDS_REVIEW', JSON.stringify(view.timeline));
    assert.equal(view.result, undefined, 'the old top-up is not adopted');
    assert.deepEqual(await env.sandbox.sendsOf(providerRef), { ref: providerRef, accepted: 1, attempts: 2 });
    await handle.terminate('test done');
  });

  it('when the provider’s clock is 5 minutes behind ours, our own send (its answer lost) reads as made before the acceptance but within the clock-skew allowance: adopted, FULFILLED, sent once', async () => {
    const request = mobileRequest(newRef('skewed-clock'));
    await env.sandbox.settings({ backdateSendsMs: 5 * 60_000 });
    await env.sandbox.addFault({ kind: 'drop_after_commit', routes: ['mobile.send'], times: 1 });
    const handle = await start(request);
    const view = await settled(handle);

    assert.equal(view.status, 'FULFILLED', JSON.stringify(view.timeline));
    assert.ok(view.timeline.some((e) => e.event.includes('already had this order')));
    assert.deepEqual(await env.sandbox.sendsOf(request.ref), { ref: request.ref, accepted: 1, attempts: 1 });
  });

  it('when the provider’s clock reads our own send two days early, the top-up its answer named (its _id, our topupId) is still ours: FULFILLED, sent once', async () => {
    const request = mobileRequest(newRef('early-clock'));
    await env.sandbox.settings({ backdateSendsMs: 2 * 24 * 3_600_000 });
    const handle = await start(request);
    const view = await settled(handle);
    if (view.status === 'NEEDS_REVIEW') await handle.terminate('test: not adopted');

    assert.equal(view.status, 'FULFILLED', JSON.stringify(view.timeline));
    assert.deepEqual(await env.sandbox.sendsOf(request.ref), { ref: request.ref, accepted: 1, attempts: 1 });
  });

  it('when the worker HTTP timeouts are longer than the activity timeout, no provider call outlives its attempt and the top-up is sent once', async () => {
    // Hole 4: the send hangs; the worker would wait 10 s for headers, Temporal gives up after 1.5 s.
    const since = Date.now();
    await env.sandbox.addFault({ kind: 'hang', routes: ['mobile.send'], times: 1 });
    const request = mobileRequest(newRef('one-clock'));
    const activityTimeoutMs = 1_500;
    const view = await (
      await start(request, { timings: scaledTimings({ activityTimeoutMs }) }, 'slow')
    ).result();

    assert.equal(view.status, 'FULFILLED', JSON.stringify(view.timeline));
    assert.deepEqual(await env.sandbox.sendsOf(request.ref), { ref: request.ref, accepted: 1, attempts: 1 });
    const calls = [
      ...(await env.sandbox.requests('mobile.send')),
      ...(await env.sandbox.requests('mobile.check')),
    ].filter((r) => r.receivedAt >= since);
    assert.ok(calls.length >= 2);
    for (const call of calls) {
      assert.ok(call.endedAt !== undefined, 'every call has ended');
      assert.ok(
        call.endedAt - call.receivedAt <= activityTimeoutMs,
        `a ${call.route} call was open ${call.endedAt - call.receivedAt} ms, longer than its attempt's ${activityTimeoutMs} ms`,
      );
    }
  });

  it('when check-ref lags longer than the settle window, the re-send after two 404s meets 403 DUPLICATED_REF and the first send is adopted, never FAILED (issue 25, failure 1)', async () => {
    await env.sandbox.addFault({ kind: 'drop_after_commit', routes: ['mobile.send'], times: 1 });
    // Both look-ups a settle window apart must miss the commit, even when a loaded machine runs their
    // timers late (the dev server fires them on a ~1 s tick): the lag is well past two windows.
    await env.sandbox.addFault({ kind: 'lagging_reads', lagMs: 6_000, routes: ['mobile.check'] });
    const request = mobileRequest(newRef('resend-409'));
    const view = await (await start(request, { timings: scaledTimings({ settleMs: 1_000 }) })).result();

    assert.equal(view.status, 'FULFILLED', JSON.stringify(view.timeline));
    assert.deepEqual(await env.sandbox.sendsOf(request.ref), { ref: request.ref, accepted: 1, attempts: 2 });
    assert.ok(view.timeline.some((e) => e.event.includes('already had this order')));
  });

  it('when the provider cannot be asked after an unclear send, the order waits without sending again, then goes to NEEDS_REVIEW at its deadline with the evidence', async () => {
    await env.sandbox.addFault({ kind: 'drop_after_commit', routes: ['mobile.send'], times: 1 });
    await env.sandbox.addFault({ kind: 'error', status: 503, routes: ['mobile.check'] });
    const request = mobileRequest(newRef('cannot-ask'));
    const deadlineMs = 5_000;
    const handle = await start(request, { timings: scaledTimings({ deadlineMs, maxIntervalMs: 1_000 }) });
    const view = await settled(handle);

    assert.equal(view.status, 'NEEDS_REVIEW', JSON.stringify(view.timeline));
    assert.ok(
      Date.parse(view.review?.since ?? '') >= Date.parse(view.acceptedAt) + deadlineMs - 100,
      'it waited until the deadline',
    );
    assert.match(view.review?.evidence ?? '', /sendMobileTopup/);
    assert.match(view.review?.evidence ?? '', /503/);
    assert.deepEqual(await env.sandbox.sendsOf(request.ref), { ref: request.ref, accepted: 1, attempts: 1 });
    await handle.terminate('test done');
  });

  it('when check-ref finds a top-up under the ref with another number after an unclear send, it is not adopted: NEEDS_REVIEW', async () => {
    await env.sandbox.settings({ uniqueRefs: false });
    const request = mobileRequest(newRef('not-ours'));
    await short.sendMobileTopup({
      plan_code: request.planCode,
      MSSIDN: '0559999999',
      amount: 500,
      ref: request.ref,
    });
    // Ours commits too (no unique refs), but its answer is lost; check-ref shows the older one.
    await env.sandbox.addFault({ kind: 'drop_after_commit', routes: ['mobile.send'], times: 1 });
    const handle = await start(request);
    const view = await settled(handle);

    assert.equal(view.status, 'NEEDS_REVIEW', JSON.stringify(view.timeline));
    assert.match(view.review?.evidence ?? '', /another number or amount/);
    assert.equal(view.result, undefined);
    assert.deepEqual(await env.sandbox.sendsOf(request.ref), { ref: request.ref, accepted: 2, attempts: 2 });
    await handle.terminate('test done');
  });

  it('when check-ref shows another _id than the topupId the send returned, the order goes to NEEDS_REVIEW (issue 25, failure 3)', async () => {
    await env.sandbox.settings({ uniqueRefs: false });
    const request = mobileRequest(newRef('other-topup'));
    await short.sendMobileTopup({
      plan_code: request.planCode,
      MSSIDN: request.msisdn,
      amount: request.amount,
      ref: request.ref,
    });
    const handle = await start(request);
    const view = await settled(handle);

    assert.equal(view.status, 'NEEDS_REVIEW', JSON.stringify(view.timeline));
    assert.match(view.review?.evidence ?? '', /another _id than the topupId/);
    assert.equal(view.result, undefined, 'the other top-up is not adopted');
    await handle.terminate('test done');
  });

  it('when the account’s balance cannot cover the send (403 INSUFFICIENT_BALANCE), the order is not FAILED; once funds are added it is sent and FULFILLED (issue 25, failure 2)', async () => {
    await env.sandbox.settings({ balance: 0 });
    const request = mobileRequest(newRef('no-balance'));
    const handle = await start(request);
    // Read from the server (the run's search attributes), not by queries: a query while the held
    // order's local activities are in flight can fail on a worker that just evicted the run.
    const statusOf = async () => {
      const attributes = (await handle.describe()).typedSearchAttributes;
      return { status: attributes.get(OrderStatusAttribute), reason: attributes.get(HoldReasonAttribute) };
    };
    const deadline = Date.now() + 30_000;
    while (['ACCEPTED', 'SUBMITTED'].includes((await statusOf()).status ?? '') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
    // Then several settle windows: long enough for the old code to have FAILED it long ago.
    await new Promise((r) => setTimeout(r, 3_000));
    assert.deepEqual(await statusOf(), { status: 'HELD', reason: 'balance' });
    assert.deepEqual(await env.sandbox.sendsOf(request.ref), { ref: request.ref, accepted: 0, attempts: 0 });

    await env.sandbox.settings({ balance: 10_000 });
    const view = await settled(handle);
    assert.equal(view.status, 'FULFILLED', JSON.stringify(view.timeline));
    assert.deepEqual(await env.sandbox.sendsOf(request.ref), { ref: request.ref, accepted: 1, attempts: 1 });
  });
});
