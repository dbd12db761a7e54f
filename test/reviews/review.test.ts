/**
 * Operator decisions checked against the provider, end to end: the API's review route (a Workflow
 * Update) and the `resolveReview` signal (Temporal UI, the `temporal` CLI), a real Temporal
 * server, real workers and the sandbox over HTTP, whose "outcomes that change later" make the
 * provider say what each case needs. The decision table itself: docs/operators.md "Operator's guide: orders that need review".
 *
 * Four sandboxes, because fault rules apply to a whole sandbox: `main` behaves; on `lostSends`
 * every mobile send fails before reaching the provider (so it has no trace of the top-up); on
 * `flaky` a test turns the checks slow or failing; on `giftCards` every placement's answer is lost (and the gift-card list lags behind)
 * (so the order is in review without the provider's orderId).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Problem } from '../../src/http/errors';
import { apiTestConfig, startTestApi, testClients, type TestApi, apiViewUntil } from '../helpers/api';
import { providerRefFor } from '../../src/orders/provider-ref';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { findTemporalCli } from '../../src/temporal/cli';
import {
  decideReviewUpdate,
  DecisionRejection,
  orderWorkflowId,
  resolveReviewSignal,
  type OrderStatus,
  type OrderTimings,
  type OrderView,
  type ReviewDecision,
} from '../../contract/order';
import {
  giftCardRequest,
  internetRequest,
  mobileRequest,
  scaledTimings,
  startTestSandbox,
  testProvider,
  type TestSandbox,
  mobileResultBesidesDebit,
  refsPrefixed,
} from '../helpers/orders';
import { startOrderTestWorkers, type OrderTestWorkers } from '../helpers/stack';

const newRef = refsPrefixed('REV');
const run = promisify(execFile);

type Stack = 'main' | 'lostSends' | 'flaky' | 'giftCards';

/** Watched decisions: the first check soon after, for a while. */
const watched = (overrides: Partial<OrderTimings> = {}) =>
  scaledTimings({ reviewWatchMs: 10_000, reviewWatchFirstCheckMs: 300, ...overrides });

describe('review decisions checked against the provider', { concurrency: true }, () => {
  const sandboxes = {} as Record<Stack, TestSandbox>;
  const providers: ReturnType<typeof testProvider>[] = [];
  let env: OrderTestWorkers<Stack>;
  /** The API of each stack, and `stuck`: orders still open after 2 s go to review, rechecked every second. */
  const apis = {} as Record<Stack | 'stuck' | 'shortWatch' | 'impatient', TestApi>;

  before(async () => {
    const stacks: Stack[] = ['main', 'lostSends', 'flaky', 'giftCards'];
    await Promise.all(stacks.map(async (s) => (sandboxes[s] = await startTestSandbox())));
    await sandboxes.lostSends.addFault({ kind: 'error', status: 503, routes: ['mobile.send'] });
    await sandboxes.giftCards.addFault({ kind: 'drop_after_commit', routes: ['giftcards.placeOrder'] });
    // …and its gift-card list lags far behind: the lost placement is not found there (records.ts).
    await sandboxes.giftCards.addFault({ kind: 'lagging_reads', lagMs: 120_000, routes: ['giftcards.list'] });
    const clients = Object.fromEntries(
      stacks.map((s) => {
        const provider = testProvider(sandboxes[s].url);
        providers.push(provider);
        return [s, provider.client];
      }),
    ) as Record<Stack, ReturnType<typeof testProvider>['client']>;
    env = await startOrderTestWorkers(clients);
    const api = (stack: Stack, timings: Partial<OrderTimings>, config: Record<string, string> = {}) =>
      startTestApi({
        client: env.client,
        taskQueue: env.taskQueues[stack],
        provider: clients[stack],
        timingsFor: () => timings,
        config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '5000', ...config }),
      });
    [apis.main, apis.stuck, apis.shortWatch, apis.lostSends, apis.flaky, apis.impatient, apis.giftCards] =
      await Promise.all([
        api('main', watched()),
        api('main', watched({ deadlineMs: 2_000, reviewRecheckMs: 1_000, reviewWatchMs: 20_000 })),
        api('main', watched({ reviewWatchMs: 2_000 })),
        api('lostSends', watched({ deadlineMs: 2_000 })),
        api('flaky', watched({ reviewWatchMs: 3_000 })),
        // Answers 202 when the provider check takes longer than 300 ms.
        api('flaky', watched({ reviewWatchMs: 3_000 }), { API_DECISION_TIMEOUT_MS: '300' }),
        api('giftCards', watched()),
      ]);
  });

  after(async () => {
    await Promise.all(Object.values(apis).map((a) => a.close()));
    await env?.stop();
    await Promise.all(providers.map((p) => p.close()));
    await Promise.all(Object.values(sandboxes).map((s) => s.close()));
  });

  const handleOf = (ref: string): WorkflowHandle => env.client.workflow.getHandle(orderWorkflowId(ref));
  /** The ref the API derives for the test key's client (shop, the default client) to send to the provider. */
  const providerRefOf = (ref: string) => providerRefFor('shop', ref);

  /** Polls GET /v1/orders/{ref} until `predicate` holds. */
  const pollUntil = (
    api: TestApi,
    ref: string,
    predicate: (view: OrderView) => boolean,
    timeoutMs = 20_000,
  ): Promise<OrderView> => apiViewUntil(api, ref, predicate, { timeoutMs });
  const statusIs = (status: OrderStatus) => (view: OrderView) => view.status === status;

  /** Submits through the API and waits for NEEDS_REVIEW. */
  async function inReview(api: TestApi, request: object & { ref: string }): Promise<OrderView> {
    const created = await api.request('POST', '/v1/orders', { body: request });
    assert.equal(created.status, 201, created.text);
    return pollUntil(api, request.ref, statusIs('NEEDS_REVIEW'));
  }

  /** A mobile top-up the provider answers UNKNOWN_ERROR for, in review; then the provider says `status`. */
  async function unknownThen(label: string, status?: 'PENDING' | 'HANDLING' | 'FULFILLED' | 'REFUNDED') {
    const request = mobileRequest(newRef(label), sandboxSpecialNumbers.unknownError);
    await inReview(apis.main, request);
    if (status) await sandboxes.main.changeTopup(providerRefOf(request.ref), { status });
    return request;
  }

  /** A decision through the API: as shop, the orders' owner (a back office), or as the operator. */
  const review = (
    api: TestApi,
    ref: string,
    body: Record<string, unknown>,
    as: 'shop' | 'operator' = 'shop',
  ) =>
    // The body is the view (200, 202) or a problem (4xx): the test reads what its status says it is.
    api.request<OrderView & Omit<Problem, 'status'>>(
      'POST',
      `/v1/orders/${ref}/review${as === 'operator' ? '?client=shop' : ''}`,
      { body, apiKey: testClients[as].key },
    );

  /**
   * Sends the decision as a signal (what Temporal UI and the CLI do) and waits until the order's
   * timeline has an entry about it: a signal has no answer.
   */
  async function signal(api: TestApi, ref: string, decision: Record<string, unknown>): Promise<OrderView> {
    const before = (await api.request<OrderView>('GET', `/v1/orders/${ref}`)).body.timeline.length;
    await handleOf(ref).signal(resolveReviewSignal, decision as unknown as ReviewDecision);
    return pollUntil(api, ref, (v) => v.timeline.length > before && v.status !== 'ACCEPTED');
  }

  const lastEvent = (view: OrderView) => view.timeline.at(-1)?.event ?? '';

  it('an order stuck while the provider is HANDLING, decided REFUNDED: refused (409, the provider may still fulfil it); when the provider fulfils it the order ends FULFILLED', async () => {
    const request = mobileRequest(newRef('hole2'));
    await sandboxes.main.changeTopup(providerRefOf(request.ref), { status: 'HANDLING' });
    const stuck = await inReview(apis.stuck, request);
    assert.equal(stuck.providerStatus, 'HANDLING');

    const res = await review(apis.stuck, request.ref, {
      decision: 'REFUNDED',
      operator: 'amina',
      note: 'customer says nothing arrived',
    });

    assert.equal(res.status, 409, res.text);
    assert.equal(res.body.type, '/problems/decision-refused');
    assert.match(res.body.detail, /HANDLING/);
    const unchanged = await pollUntil(apis.stuck, request.ref, () => true);
    assert.equal(unchanged.status, 'NEEDS_REVIEW', 'a refused decision changes nothing');
    assert.match(lastEvent(unchanged), /REFUNDED by amina \(shop\) refused/);

    await sandboxes.main.changeTopup(providerRefOf(request.ref), { status: 'FULFILLED' });
    const settled = await pollUntil(apis.stuck, request.ref, (v) => v.status !== 'NEEDS_REVIEW');
    assert.equal(settled.status, 'FULFILLED');
    assert.deepEqual(mobileResultBesidesDebit(settled.result), {
      msisdn: request.msisdn,
      amount: request.amount,
    });
  });

  it('the same, forced: applied and recorded as forced; when the provider later fulfils it the watch makes the order DISPUTED, listed and shown; an operator then settles it FULFILLED', async () => {
    const request = mobileRequest(newRef('forced'));
    await sandboxes.main.changeTopup(providerRefOf(request.ref), { status: 'HANDLING' });
    await inReview(apis.stuck, request);

    const res = await review(
      apis.stuck,
      request.ref,
      {
        decision: 'REFUNDED',
        operator: 'amina',
        note: 'provider support confirmed the reversal, ticket 4412',
        force: true,
      },
      'operator',
    );

    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'REFUNDED');
    const resolution = res.body.review?.resolution;
    assert.equal(resolution?.force, true);
    assert.match(resolution?.forcedPast ?? '', /may still fulfil/);
    assert.deepEqual(resolution?.provider, { status: 'HANDLING', answer: 'provider status HANDLING' });
    assert.match(lastEvent(res.body), /^Watching the provider until /);
    assert.ok(
      res.body.timeline.some((e) =>
        /Resolved as REFUNDED by amina \(operator\), forced although/.test(e.event),
      ),
    );
    assert.ok(res.body.completedAt, 'REFUNDED is final while the provider is watched');
    assert.ok(res.body.watch?.until);

    await sandboxes.main.changeTopup(providerRefOf(request.ref), { status: 'FULFILLED' });
    const disputed = await pollUntil(apis.stuck, request.ref, statusIs('DISPUTED'));
    assert.equal(disputed.dispute?.decision, 'REFUNDED');
    assert.equal(disputed.dispute?.providerStatus, 'FULFILLED');
    assert.ok(disputed.dispute?.reportedAt);
    assert.equal(disputed.completedAt, undefined, 'no longer final');
    assert.equal(disputed.watch?.ended?.outcome, 'disputed');
    assert.match(disputed.review?.reason ?? '', /reports FULFILLED after the order was resolved REFUNDED/);

    // Operators find it where they look: the list by status (Temporal visibility, eventually consistent).
    const listed = await (async () => {
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(200)) {
        const page = await apis.stuck.request<{ orders: { ref: string; status: string }[] }>(
          'GET',
          '/v1/orders?status=DISPUTED&pageSize=100',
        );
        const found = page.body.orders.find((o) => o.ref === request.ref);
        if (found) return found;
      }
      return undefined;
    })();
    assert.equal(listed?.status, 'DISPUTED');

    const settled = await review(apis.stuck, request.ref, {
      decision: 'FULFILLED',
      operator: 'amina',
      note: 'the provider fulfilled it after all; back office cancels the re-order',
    });
    assert.equal(settled.status, 200, settled.text);
    assert.equal(settled.body.status, 'FULFILLED');
    assert.deepEqual(mobileResultBesidesDebit(settled.body.result), {
      msisdn: request.msisdn,
      amount: request.amount,
    });
    const final = (await handleOf(request.ref).result()) as OrderView;
    assert.equal(final.status, 'FULFILLED', 'confirmed by the provider: not watched, the workflow is done');
  });

  describe('each contradiction rule, through the API (409/422 with the reason) and the signal (recorded, ignored)', () => {
    const cases = [
      {
        label: 'refunded-vs-fulfilled',
        provider: 'FULFILLED',
        decision: 'REFUNDED',
        reason: /reports FULFILLED/,
      },
      {
        label: 'fulfilled-vs-refunded',
        provider: 'REFUNDED',
        decision: 'FULFILLED',
        reason: /reports REFUNDED/,
      },
      {
        label: 'refunded-vs-pending',
        provider: 'PENDING',
        decision: 'REFUNDED',
        reason: /PENDING: it may still fulfil/,
      },
      {
        label: 'fulfilled-vs-handling',
        provider: 'HANDLING',
        decision: 'FULFILLED',
        reason: /HANDLING: it has not fulfilled the order yet/,
      },
    ] as const;
    for (const c of cases) {
      it(`${c.decision} while the provider says ${c.provider}: refused`, async () => {
        const viaApi = await unknownThen(`${c.label}-api`, c.provider);
        const viaSignal = await unknownThen(`${c.label}-sig`, c.provider);
        const decision = { decision: c.decision, operator: 'amina', note: 'my reading of the case' };

        const res = await review(apis.main, viaApi.ref, decision);
        assert.equal(res.status, 409, res.text);
        assert.equal(res.body.type, '/problems/decision-refused');
        assert.match(res.body.detail, c.reason);
        assert.equal(res.body.provider?.status, c.provider);
        assert.equal(res.body.forceable, true);
        assert.match(res.body.detail, /force: true/);

        const signalled = await signal(apis.main, viaSignal.ref, decision);
        assert.equal(signalled.status, 'NEEDS_REVIEW');
        assert.match(
          lastEvent(signalled),
          new RegExp(`${c.decision} by amina refused: .*${c.reason.source}`),
        );
      });
    }

    it('FULFILLED for a top-up the provider has no trace of: refused; REFUNDED: applied and watched', async () => {
      const [a, b, c] = [newRef('lost-a'), newRef('lost-b'), newRef('lost-c')].map((ref) =>
        mobileRequest(ref),
      );
      await Promise.all([a, b, c].map((r) => inReview(apis.lostSends, r!)));

      const fulfilled = await review(apis.lostSends, a!.ref, {
        decision: 'FULFILLED',
        operator: 'amina',
        note: 'x',
      });
      assert.equal(fulfilled.status, 409, fulfilled.text);
      assert.match(fulfilled.body.detail, /no trace of the top-up.*does not know the order/);
      const signalled = await signal(apis.lostSends, b!.ref, {
        decision: 'FULFILLED',
        operator: 'amina',
        note: 'x',
      });
      assert.match(lastEvent(signalled), /FULFILLED by amina refused: the provider has no trace/);

      const refunded = await review(apis.lostSends, c!.ref, {
        decision: 'REFUNDED',
        operator: 'amina',
        note: 'never reached the provider',
      });
      assert.equal(refunded.status, 200, refunded.text);
      assert.equal(refunded.body.status, 'REFUNDED');
      assert.equal(
        refunded.body.review?.resolution?.provider?.answer,
        'the provider does not know the order',
      );
      assert.ok(refunded.body.watch, 'watched, in case the send commits late');
    });

    it('the provider answers UNKNOWN_ERROR: REFUNDED is refused as its docs say (409 through the API, refused through the update and the signal) until forced with a note — by an operator, never by the back office it would pay (403 naming force); FULFILLED applies; both are watched', async () => {
      // One after the other: the tests around share the client's 16 requests at once.
      const [viaApi, viaUpdate, viaSignal, fulfilled] = ['api', 'update', 'sig', 'fulfilled'].map((l) =>
        mobileRequest(newRef(`unknown-${l}`), sandboxSpecialNumbers.unknownError),
      );
      for (const request of [viaApi, viaUpdate, viaSignal, fulfilled]) {
        const created = await apis.main.request('POST', '/v1/orders', { body: request });
        assert.equal(created.status, 201, created.text);
      }
      for (const request of [viaApi, viaUpdate, viaSignal, fulfilled])
        await pollUntil(apis.main, request!.ref, statusIs('NEEDS_REVIEW'));
      const refund = { decision: 'REFUNDED', operator: 'amina', note: 'customer says no credit' } as const;
      const guidance = /UNKNOWN_ERROR: its support resolves it to FULFILLED or REFUNDED within 1-24 h/;

      const res = await review(apis.main, viaApi!.ref, refund);
      assert.equal(res.status, 409, res.text);
      assert.equal(res.body.type, '/problems/decision-refused');
      assert.equal(res.body.refusal, 'unconfirmed');
      assert.equal(res.body.forceable, true);
      assert.equal(res.body.provider?.status, 'UNKNOWN_ERROR');
      assert.match(res.body.detail, guidance);
      assert.match(res.body.detail, /not to refund before it says so.*force: true/);
      const unchanged = await pollUntil(apis.main, viaApi!.ref, () => true);
      assert.equal(unchanged.status, 'NEEDS_REVIEW', 'a refused decision changes nothing');
      assert.match(
        lastEvent(unchanged),
        /REFUNDED by amina \(shop\) refused: the provider reports UNKNOWN_ERROR/,
      );

      const updated = await handleOf(viaUpdate!.ref).executeUpdate(decideReviewUpdate, { args: [refund] });
      assert.equal(updated.outcome, 'refused');
      assert.equal(updated.refusal?.kind, 'unconfirmed');
      assert.equal(updated.refusal?.forceable, true);
      assert.match(updated.refusal?.reason ?? '', guidance);
      assert.equal(updated.view.status, 'NEEDS_REVIEW');

      const signalled = await signal(apis.main, viaSignal!.ref, refund);
      assert.equal(signalled.status, 'NEEDS_REVIEW');
      assert.match(lastEvent(signalled), /REFUNDED by amina refused: the provider reports UNKNOWN_ERROR/);

      const forceWith = {
        ...refund,
        note: 'provider support confirmed the refund, ticket 4412',
        force: true,
      };
      // The back office that owns the order, which the refund would pay, may not force it (issue 36).
      const byOwner = await review(apis.main, viaApi!.ref, forceWith);
      assert.equal(byOwner.status, 403, byOwner.text);
      assert.equal(byOwner.body.type, '/problems/forbidden');
      assert.deepEqual(
        byOwner.body.errors?.map((e) => e.field),
        ['force'],
      );
      assert.match(byOwner.body.detail, /Only an operator may force/);
      const untouched = await pollUntil(apis.main, viaApi!.ref, () => true);
      assert.equal(untouched.status, 'NEEDS_REVIEW');
      assert.deepEqual(untouched.timeline, unchanged.timeline, 'nothing recorded');
      const forced = await review(apis.main, viaApi!.ref, forceWith, 'operator');
      assert.equal(forced.status, 200, forced.text);
      assert.equal(forced.body.status, 'REFUNDED');
      const resolution = forced.body.review?.resolution;
      assert.equal(resolution?.force, true);
      assert.match(resolution?.forcedPast ?? '', guidance);
      assert.equal(resolution?.provider?.status, 'UNKNOWN_ERROR');
      assert.ok(forced.body.watch?.until, 'watched: the provider may still credit the customer');
      const forcedByUpdate = await handleOf(viaUpdate!.ref).executeUpdate(decideReviewUpdate, {
        args: [forceWith],
      });
      assert.equal(forcedByUpdate.outcome, 'applied');
      assert.equal(forcedByUpdate.view.status, 'REFUNDED');
      const forcedBySignal = await signal(apis.main, viaSignal!.ref, forceWith);
      assert.equal(forcedBySignal.status, 'REFUNDED');
      assert.ok(
        forcedBySignal.timeline.some((e) => /Resolved as REFUNDED by amina, forced although/.test(e.event)),
      );

      const confirmed = await review(apis.main, fulfilled!.ref, {
        decision: 'FULFILLED',
        operator: 'amina',
        note: 'customer confirms the credit',
      });
      assert.equal(confirmed.status, 200, confirmed.text);
      assert.equal(confirmed.body.status, 'FULFILLED');
      assert.equal(confirmed.body.review?.resolution?.force, undefined, 'no force needed');
      assert.ok(confirmed.body.watch?.until);
    });

    it('the provider confirms the decision: applied with the provider’s result, not watched, the workflow completes', async () => {
      const request = await unknownThen('confirmed', 'FULFILLED');
      const res = await review(apis.main, request.ref, {
        decision: 'FULFILLED',
        operator: 'amina',
        note: 'x',
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(mobileResultBesidesDebit(res.body.result), {
        msisdn: request.msisdn,
        amount: request.amount,
      });
      assert.equal(res.body.watch, undefined);
      assert.match(lastEvent(res.body), /the provider confirms it/);
      assert.equal(((await handleOf(request.ref).result()) as OrderView).status, 'FULFILLED');
    });

    it('RECHECK through the API answers 200 with the view after it: here the provider settled the order', async () => {
      const request = await unknownThen('recheck', 'REFUNDED');
      const res = await review(apis.main, request.ref, {
        decision: 'RECHECK',
        operator: 'amina',
        note: 'again',
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.status, 'REFUNDED');
      assert.equal(res.body.watch, undefined, 'the provider settled it: nothing to watch');
    });

    it('force with RECHECK, or an orderId on a top-up, is refused before the order sees it (400 / 422 naming the field)', async () => {
      const request = await unknownThen('bad-fields');
      const before = await pollUntil(apis.main, request.ref, () => true);
      const forced = await review(apis.main, request.ref, {
        decision: 'RECHECK',
        operator: 'a',
        note: 'x',
        force: true,
      });
      assert.equal(forced.status, 400, forced.text);
      assert.deepEqual(
        forced.body.errors?.map((e) => e.field),
        ['force'],
      );
      const orderId = await review(apis.main, request.ref, {
        decision: 'FULFILLED',
        operator: 'a',
        note: 'x',
        orderId: 'abc123',
      });
      assert.equal(orderId.status, 422, orderId.text);
      assert.equal(orderId.body.type, '/problems/decision-invalid');
      assert.deepEqual(
        orderId.body.errors?.map((e) => e.field),
        ['orderId'],
      );
      const after = await pollUntil(apis.main, request.ref, () => true);
      assert.deepEqual(after.timeline, before.timeline, 'nothing recorded');
      assert.equal(after.status, 'NEEDS_REVIEW');
    });
  });

  it('when the provider cannot be asked: a slow check answers 202 and the decision lands later; a failing one is refused (409, forceable), force applies it', async () => {
    const flaky = sandboxes.flaky;
    const [slow, failing, signalled] = [newRef('slow'), newRef('failing'), newRef('failing-sig')].map((ref) =>
      mobileRequest(ref, sandboxSpecialNumbers.unknownError),
    );
    await Promise.all([slow, failing, signalled].map((r) => inReview(apis.flaky, r!)));
    try {
      // Under the test client's 1 s header timeout, so the check succeeds, slowly.
      await flaky.addFault({ kind: 'latency', latencyMs: 800, routes: ['mobile.check'] });
      const pending = await review(
        apis.impatient,
        slow!.ref,
        {
          decision: 'REFUNDED',
          operator: 'amina',
          note: 'provider support confirmed the refund',
          force: true,
        },
        'operator',
      );
      assert.equal(pending.status, 202, pending.text);
      assert.equal(pending.body.status, 'NEEDS_REVIEW');
      await pollUntil(apis.flaky, slow!.ref, statusIs('REFUNDED'));
      await flaky.clearFaults();

      await flaky.addFault({ kind: 'error', status: 503, routes: ['mobile.check'] });
      const refused = await review(apis.flaky, failing!.ref, {
        decision: 'REFUNDED',
        operator: 'amina',
        note: 'x',
      });
      assert.equal(refused.status, 409, refused.text);
      assert.equal(refused.body.refusal, 'unconfirmed');
      assert.equal(refused.body.forceable, true);
      assert.match(refused.body.detail, /could not be asked.*status check failed/);
      const viaSignal = await signal(apis.flaky, signalled!.ref, {
        decision: 'REFUNDED',
        operator: 'amina',
        note: 'x',
      });
      assert.match(lastEvent(viaSignal), /refused: the provider could not be asked/);

      const forced = await review(
        apis.flaky,
        failing!.ref,
        { decision: 'REFUNDED', operator: 'amina', note: 'provider portal shows the refund', force: true },
        'operator',
      );
      assert.equal(forced.status, 200, forced.text);
      assert.equal(forced.body.status, 'REFUNDED');
      assert.match(forced.body.review?.resolution?.forcedPast ?? '', /could not be asked/);
    } finally {
      await flaky.clearFaults();
    }
  });

  describe('gift cards: the provider’s orderId', () => {
    /** A gift card whose placement answer was lost (in review, no orderId), and the orderId the sandbox gave it. */
    async function lostPlacement(label: string, quantity: number): Promise<{ ref: string; orderId: string }> {
      const request = giftCardRequest(newRef(label), quantity);
      const view = await inReview(apis.giftCards, request);
      assert.equal(view.providerReference, undefined);
      // Each test orders its own quantity, so its order is the one with that quantity.
      const placed = await sandboxes.giftCards.giftCardOrders();
      const mine = placed.filter((o) => o.quantity === quantity);
      assert.equal(mine.length, 1, `one order of ${quantity}`);
      return { ref: request.ref, orderId: mine[0]!.orderId };
    }

    it('FULFILLED with the orderId: the provider’s order is checked and its cards delivered', async () => {
      const { ref, orderId } = await lostPlacement('gift-id', 2);
      const res = await review(apis.giftCards, ref, {
        decision: 'FULFILLED',
        operator: 'amina',
        note: 'found the order in the provider portal',
        orderId,
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.status, 'FULFILLED');
      assert.equal(res.body.providerReference, orderId);
      assert.equal(res.body.result?.cards?.length, 2);
      assert.ok(res.body.result?.cards?.every((c) => /^\d+$/.test(c.code) && c.serial));
    });

    it('FULFILLED with the orderId of an order still HANDLING: polling resumes and the cards come when it is fulfilled', async () => {
      const { ref, orderId } = await lostPlacement('gift-open', 3);
      await sandboxes.giftCards.changeGiftCardOrder(orderId, { status: 'HANDLING' });
      const res = await review(apis.giftCards, ref, {
        decision: 'FULFILLED',
        operator: 'amina',
        note: 'x',
        orderId,
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.status, 'PROCESSING');
      assert.ok(
        res.body.timeline.some(
          (e) =>
            e.event ===
            `The provider’s order ${orderId}, given by amina (shop), is HANDLING: polling it again`,
        ),
        JSON.stringify(res.body.timeline),
      );
      assert.equal(res.body.providerReference, orderId);

      await sandboxes.giftCards.changeGiftCardOrder(orderId, { status: 'FULFILLED' });
      const view = await pollUntil(apis.giftCards, ref, statusIs('FULFILLED'));
      assert.equal(view.result?.cards?.length, 3);
    });

    it('without an orderId, FULFILLED is refused (422: the cards need it) and REFUNDED applies, unwatched', async () => {
      const { ref } = await lostPlacement('gift-none', 4);
      const fulfilled = await review(apis.giftCards, ref, {
        decision: 'FULFILLED',
        operator: 'amina',
        note: 'x',
      });
      assert.equal(fulfilled.status, 422, fulfilled.text);
      assert.match(fulfilled.body.detail, /with the provider’s orderId, so its cards can be delivered/);
      assert.equal(fulfilled.body.forceable, true);

      const refunded = await review(apis.giftCards, ref, {
        decision: 'REFUNDED',
        operator: 'amina',
        note: 'x',
      });
      assert.equal(refunded.status, 200, refunded.text);
      assert.equal(refunded.body.status, 'REFUNDED');
      assert.equal(refunded.body.watch, undefined);
      assert.match(lastEvent(refunded.body), /Not watched: the order has no provider reference/);
    });

    it('an orderId the provider does not know: refused (422) even forced, through the API and the signal', async () => {
      const { ref } = await lostPlacement('gift-unknown', 5);
      const decision = {
        decision: 'FULFILLED',
        operator: 'amina',
        note: 'x',
        orderId: 'no-such-order',
        force: true,
      };
      const res = await review(apis.giftCards, ref, decision, 'operator');
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.forceable, false);
      assert.match(res.body.detail, /does not know this orderId/);
      const signalled = await signal(apis.giftCards, ref, decision);
      assert.equal(signalled.status, 'NEEDS_REVIEW');
      assert.match(lastEvent(signalled), /refused: the provider does not know this orderId/);
    });
  });

  describe('the watch after a decision', () => {
    it('FULFILLED on UNKNOWN_ERROR, then the provider refunds: DISPUTED; REFUNDED then settles it, confirmed', async () => {
      const request = await unknownThen('reverse');
      const res = await review(apis.main, request.ref, {
        decision: 'FULFILLED',
        operator: 'amina',
        note: 'x',
      });
      assert.equal(res.status, 200, res.text);

      await sandboxes.main.changeTopup(providerRefOf(request.ref), { status: 'REFUNDED' });
      const disputed = await pollUntil(apis.main, request.ref, statusIs('DISPUTED'));
      assert.deepEqual(
        { decision: disputed.dispute?.decision, providerStatus: disputed.dispute?.providerStatus },
        { decision: 'FULFILLED', providerStatus: 'REFUNDED' },
      );
      const settled = await review(apis.main, request.ref, {
        decision: 'REFUNDED',
        operator: 'amina',
        note: 'x',
      });
      assert.equal(settled.status, 200, settled.text);
      assert.equal(settled.body.status, 'REFUNDED');
    });

    it('FULFILLED forced while an internet top-up is HANDLING: when the provider fulfils it the watch confirms and delivers the card code', async () => {
      const request = internetRequest(newRef('confirm'));
      await sandboxes.main.changeTopup(providerRefOf(request.ref), { status: 'HANDLING' });
      await inReview(apis.stuck, request);
      const unforced = await review(apis.stuck, request.ref, {
        decision: 'FULFILLED',
        operator: 'amina',
        note: 'x',
      });
      assert.equal(unforced.status, 409, unforced.text);
      assert.equal(unforced.body.refusal, 'unconfirmed');

      const forced = await review(
        apis.stuck,
        request.ref,
        { decision: 'FULFILLED', operator: 'amina', note: 'customer confirmed the recharge', force: true },
        'operator',
      );
      assert.equal(forced.status, 200, forced.text);
      assert.equal(forced.body.result?.cardCode, undefined, 'no code yet');

      await sandboxes.main.changeTopup(providerRefOf(request.ref), { status: 'FULFILLED' });
      const final = (await handleOf(request.ref).result()) as OrderView;
      assert.equal(final.status, 'FULFILLED');
      assert.equal(final.watch?.ended?.outcome, 'confirmed');
      assert.match(final.result?.cardCode ?? '', /^\d+$/);
    });

    it('a watch the provider never contradicts ends when its window does; the order completed at the decision', async () => {
      const request = mobileRequest(newRef('quiet'), sandboxSpecialNumbers.unknownError);
      await inReview(apis.shortWatch, request);
      const res = await review(
        apis.shortWatch,
        request.ref,
        {
          decision: 'REFUNDED',
          operator: 'amina',
          note: 'provider support confirmed the refund',
          force: true,
        },
        'operator',
      );
      assert.equal(res.status, 200, res.text);

      const final = (await handleOf(request.ref).result()) as OrderView;
      assert.equal(final.status, 'REFUNDED');
      assert.equal(final.watch?.ended?.outcome, 'quiet');
      assert.ok(final.watch?.lastCheck?.at, 'the provider was checked');
      assert.ok(Date.parse(final.completedAt ?? '') < Date.parse(final.watch?.ended?.at ?? ''));
      assert.match(lastEvent(final), /Watch ended: the provider did not contradict REFUNDED/);
    });
  });

  it('two decisions at once through the API: one is applied, the other answered 409 (not in review)', async () => {
    const request = await unknownThen('concurrent');
    const answers = await Promise.all([
      review(apis.main, request.ref, { decision: 'FULFILLED', operator: 'amina', note: 'x' }),
      review(
        apis.main,
        request.ref,
        { decision: 'REFUNDED', operator: 'karim', note: 'y', force: true },
        'operator',
      ),
    ]);
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 409], answers.map((a) => a.text).join('\n'));
    assert.equal(answers.find((a) => a.status === 409)?.body.type, '/problems/order-not-in-review');
    const view = await pollUntil(apis.main, request.ref, () => true);
    assert.equal(view.timeline.filter((e) => e.event.startsWith('Resolved as')).length, 1);
    assert.equal(view.status, answers.find((a) => a.status === 200)?.body.status);
  });

  it('a malformed update (sent past the API) is rejected by the validator and leaves nothing in the history', async () => {
    const request = await unknownThen('malformed');
    const handle = handleOf(request.ref);
    const before = await pollUntil(apis.main, request.ref, () => true);
    for (const payload of [
      { decision: 'MAYBE', operator: '' },
      'FULFILLED',
      { decision: 'REFUNDED', operator: 'a', note: 'x', hack: 1 },
    ]) {
      await assert.rejects(
        handle.executeUpdate(decideReviewUpdate, { args: [payload as unknown as ReviewDecision] }),
        (err: unknown) =>
          err instanceof WorkflowUpdateFailedError &&
          err.cause instanceof ApplicationFailure &&
          err.cause.type === DecisionRejection.invalid,
      );
    }
    const history = await handle.fetchHistory();
    const updateEvents = (history.events ?? []).filter(
      (e) =>
        e.workflowExecutionUpdateAcceptedEventAttributes || e.workflowExecutionUpdateCompletedEventAttributes,
    );
    assert.equal(updateEvents.length, 0, 'no update in the history');
    const after = await pollUntil(apis.main, request.ref, () => true);
    assert.deepEqual(after.timeline, before.timeline);
  });

  it('decidedBy, set by the API from the caller, is recorded with the resolution and in the timeline', async () => {
    const request = await unknownThen('decided-by');
    const res = await review(apis.main, request.ref, { decision: 'FULFILLED', operator: 'amina', note: 'x' });
    assert.equal(res.status, 200, res.text);
    const view = res.body as OrderView;
    assert.equal(view.review?.resolution?.decidedBy, 'shop');
    assert.equal(view.review?.resolution?.operator, 'amina');
    assert.ok(view.timeline.some((e) => e.event.startsWith('Resolved as FULFILLED by amina (shop)')));
  });

  it('the resolveReview signal sent with the temporal CLI resolves the order', async () => {
    const cli = findTemporalCli();
    assert.ok(cli, 'the Temporal CLI is installed (npm run setup)');
    const request = await unknownThen('cli');
    const input = JSON.stringify({ decision: 'FULFILLED', operator: 'amina', note: 'via the CLI' });
    await run(cli, [
      'workflow',
      'signal',
      '--address',
      env.temporal.address,
      '--namespace',
      env.temporal.namespace,
      '--workflow-id',
      orderWorkflowId(request.ref),
      '--name',
      'resolveReview',
      '--input',
      input,
    ]);
    const view = await pollUntil(apis.main, request.ref, statusIs('FULFILLED'));
    assert.equal(view.review?.resolution?.operator, 'amina');
    assert.equal(view.review?.resolution?.note, 'via the CLI');
    assert.equal(view.review?.resolution?.decidedBy, undefined, 'Temporal records who sent a signal');
  });

  it('the decideReview update sent with the temporal CLI answers the outcome (docs/operators.md: operator’s guide)', async () => {
    const cli = findTemporalCli();
    assert.ok(cli, 'the Temporal CLI is installed (npm run setup)');
    const refused = await unknownThen('cli-update', 'FULFILLED');
    const updateWith = (decision: object) =>
      run(cli, [
        'workflow',
        'update',
        'execute',
        '--address',
        env.temporal.address,
        '--namespace',
        env.temporal.namespace,
        '--workflow-id',
        orderWorkflowId(refused.ref),
        '--name',
        'decideReview',
        '--output',
        'json',
        '--input',
        JSON.stringify(decision),
      ]);
    const { stdout } = await updateWith({ decision: 'REFUNDED', operator: 'amina', note: 'via the CLI' });
    const answer = JSON.parse(stdout) as { result: { outcome: string; refusal?: { reason: string } } };
    assert.equal(answer.result.outcome, 'refused');
    assert.match(answer.result.refusal?.reason ?? '', /reports FULFILLED/);
  });
});
