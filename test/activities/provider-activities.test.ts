/**
 * The provider activities alone, in Temporal's mock activity context, with a scripted provider:
 * the never-send-twice rules and the ProviderError → Temporal failure mapping.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities, type OrderProvider } from '../../activities';
import { ProviderFailureType } from '../../activities/outcomes.types';
import { ProviderError, type ProviderFailureKind } from '../../src/provider/errors';
import type { MobileCheck } from '../../src/provider/wire';
import { giftCardRequest, mobileRequest } from '../helpers/orders';

type Method = keyof OrderProvider;
type Answer = unknown;

/** A provider whose methods answer from a script, in order, and record every call. */
function scriptedProvider(script: Partial<Record<Method, Answer[]>>) {
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
  return { activities: createActivities({ provider }), calls };
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

describe('top-up send activity', () => {
  it('on the first attempt, sends without looking the ref up', async () => {
    const { activities, calls } = scriptedProvider({
      sendMobileTopup: [{ topupId: 't1', topupRef: 'ref-1' }],
    });
    assert.deepEqual(await firstAttempt.run(activities.sendMobileTopup, request), {
      providerReference: 't1',
      alreadySent: false,
    });
    assert.deepEqual(calls, ['sendMobileTopup']);
  });

  it('on a retry, when the ref is found, returns it as already sent and does not send', async () => {
    const { activities, calls } = scriptedProvider({ checkMobileTopup: [fulfilled] });
    assert.deepEqual(await retry.run(activities.sendMobileTopup, request), {
      alreadySent: true,
      check: fulfilled,
    });
    assert.deepEqual(calls, ['checkMobileTopup']);
  });

  it('on a retry, when the ref is not found, sends', async () => {
    const { activities, calls } = scriptedProvider({
      checkMobileTopup: [providerError('not_found', { status: 404 })],
      sendMobileTopup: [{ topupId: 't2', topupRef: 'ref-1' }],
    });
    assert.deepEqual(await retry.run(activities.sendMobileTopup, request), {
      providerReference: 't2',
      alreadySent: false,
    });
    assert.deepEqual(calls, ['checkMobileTopup', 'sendMobileTopup']);
  });

  it('on a retry, when looking the ref up is refused (e.g. 401), fails retryably: the earlier send is still unclear', async () => {
    const { activities, calls } = scriptedProvider({
      checkMobileTopup: [providerError('refused', { status: 401, code: 'UNAUTHORIZED' })],
    });
    const failure = await failureOf(retry.run(activities.sendMobileTopup, request));
    assert.equal(failure.type, ProviderFailureType.outcomeUnknown);
    assert.equal(failure.nonRetryable, false);
    assert.deepEqual(calls, ['checkMobileTopup'], 'no send while the earlier one is unclear');
  });

  it('when the send answers 409 (ref already used), treats it as sent and reads its state', async () => {
    const { activities, calls } = scriptedProvider({
      sendMobileTopup: [providerError('duplicate_ref', { status: 409 })],
      checkMobileTopup: [fulfilled],
    });
    assert.deepEqual(await firstAttempt.run(activities.sendMobileTopup, request), {
      alreadySent: true,
      check: fulfilled,
    });
    assert.deepEqual(calls, ['sendMobileTopup', 'checkMobileTopup']);
  });

  it('when the provider refuses (4xx), fails non-retryably as ProviderRejected with the codes', async () => {
    const { activities } = scriptedProvider({
      sendMobileTopup: [providerError('refused', { status: 403, code: 'FORBIDDEN' })],
    });
    const failure = await failureOf(firstAttempt.run(activities.sendMobileTopup, request));
    assert.equal(failure.type, ProviderFailureType.rejected);
    assert.equal(failure.nonRetryable, true);
    assert.deepEqual(failure.details, [{ kind: 'refused', operation: 'op', status: 403, code: 'FORBIDDEN' }]);
  });

  it('when the outcome is unknown, fails retryably (the retry looks the ref up first)', async () => {
    const { activities } = scriptedProvider({
      sendMobileTopup: [providerError('outcome_unknown', { status: 503 })],
    });
    const failure = await failureOf(firstAttempt.run(activities.sendMobileTopup, request));
    assert.equal(failure.type, ProviderFailureType.outcomeUnknown);
    assert.equal(failure.nonRetryable, false);
  });

  it('when rate limited, fails retryably with the next retry after Retry-After', async () => {
    const { activities } = scriptedProvider({
      sendMobileTopup: [providerError('rate_limited', { status: 429, retryAfterMs: 3_000 })],
    });
    const failure = await failureOf(firstAttempt.run(activities.sendMobileTopup, request));
    assert.equal(failure.type, ProviderFailureType.rateLimited);
    assert.equal(failure.nonRetryable, false);
    assert.equal(failure.nextRetryDelay, 3_000);
  });
});

describe('gift-card placement activity', () => {
  for (const [kind, type] of [
    ['not_reached', ProviderFailureType.notReached],
    ['rate_limited', ProviderFailureType.rateLimited],
    ['outcome_unknown', ProviderFailureType.outcomeUnknown],
    ['refused', ProviderFailureType.rejected],
  ] as const) {
    it(`when placement fails as ${kind}, fails non-retryably as ${type}: only the workflow may place again`, async () => {
      const { activities, calls } = scriptedProvider({ placeGiftCardOrder: [providerError(kind)] });
      const failure = await failureOf(
        firstAttempt.run(activities.placeGiftCardOrder, giftCardRequest('g-1')),
      );
      assert.equal(failure.type, type);
      assert.equal(failure.nonRetryable, true);
      assert.deepEqual(calls, ['placeGiftCardOrder']);
    });
  }
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
