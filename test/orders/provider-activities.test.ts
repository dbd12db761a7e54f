/**
 * The provider activities alone, in Temporal's mock activity context, with a scripted provider:
 * the never-send-twice rules and the ProviderError → Temporal failure mapping.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../src/worker/activities';
import { type OrderProvider } from '../../src/orders/order.activities';
import { ProviderFailureType, type PollOutcome, type PollPlan } from '../../contract/activity-outcomes';
import { ProviderError } from '../../src/provider/errors';
import type { MobileCheck } from '../../src/provider/wire';
import { giftCardRequest, mobileRequest } from '../helpers/orders';
import { attemptDeadline, marginMs, withinAttempt } from '../../src/provider/attempt-deadline';
import type { ProviderFailureKind } from '../../contract/provider';

type Method = keyof OrderProvider;
type Answer = unknown;

/** A provider whose methods answer from a script, in order, and record every call. */
function scriptedProvider(script: Partial<Record<Method, Answer[]>>, { localSends = true } = {}) {
  const calls: Method[] = [];
  const provider = new Proxy({} as OrderProvider, {
    get: (_target, method: Method) => async () => {
      calls.push(method);
      const answer = script[method]?.shift();
      if (answer === undefined) throw new Error(`unexpected call: ${method}`);
      if (answer instanceof Error) throw answer;
      return answer;
    },
  });
  return { activities: createActivities({ provider, localSends }), calls };
}

function providerError(
  kind: ProviderFailureKind,
  extra: { status?: number; code?: string; retryAfterMs?: number } = {},
) {
  return new ProviderError({ kind, operation: 'op', ...extra }, `op: ${kind}`);
}

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => assert.fail('expected a failure'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApplicationFailure, `an ApplicationFailure, got ${String(err)}`);
  return err;
}

const request = mobileRequest('ref-1');
const fulfilled: MobileCheck = { status: 'FULFILLED', MSSIDN: request.msisdn, topup_amount: 500 };
const firstAttempt = new MockActivityEnvironment({ attempt: 1 });
const retry = new MockActivityEnvironment({ attempt: 2 });
const withRef = { providerRef: 'p-ref-1' };

describe('top-up send activity: one send, never repeated by Temporal', () => {
  it('sends once, with the provider ref, without looking anything up', async () => {
    const sent: unknown[] = [];
    const provider = new Proxy({} as OrderProvider, {
      get: (_target, method) => async (body: unknown) => {
        sent.push([method, body]);
        return { topupId: 't1', topupRef: 'p-ref-1' };
      },
    });
    const result = await firstAttempt.run(createActivities({ provider }).sendMobileTopup, request, withRef);

    assert.deepEqual(result, { providerReference: 't1', alreadySent: false });
    assert.deepEqual(sent, [
      [
        'sendMobileTopup',
        { plan_code: 'PREPAID_DJEZZY', MSSIDN: request.msisdn, amount: 500, ref: 'p-ref-1' },
      ],
    ]);
  });

  it('reports a 409 as ProviderDuplicateRef, non-retryable, without looking the ref up: the workflow knows whose it is', async () => {
    const { activities, calls } = scriptedProvider({
      sendMobileTopup: [providerError('duplicate_ref', { status: 409, code: 'DUPLICATE_REF' })],
    });
    const failure = await failureOf(firstAttempt.run(activities.sendMobileTopup, request, withRef));

    assert.equal(failure.type, ProviderFailureType.duplicateRef);
    assert.equal(failure.nonRetryable, true);
    assert.deepEqual(calls, ['sendMobileTopup']);
  });

  for (const [kind, type] of [
    ['outcome_unknown', ProviderFailureType.outcomeUnknown],
    ['not_reached', ProviderFailureType.notReached],
    ['rate_limited', ProviderFailureType.rateLimited],
  ] as const) {
    it(`fails ${kind} non-retryably as ${type}: only the workflow decides to send again`, async () => {
      const { activities } = scriptedProvider({ sendMobileTopup: [providerError(kind)] });
      const failure = await failureOf(firstAttempt.run(activities.sendMobileTopup, request, withRef));
      assert.equal(failure.type, type);
      assert.equal(failure.nonRetryable, true);
    });
  }

  it('refuses to run as a retry (attempt 2): the attempt before may have reached the provider', async () => {
    const { activities, calls } = scriptedProvider({});
    const failure = await failureOf(retry.run(activities.sendMobileTopup, request, withRef));

    assert.equal(failure.type, ProviderFailureType.outcomeUnknown);
    assert.equal(failure.nonRetryable, true);
    assert.deepEqual(calls, []);
  });
});

describe('provider calls end within their activity attempt', () => {
  const times = {
    startToCloseTimeoutMs: 30_000,
    scheduledTimestampMs: 40_000,
    scheduleToCloseTimeoutMs: 0,
    isLocal: false,
  };

  it('the deadline is when the attempt started plus start-to-close, minus a margin', () => {
    assert.equal(attemptDeadline(times, 100_000), 130_000 - 1_000);
    assert.equal(marginMs(500), 50);
    assert.equal(marginMs(2_000), 200);
  });

  it("a local attempt counts from when the worker scheduled it, if its code started later, and keeps a quarter of its time to report before the SDK core's timeout", () => {
    const local = {
      startToCloseTimeoutMs: 5_000,
      scheduledTimestampMs: 100_000,
      scheduleToCloseTimeoutMs: 0,
    };
    // Its code started 800 ms after the schedule (a busy event loop): the core's clock started no later.
    assert.equal(
      attemptDeadline({ ...local, isLocal: true, currentAttemptScheduledTimestampMs: 100_000 }, 100_800),
      105_000 - 1_250,
    );
    // Not local: from its start, with the usual margin.
    assert.equal(
      attemptDeadline({ ...local, isLocal: false, currentAttemptScheduledTimestampMs: 100_000 }, 100_800),
      105_800 - 500,
    );
  });

  it('an earlier schedule-to-close deadline wins', () => {
    assert.equal(attemptDeadline({ ...times, scheduleToCloseTimeoutMs: 80_000 }, 100_000), 120_000 - 1_000);
  });

  it('on a worker whose clock is ahead, a regular activity’s schedule-to-close ends that much later on it; a local one’s is on its own clock already', () => {
    const closing = { ...times, scheduleToCloseTimeoutMs: 80_000 };
    // (A local one keeps a quarter of its start-to-close to report: localMarginMs.)
    // 3 minutes ahead: the server scheduled it at 40 s, which this worker reads as 220 s, and the
    // attempt started at 221 s on the worker's clock; its start-to-close ends at 251 s.
    assert.equal(attemptDeadline(closing, 221_000, 180_000), 251_000 - 1_000);
    // Its schedule-to-close of 20 s ends at 240 s on this clock, before the start-to-close.
    assert.equal(
      attemptDeadline({ ...closing, scheduleToCloseTimeoutMs: 20_000 }, 221_000, 180_000),
      240_000 - 1_000,
    );
    assert.equal(attemptDeadline({ ...closing, isLocal: true }, 100_000, 180_000), 120_000 - 7_500);
  });

  it('inside an activity, the call gets a signal that fires at that deadline; a later call of the same attempt shares it', async () => {
    const now = Date.now();
    const env = new MockActivityEnvironment({
      currentAttemptScheduledTimestampMs: now,
      startToCloseTimeoutMs: 1_000,
      scheduleToCloseTimeoutMs: 0,
    });
    const signal = (await env.run(async () => withinAttempt(now).signal)) as AbortSignal;
    assert.equal(signal.aborted, false);
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(signal.aborted, true, 'fired by 900 ms');
    const late = (await env.run(async () => withinAttempt(now + 5_000).signal)) as AbortSignal;
    assert.equal(late.aborted, true, 'a second call 5 s into a 1 s attempt has no time left');
  });

  it('a task that waited in the queue longer than its start-to-close still has its whole start-to-close once it starts', async () => {
    const now = Date.now();
    const env = new MockActivityEnvironment({
      scheduledTimestampMs: now - 60_000,
      currentAttemptScheduledTimestampMs: now - 60_000,
      startToCloseTimeoutMs: 5_000,
      scheduleToCloseTimeoutMs: 0,
    });
    const signal = (await env.run(async () => withinAttempt(now).signal)) as AbortSignal;
    assert.equal(signal.aborted, false);
  });

  it('the signal fires when the activity is cancelled', async () => {
    const env = new MockActivityEnvironment({
      currentAttemptScheduledTimestampMs: Date.now(),
      startToCloseTimeoutMs: 60_000,
      scheduleToCloseTimeoutMs: 0,
    });
    const signal = (await env.run(async () => withinAttempt().signal)) as AbortSignal;
    assert.equal(signal.aborted, false);
    env.cancel();
    assert.equal(signal.aborted, true);
  });
});

describe('gift-card placement activity', () => {
  for (const [kind, type] of [
    ['outcome_unknown', ProviderFailureType.outcomeUnknown],
    ['refused', ProviderFailureType.rejected],
  ] as const) {
    it(`when placement fails as ${kind}, fails non-retryably as ${type}: it may not be placed again`, async () => {
      const { activities, calls } = scriptedProvider({ placeGiftCardOrder: [providerError(kind)] });
      const failure = await failureOf(
        firstAttempt.run(activities.placeGiftCardOrder, giftCardRequest('g-1')),
      );
      assert.equal(failure.type, type);
      assert.equal(failure.nonRetryable, true);
      assert.deepEqual(calls, ['placeGiftCardOrder']);
    });
  }

  for (const [kind, type] of [
    ['not_reached', ProviderFailureType.notReached],
    ['rate_limited', ProviderFailureType.rateLimited],
  ] as const) {
    it(`when placement fails as ${kind}, fails retryably as ${type} and says so in its last heartbeat`, async () => {
      const { activities } = scriptedProvider({ placeGiftCardOrder: [providerError(kind)] });
      const env = new MockActivityEnvironment({ attempt: 1 });
      const beats: unknown[] = [];
      env.on('heartbeat', (details: unknown) => beats.push(details));
      const failure = await failureOf(env.run(activities.placeGiftCardOrder, giftCardRequest('g-1')));
      assert.equal(failure.type, type);
      assert.equal(failure.nonRetryable, false);
      assert.deepEqual(beats, [{ notReachedAttempt: 1 }]);
    });
  }

  it('places again on the attempt after one that certainly never reached the provider', async () => {
    const { activities, calls } = scriptedProvider({ placeGiftCardOrder: [{ orderId: 'o-2' }] });
    const env = new MockActivityEnvironment({ attempt: 2, heartbeatDetails: { notReachedAttempt: 1 } });
    assert.deepEqual(await env.run(activities.placeGiftCardOrder, giftCardRequest('g-1')), {
      providerReference: 'o-2',
      alreadySent: false,
    });
    assert.deepEqual(calls, ['placeGiftCardOrder']);
  });

  it('refuses to place on an attempt after one that may have reached the provider (it timed out, its worker died)', async () => {
    const { activities, calls } = scriptedProvider({ placeGiftCardOrder: [{ orderId: 'o-2' }] });
    for (const env of [
      new MockActivityEnvironment({ attempt: 2 }),
      // Attempt 2 was not reached, attempt 3 then timed out: attempt 4 finds attempt 2's word only.
      new MockActivityEnvironment({ attempt: 4, heartbeatDetails: { notReachedAttempt: 2 } }),
    ]) {
      const failure = await failureOf(env.run(activities.placeGiftCardOrder, giftCardRequest('g-1')));
      assert.equal(failure.type, ProviderFailureType.outcomeUnknown);
      assert.equal(failure.nonRetryable, true);
    }
    assert.deepEqual(calls, []);
  });
});

describe('status check activities', () => {
  it('when the provider does not know the ref, answer "not found" instead of failing', async () => {
    const { activities } = scriptedProvider({
      checkInternetTopup: [providerError('not_found', { status: 404 })],
    });
    assert.deepEqual(await firstAttempt.run(activities.checkInternetTopup, 'ref-2'), { found: false });
  });

  it('when the provider answers, return its answer', async () => {
    const check = { status: 'FULFILLED', cards: [{ value: '1234', serial: 'S1' }] };
    const { activities } = scriptedProvider({ checkGiftCardOrder: [check] });
    assert.deepEqual(await firstAttempt.run(activities.checkGiftCardOrder, 'order-1'), {
      found: true,
      check,
    });
  });
});

describe('the first send, a local activity', () => {
  const local = new MockActivityEnvironment({ attempt: 1, isLocal: true, scheduledTimestampMs: Date.now() });

  it('when scheduled after its window (it may re-run a send of a task that ran before), refuses as outcome unknown and sends nothing', async () => {
    const { activities, calls } = scriptedProvider({ sendMobileTopup: [{ topupId: 't-1' }] });
    const late = new MockActivityEnvironment({ attempt: 1, isLocal: true, scheduledTimestampMs: Date.now() });
    const failure = await failureOf(
      late.run(activities.sendMobileTopup, request, { ...withRef, notAfter: Date.now() - 1_000 }),
    );
    assert.equal(failure.type, ProviderFailureType.outcomeUnknown);
    assert.equal(failure.nonRetryable, true);
    assert.deepEqual(calls, []);
  });

  it("when the order's first workflow task may have sent before, refuses as outcome unknown and sends nothing, locally or through the queue, on any worker", async () => {
    for (const localSends of [true, false]) {
      const { activities, calls } = scriptedProvider(
        { sendMobileTopup: [{ topupId: 't-1' }], placeGiftCardOrder: [{ orderId: 'o-1' }] },
        { localSends },
      );
      const earlier = { earlierTaskMayHaveSent: true };
      for (const env of [local, firstAttempt]) {
        const send = await failureOf(
          env.run(activities.sendMobileTopup, request, { ...withRef, ...earlier }),
        );
        const place = await failureOf(
          env.run(activities.placeGiftCardOrder, giftCardRequest('g-1'), earlier),
        );
        assert.equal(send.type, ProviderFailureType.outcomeUnknown);
        assert.equal(place.type, ProviderFailureType.outcomeUnknown);
        assert.match(send.message, /first workflow task did not complete/);
      }
      assert.deepEqual(calls, []);
    }
  });

  it('within its window, sends once', async () => {
    const { activities, calls } = scriptedProvider({ sendMobileTopup: [{ topupId: 't-1' }] });
    const submission = await local.run(activities.sendMobileTopup, request, {
      ...withRef,
      notAfter: Date.now() + 5_000,
    });
    assert.deepEqual(submission, { providerReference: 't-1', alreadySent: false });
    assert.deepEqual(calls, ['sendMobileTopup']);
  });

  it('on a worker whose provider calls are rate-limited by the task queue, declines a local send or placement unsent', async () => {
    const { activities, calls } = scriptedProvider(
      { sendMobileTopup: [{ topupId: 't-1' }], placeGiftCardOrder: [{ orderId: 'o-1' }] },
      { localSends: false },
    );
    const send = await failureOf(local.run(activities.sendMobileTopup, request, withRef));
    const place = await failureOf(local.run(activities.placeGiftCardOrder, giftCardRequest('g-1'), {}));
    assert.equal(send.type, ProviderFailureType.localSendDeclined);
    assert.equal(place.type, ProviderFailureType.localSendDeclined);
    assert.deepEqual(calls, []);
    // The same worker sends through the task queue.
    await firstAttempt.run(activities.sendMobileTopup, request, withRef);
    assert.deepEqual(calls, ['sendMobileTopup']);
  });
});

describe('polling activity: one check per attempt, retried by the server', () => {
  const plan = (overrides: Partial<PollPlan> = {}): PollPlan => ({
    firstCheckMs: 5_000,
    handlingCheckMs: 15_000,
    maxIntervalMs: 60_000,
    until: Date.now() + 600_000,
    ...overrides,
  });
  /** An attempt of an activity scheduled `scheduledAgoMs` ago, carrying `heartbeatDetails`; records its heartbeats. */
  function attempt(scheduledAgoMs: number, heartbeatDetails?: unknown) {
    const env = new MockActivityEnvironment({
      attempt: heartbeatDetails ? 3 : 1,
      scheduledTimestampMs: Date.now() - scheduledAgoMs,
      heartbeatDetails,
    });
    const beats: unknown[] = [];
    env.on('heartbeat', (details: unknown) => beats.push(details));
    return { env, beats };
  }

  it('a first attempt before the first check is due asks nothing and is retried when it is due', async () => {
    const { activities, calls } = scriptedProvider({});
    const failure = await failureOf(attempt(0).env.run(activities.pollMobileTopup, 'p-ref', plan()));
    assert.equal(failure.type, ProviderFailureType.stillOpen);
    assert.equal(failure.nonRetryable, false);
    assert.ok(Number(failure.nextRetryDelay) > 4_900 && Number(failure.nextRetryDelay) <= 5_000);
    assert.deepEqual(calls, []);
  });

  it('follows the provider: HANDLING → retried after the HANDLING time with what it saw in its heartbeat; FULFILLED → returns every answer', async () => {
    const handling: MobileCheck = { status: 'HANDLING', MSSIDN: request.msisdn, topup_amount: 500 };
    const { activities, calls } = scriptedProvider({ checkMobileTopup: [handling, handling, fulfilled] });

    const first = attempt(5_000);
    const open = await failureOf(first.env.run(activities.pollMobileTopup, 'p-ref', plan()));
    assert.equal(open.type, ProviderFailureType.stillOpen);
    assert.equal(open.nextRetryDelay, 15_000);
    assert.equal(first.beats.length, 1);
    const progress = first.beats[0] as PollOutcome<MobileCheck>;
    assert.deepEqual(
      progress.observed.map((o) => [o.answer, o.times]),
      [['HANDLING', 1]],
    );

    // Still HANDLING: folded into the same entry, and the interval doubles from the HANDLING wait.
    const second = attempt(20_000, progress);
    const again = await failureOf(second.env.run(activities.pollMobileTopup, 'p-ref', plan()));
    assert.equal(again.nextRetryDelay, 30_000);
    const last = attempt(50_000, second.beats[0]);
    const outcome = (await last.env.run(
      activities.pollMobileTopup,
      'p-ref',
      plan(),
    )) as PollOutcome<MobileCheck>;
    assert.equal(outcome.settled, true);
    assert.equal(outcome.checks, 3);
    assert.deepEqual(
      outcome.observed.map((o) => [o.answer, o.times]),
      [
        ['HANDLING', 2],
        ['FULFILLED', 1],
      ],
    );
    assert.deepEqual(outcome.observed.at(-1)?.check, fulfilled);
    assert.deepEqual(calls, ['checkMobileTopup', 'checkMobileTopup', 'checkMobileTopup']);
  });

  it('a failed check is retried with back-off (429: after Retry-After), and the order stays open', async () => {
    const { activities } = scriptedProvider({
      checkMobileTopup: [
        providerError('outcome_unknown'),
        providerError('rate_limited', { retryAfterMs: 7_000 }),
      ],
    });
    const first = attempt(5_000);
    const failed = await failureOf(first.env.run(activities.pollMobileTopup, 'p-ref', plan()));
    // Its own type (not "still open"), retryable whatever it is: a check is safe to repeat.
    assert.equal(failed.type, ProviderFailureType.outcomeUnknown);
    assert.equal(failed.nonRetryable, false);
    assert.equal(failed.nextRetryDelay, 1_000);
    const limited = await failureOf(
      attempt(6_000, first.beats[0]).env.run(activities.pollMobileTopup, 'p-ref', plan()),
    );
    assert.equal(limited.type, ProviderFailureType.rateLimited);
    assert.equal(limited.nextRetryDelay, 7_000);
  });

  /** An attempt with a real start-to-close (`startToCloseMs`), scheduled `scheduledAgoMs` ago. */
  function longAttempt(scheduledAgoMs: number, startToCloseMs: number, heartbeatDetails?: unknown) {
    const env = new MockActivityEnvironment({
      attempt: heartbeatDetails ? 2 : 1,
      scheduledTimestampMs: Date.now() - scheduledAgoMs,
      currentAttemptScheduledTimestampMs: Date.now(),
      startToCloseTimeoutMs: startToCloseMs,
      scheduleToCloseTimeoutMs: 0,
      heartbeatDetails,
    });
    const beats: unknown[] = [];
    env.on('heartbeat', (details: unknown) => beats.push(details));
    return { env, beats };
  }
  const pending: MobileCheck = { status: 'PENDING', MSSIDN: request.msisdn, topup_amount: 500 };

  it('checks that fit in the attempt are waited for in it: PENDING then FULFILLED in one attempt, no heartbeat', async () => {
    const { activities, calls } = scriptedProvider({ checkMobileTopup: [pending, fulfilled] });
    const { env, beats } = longAttempt(0, 3_000);
    const started = Date.now();
    const outcome = (await env.run(
      activities.pollMobileTopup,
      'p-ref',
      plan({ firstCheckMs: 100, handlingCheckMs: 300 }),
    )) as PollOutcome<MobileCheck>;
    const tookMs = Date.now() - started;
    assert.equal(outcome.settled, true);
    assert.equal(outcome.checks, 2);
    assert.deepEqual(
      outcome.observed.map((o) => o.answer),
      ['PENDING', 'FULFILLED'],
    );
    assert.deepEqual(beats, []);
    assert.equal(outcome.heartbeats ?? 0, 0);
    // The first check waited for its due time (100 ms), the second for PENDING's doubled wait.
    assert.ok(tookMs >= 290, `took ${tookMs} ms`);
    assert.deepEqual(calls, ['checkMobileTopup', 'checkMobileTopup']);
  });

  it('a check due past what the attempt can hold goes to the server, with what it saw in one heartbeat', async () => {
    const handling: MobileCheck = { status: 'HANDLING', MSSIDN: request.msisdn, topup_amount: 500 };
    const { activities } = scriptedProvider({ checkMobileTopup: [handling, fulfilled] });
    // 4 s start-to-close: a check may be held up to ~2.6 s in; HANDLING's is due 15 s later.
    const first = longAttempt(0, 4_000);
    const open = await failureOf(
      first.env.run(activities.pollMobileTopup, 'p-ref', plan({ firstCheckMs: 50 })),
    );
    assert.equal(open.type, ProviderFailureType.stillOpen);
    assert.ok(Number(open.nextRetryDelay) > 14_000 && Number(open.nextRetryDelay) <= 15_000);
    assert.equal(first.beats.length, 1);
    const outcome = (await longAttempt(15_000, 4_000, first.beats[0]).env.run(
      activities.pollMobileTopup,
      'p-ref',
      plan({ firstCheckMs: 50 }),
    )) as PollOutcome<MobileCheck>;
    assert.deepEqual(
      outcome.observed.map((o) => o.answer),
      ['HANDLING', 'FULFILLED'],
    );
    assert.equal(outcome.heartbeats, 1);
  });

  it('on a worker that does not hold polls (rate-limited provider calls), every check is an attempt of its own', async () => {
    const checks: string[] = [];
    const alwaysPending = new Proxy({} as OrderProvider, {
      get: (_target, method: Method) => () => {
        checks.push(method);
        return Promise.resolve(pending);
      },
    });
    const activities = createActivities({ provider: alwaysPending, holdPolls: false });
    const first = longAttempt(0, 30_000);
    const notDue = await failureOf(
      first.env.run(activities.pollMobileTopup, 'p-ref', plan({ firstCheckMs: 200 })),
    );
    assert.equal(notDue.type, ProviderFailureType.stillOpen);
    assert.deepEqual(first.beats, [], 'nothing seen, nothing recorded');
    const second = longAttempt(200, 30_000);
    const open = await failureOf(
      second.env.run(activities.pollMobileTopup, 'p-ref', plan({ firstCheckMs: 0 })),
    );
    assert.ok(Number(open.nextRetryDelay) > 0);
    assert.equal(second.beats.length, 1);
    assert.deepEqual(checks, ['checkMobileTopup']);
  });

  it('a worker shutting down while an attempt waits hands the wait to the server, with what it saw', async () => {
    const handling: MobileCheck = { status: 'HANDLING', MSSIDN: request.msisdn, topup_amount: 500 };
    const { activities } = scriptedProvider({ checkMobileTopup: [handling] });
    // HANDLING's next check, 15 s on, fits in a 30 s attempt: the attempt waits for it.
    const waiting = longAttempt(0, 30_000);
    const run = waiting.env.run(activities.pollMobileTopup, 'p-ref', plan({ firstCheckMs: 10 }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    waiting.env.cancel('WORKER_SHUTDOWN');
    const handed = await failureOf(run);
    assert.equal(handed.type, ProviderFailureType.stillOpen);
    assert.ok(Number(handed.nextRetryDelay) > 14_000 && Number(handed.nextRetryDelay) < 15_000);
    assert.equal(waiting.beats.length, 1);
    assert.deepEqual(
      (waiting.beats[0] as PollOutcome<MobileCheck>).observed.map((o) => o.answer),
      ['HANDLING'],
    );
  });

  it('an open answer at or after the deadline ends the polling, not settled', async () => {
    const handling: MobileCheck = { status: 'HANDLING', MSSIDN: request.msisdn, topup_amount: 500 };
    const { activities } = scriptedProvider({ checkMobileTopup: [handling] });
    const outcome = (await attempt(5_000).env.run(
      activities.pollMobileTopup,
      'p-ref',
      plan({ until: Date.now() - 1 }),
    )) as PollOutcome<MobileCheck>;
    assert.equal(outcome.settled, false);
    assert.equal(outcome.observed[0]?.answer, 'HANDLING');
  });
});
