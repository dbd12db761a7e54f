/**
 * The provider activities: the only order code that does I/O. Built by a factory that receives
 * the provider client, so tests can inject a fake. Every provider call ends with the activity
 * attempt that makes it (attempt-deadline.ts).
 *
 * Never send twice (README): workflows since the settle patch send a top-up with `sendOnly` — one
 * send, never repeated by Temporal, a 409 reported as such — and run the look-ups themselves, a
 * settle window apart, on durable timers. Activities scheduled by older workflow code keep the
 * older rule: a retried send (attempt > 1) first looks its ref up. A gift-card placement has no
 * ref to look up, so it is never retried here at all (the workflow decides).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ProviderClient } from '../src/provider/client';
import { isProviderError } from '../src/provider/errors';
import type { GiftCardOrderCheck, InternetCheck, MobileCheck } from '../src/provider/wire';
import type { GiftCardRequest, InternetTopupRequest, MobileTopupRequest } from '../src/orders/schemas';
import { ProviderFailureType, type CheckOutcome, type Submission } from './outcomes.types';
import { withinAttempt } from './attempt-deadline';
import { toTemporalFailure } from './provider-failures';
import { createAnnounceActivity, type AnnounceDeps } from './webhooks';

export type { CheckOutcome, Submission } from './outcomes.types';

/** The provider client methods the activities use (a fake needs only these). */
export type OrderProvider = Pick<
  ProviderClient,
  | 'sendMobileTopup'
  | 'checkMobileTopup'
  | 'sendInternetTopup'
  | 'checkInternetTopup'
  | 'placeGiftCardOrder'
  | 'checkGiftCardOrder'
>;

/**
 * `webhooks`: how the order workflows' events reach the delivery workflows (activities/webhooks.ts);
 * without it a worker drops them (the orders are not affected).
 */
export function createActivities({
  provider,
  webhooks,
}: {
  provider: OrderProvider;
  webhooks?: AnnounceDeps;
}) {
  return {
    ...createAnnounceActivity(webhooks),

    sendMobileTopup(
      request: MobileTopupRequest,
      options: SendOptions = {},
    ): Promise<Submission<MobileCheck>> {
      const ref = options.providerRef ?? request.ref;
      return sendTopupOnce(
        options,
        () =>
          provider.sendMobileTopup(
            { plan_code: request.planCode, MSSIDN: request.msisdn, amount: request.amount, ref },
            withinAttempt(),
          ),
        () => provider.checkMobileTopup(ref, withinAttempt()),
      );
    },

    checkMobileTopup(ref: string): Promise<CheckOutcome<MobileCheck>> {
      return check(() => provider.checkMobileTopup(ref, withinAttempt()));
    },

    sendInternetTopup(
      request: InternetTopupRequest,
      options: SendOptions = {},
    ): Promise<Submission<InternetCheck>> {
      const ref = options.providerRef ?? request.ref;
      return sendTopupOnce(
        options,
        () =>
          provider.sendInternetTopup(
            { type: request.lineType, number: request.number, value: request.value, ref },
            withinAttempt(),
          ),
        () => provider.checkInternetTopup(ref, withinAttempt()),
      );
    },

    checkInternetTopup(ref: string): Promise<CheckOutcome<InternetCheck>> {
      return check(() => provider.checkInternetTopup(ref, withinAttempt()));
    },

    /**
     * One placement, never repeated by Temporal: every failure is non-retryable, and its type says
     * whether the workflow may safely place again (not reached, rate limited) or must not.
     */
    async placeGiftCardOrder(request: GiftCardRequest): Promise<Submission<GiftCardOrderCheck>> {
      try {
        const { orderId } = await provider.placeGiftCardOrder(
          { productId: request.productId, typeId: request.typeId, quantity: request.quantity },
          withinAttempt(),
        );
        return { providerReference: orderId, alreadySent: false };
      } catch (err) {
        throw toTemporalFailure(err, { neverRetry: true });
      }
    },

    checkGiftCardOrder(orderId: string): Promise<CheckOutcome<GiftCardOrderCheck>> {
      return check(() => provider.checkGiftCardOrder(orderId, withinAttempt()));
    },
  };
}

export type OrderActivities = ReturnType<typeof createActivities>;

export interface SendOptions {
  /**
   * Just send, once (workflows since the settle patch): no look-up, a 409 reported as
   * `ProviderDuplicateRef`, every failure non-retryable, and an attempt > 1 refused. The workflow
   * knows whether this is the order's first send and runs the look-ups itself.
   */
  sendOnly?: boolean;
  /** The workflow sends again after an earlier send activity gave up: look the ref up first. */
  lookUpFirst?: boolean;
  /**
   * The ref to send and look up at the provider. Absent in activities scheduled before clients
   * existed: those used the order's own ref.
   */
  providerRef?: string;
}

/**
 * Sends a top-up at most once per ref. A retry (attempt > 1) follows an attempt whose outcome we
 * did not see — an unknown answer, a timeout, a worker that died — so it looks the ref up first:
 * found means that attempt was accepted; only "not found" allows a new send. The workflow's own
 * re-submission (a new activity, attempt 1 again) asks for the same with `lookUpFirst`.
 */
async function sendTopupOnce<C>(
  { lookUpFirst = false, sendOnly = false }: SendOptions,
  send: () => Promise<{ topupId: string }>,
  checkRef: () => Promise<C>,
): Promise<Submission<C>> {
  if (sendOnly) return justSend(send);
  if (lookUpFirst || Context.current().info.attempt > 1) {
    const earlier = await lookUpEarlierSend(checkRef);
    if (earlier.found) return { alreadySent: true, check: earlier.check };
  }
  try {
    const { topupId } = await send();
    return { providerReference: topupId, alreadySent: false };
  } catch (err) {
    if (!isProviderError(err, 'duplicate_ref')) throw toTemporalFailure(err);
  }
  // 409: the provider already accepted this ref, so it was sent; read its state instead.
  const sent = await lookUpEarlierSend(checkRef);
  if (sent.found) return { alreadySent: true, check: sent.check };
  // A 409 for a ref the provider cannot find: it contradicts itself. Retry; the retry looks up first.
  throw ApplicationFailure.retryable(
    'send answered 409 (ref already used) but check-ref does not find the ref',
    ProviderFailureType.outcomeUnknown,
  );
}

/** One send, whose outcome the workflow handles: Temporal never repeats it (see SendOptions.sendOnly). */
async function justSend<C>(send: () => Promise<{ topupId: string }>): Promise<Submission<C>> {
  // The workflow schedules this with one attempt. Should a retry ever arrive all the same (a
  // misconfigured policy), the attempt before may have reached the provider: never send blind.
  if (Context.current().info.attempt > 1) {
    throw ApplicationFailure.nonRetryable(
      'a send is never repeated by Temporal: the attempt before may have reached the provider',
      ProviderFailureType.outcomeUnknown,
    );
  }
  try {
    const { topupId } = await send();
    return { providerReference: topupId, alreadySent: false };
  } catch (err) {
    throw toTemporalFailure(err, { neverRetry: true });
  }
}

async function lookUpEarlierSend<C>(checkRef: () => Promise<C>): Promise<CheckOutcome<C>> {
  try {
    return await findOut(checkRef);
  } catch (err) {
    throw toTemporalFailure(err, { lookingUpEarlierSend: true });
  }
}

/** A status check activity: retried by Temporal on failure. */
async function check<C>(call: () => Promise<C>): Promise<CheckOutcome<C>> {
  try {
    return await findOut(call);
  } catch (err) {
    throw toTemporalFailure(err);
  }
}

/** 404 is an answer to a check (the provider does not know the ref or order), not a failure. */
async function findOut<C>(call: () => Promise<C>): Promise<CheckOutcome<C>> {
  try {
    return { found: true, check: await call() };
  } catch (err) {
    if (isProviderError(err, 'not_found')) return { found: false };
    throw err;
  }
}
