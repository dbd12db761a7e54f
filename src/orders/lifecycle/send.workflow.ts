/**
 * Sending the order to the provider: a top-up's send and its settle protocol, a gift card's
 * placement (docs/contributors.md "Never send twice: what we assume of the provider"). The first
 * send is a local activity in the order's first workflow task; every later one is an activity that
 * Temporal never repeats, except a placement that certainly never reached the provider.
 */
import {
  condition,
  log,
  proxyActivities,
  proxyLocalActivities,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { OrderActivities } from '../order.activities';
import { ProviderFailureType, type Submission } from '../../../contract/activity-outcomes';
import { finalStatuses, type OrderRequest } from '../../../contract/order';
import {
  describeFailure,
  isSafeToRepeat,
  neverStarted,
  PROVIDER_DOES_NOT_KNOW,
  providerFailureOf,
  summarize,
  type ProviderFailure,
} from './failures.workflow';
import { holdsTheOrder, holdUntilResumed } from './hold.workflow';
import { lookUp } from './provider.workflow';
import { cancelledBeforeSending } from './cancellation.workflow';
import { settleFromRecords } from './records.workflow';
import { RETRY_INITIAL_INTERVAL_MS, type Order } from './state.workflow';
import type { ProviderCheck, SubmitHow } from './types.workflow';

/**
 * A send or placement that certainly never reached the provider is tried again at most this often
 * (and never past the deadline): with the default back-off that is about a quarter of an hour.
 */
const MAX_SUBMIT_TRIES = 20;
/**
 * The first send (a local activity) must be scheduled by the worker within this share of the
 * task timeout after its workflow task started (SendOptions.notAfter). A local activity can run
 * again without a trace only after the task was completed by a heartbeat — at 80 % of its timeout
 * — and the task after it was then lost with its worker: never before the task's start + 80 % of
 * its timeout + that next task's timeout. 70 % leaves the difference for the clocks.
 */
const LOCAL_SEND_WINDOW_SHARE = 0.7;

/** The local send's own limit once started (the call ends with it: attempt-deadline.ts). */
const LOCAL_SEND_TIMEOUT_MS = 5_000;

/** How long a local send may wait for a slot; one that never started is sent through the queue. */
const LOCAL_SEND_QUEUE_MS = 1_000;

/**
 * The first send always runs, told whether the first workflow task may have sent before
 * (SendOptions.earlierTaskMayHaveSent): such a send refuses unsent, as "outcome unknown", and the
 * settle protocol looks the ref up. The workflow never chooses by the history's length itself: that
 * length reads 6 on replay where the first task was completed by a heartbeat (3 when it ran), so a
 * choice made on it would replay a look-up where the history holds the send.
 */
export async function submit<R extends OrderRequest, C extends ProviderCheck>(o: Order<R, C>): Promise<void> {
  if (o.adapter.submitRetry === 'lookup') {
    return sendSettled(o, { earlierTaskMayHaveSent: !o.freshFirstTask });
  }
  // Held and never let go (a run the sweep resumed while HELD): the account refused or the gate
  // held every placement, so none can be behind it. (A top-up looks its ref up all the same: that
  // costs a settle window, not a review.)
  const heldUnplaced = o.view.status === 'HELD' && o.view.hold?.resumedAt === undefined;
  return place(o, { earlierTaskMayHaveSent: !o.freshFirstTask && !heldUnplaced });
}

/**
 * A gift card's placement: first as a local activity. One that certainly never reached the
 * provider is placed again through the task queue after the provider's Retry-After (or a
 * second), and that activity's retry policy places again only after attempts that certainly
 * never reached it (activities placeGiftCardOrder), until MAX_SUBMIT_TRIES placements in all or
 * the deadline.
 */
async function place<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  first: FirstSend,
): Promise<void> {
  let released = false;
  let local = true;
  for (;;) {
    const earlier = local && first.earlierTaskMayHaveSent ? first : {};
    // An earlier task's placement, if any, came after the order was accepted.
    const startedAt = earlier.earlierTaskMayHaveSent ? Date.parse(o.order.acceptedAt) : Date.now();
    const viaQueue = () =>
      o.adapter.submit(placementActivities(o), o.order, {
        placeUntil: o.deadlineAt,
        ...(released && { released }),
        ...earlier,
      });
    try {
      return o.onSubmitted(local ? await submitLocalFirst(o, viaQueue, earlier) : await viaQueue());
    } catch (err) {
      const failure = providerFailureOf(err);
      if (failure && holdsTheOrder(failure)) {
        // Certainly not placed: held, then placed through the task queue.
        const held = await holdUntilResumed(o, failure);
        // Ended by giving up (FAILED) even if a cancel came meanwhile: a final status is never replaced.
        if (held.next === 'ended' && finalStatuses.includes(o.view.status)) return;
        if (cancelledBeforeSending(o, 'held, nothing was placed') || held.next === 'ended') return;
        released = held.released;
        local = false;
        continue;
      }
      if (!local || !failure || !isSafeToRepeat(failure.type)) {
        if (failure?.type === ProviderFailureType.rejected || (failure && isSafeToRepeat(failure.type))) {
          return placementFailed(o, err);
        }
        // It may have been placed: the provider's records tell (records.workflow.ts).
        // The workflow's clock is its task's start: the call may have ended later — when it says
        // so (the worker's clock), or, an attempt that timed out, at least a timeout after it began.
        const endedAt = Math.max(
          Date.now(),
          failure?.details?.endedAt ?? startedAt + o.timings.activityTimeoutMs,
        );
        return settleFromRecords(o, { startedAt, endedAt }, describeFailure(err));
      }
      const delayMs = failure.details?.retryAfterMs ?? RETRY_INITIAL_INTERVAL_MS;
      if (Date.now() + delayMs >= o.deadlineAt) return giveUpSubmitting(o, failure.message);
      await sleep(delayMs, { summary: 'wait, then place again (the provider was not reached)' });
      local = false;
    }
  }
}

/** What the first send is told of the first workflow task (submit). */
type FirstSend = Pick<SubmitHow, 'earlierTaskMayHaveSent'>;

/** A placement that failed for good: refused, never reached until the end, or unclear. */
function placementFailed<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  err: unknown,
): Promise<void> | void {
  const failure = providerFailureOf(err);
  if (failure?.type === ProviderFailureType.rejected) return refused(o, failure);
  if (failure && isSafeToRepeat(failure.type)) return giveUpSubmitting(o, failure.message);
  return o.toReview('the submission may or may not have reached the provider', describeFailure(err));
}

/** A definitive 4xx refusal of the submission: nothing was done. */
function refused<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  failure: ProviderFailure,
): void {
  const code =
    failure.details?.code ?? (failure.details?.status ? `HTTP_${failure.details.status}` : 'REJECTED');
  o.finish('FAILED', `The provider refused the order (${code})`, {
    failure: { code, message: failure.message },
  });
}

/**
 * A top-up's send (docs/contributors.md "Never send twice: what we assume of the provider").
 * Each send is one activity that Temporal never repeats — a timed-out attempt (a dead worker)
 * may have reached the provider — so every decision to send again is taken here, on durable
 * timers. After a send whose outcome is unknown, nothing is sent again until check-ref has not
 * found the ref twice (see settle). Sends that certainly never reached the provider (connection
 * refused, 429) are repeated after a back-off. A DUPLICATED_REF means "someone else's top-up" when no send
 * of this order may have reached the provider yet, and "our earlier send" afterwards.
 */
async function sendSettled<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  first: FirstSend,
): Promise<void> {
  const activities = proxyActivities<OrderActivities>({
    startToCloseTimeout: o.timings.activityTimeoutMs,
    summary: 'send to the provider (once)',
    retry: { maximumAttempts: 1 },
  });
  const evidence: string[] = [];
  let mayHaveReached = false;
  let repeats = 0;
  let released = false;
  for (let sends = 1; ; sends++) {
    // Here the provider certainly does not have the order: a cancellation ends it unsent.
    const unsent = mayHaveReached
      ? 'check-ref did not find the ref twice, the provider never had it; nothing sent again'
      : 'the provider was never reached; nothing sent';
    if (cancelledBeforeSending(o, unsent)) return;
    let err: unknown;
    try {
      const firstSend = sends === 1;
      const earlier = firstSend && first.earlierTaskMayHaveSent ? first : {};
      const viaQueue = () =>
        o.adapter.submit(activities, o.order, { ...(released && { released }), ...earlier });
      const submission = firstSend ? await submitLocalFirst(o, viaQueue, earlier) : await viaQueue();
      return o.onSubmitted(submission);
    } catch (caught) {
      err = caught;
    }
    const failure = providerFailureOf(err);
    if (failure?.type === ProviderFailureType.rejected) return refused(o, failure);
    if (failure && holdsTheOrder(failure)) {
      // Certainly not sent (the provider refused it for the balance, or the worker held it).
      const held = await holdUntilResumed(o, failure);
      // Ended: gave up (FAILED, final even if a cancel came meanwhile), or cancelled (the loop ends it).
      if (
        held.next === 'ended' &&
        (o.cancelRequestedAt === undefined || finalStatuses.includes(o.view.status))
      )
        return;
      released = held.next === 'send' && held.released;
      repeats = 0;
      continue;
    }
    if (failure?.type === ProviderFailureType.duplicateRef) {
      if (!mayHaveReached) {
        // No send of ours can be behind it: the ref was used before, by an order we no longer
        // hold (its workflow outlived its retention). Its outcome is not this order's.
        return o.toReview('ref already used at the provider', `send ${sends}: ${describeFailure(err)}`);
      }
      evidence.push(
        `send ${sends}: DUPLICATED_REF, the ref is already used: an earlier send of this order was committed`,
      );
      o.note(
        'The provider answers DUPLICATED_REF to the re-send: an earlier send was committed; looking it up',
      );
      await settle(o, evidence, { mayResend: false, lookNow: true });
      return;
    }
    if (failure && isSafeToRepeat(failure.type)) {
      repeats++;
      const delayMs =
        failure.details?.retryAfterMs ?? o.backoff(RETRY_INITIAL_INTERVAL_MS, 2 ** (repeats - 1));
      if (repeats >= MAX_SUBMIT_TRIES || Date.now() + delayMs >= o.deadlineAt) {
        if (mayHaveReached) return giveUpSubmitting(o, failure.message);
        return o.finish('FAILED', 'The provider could not be reached; nothing was sent', {
          failure: { code: 'PROVIDER_UNREACHABLE', message: failure.message },
        });
      }
      log.warn('send not accepted by the provider, sending again', {
        type: failure.type,
        delayMs,
        repeats,
      });
      // A cancellation meanwhile ends the wait: the loop ends the order unsent.
      await condition(() => o.cancelRequestedAt !== undefined, delayMs, {
        summary: 'wait, then send again (the provider was not reached)',
      });
      continue;
    }
    // Timeout, reset, 5xx, an attempt timed out, anything else: the provider may have it.
    mayHaveReached = true;
    repeats = 0;
    evidence.push(`send ${sends}: ${describeFailure(err)}`);
    if ((await settle(o, evidence, { mayResend: true })) !== 'resend') return;
  }
}

/**
 * After a send whose outcome is unknown: look the ref up once a settle window has passed since
 * the send ended (`lookNow`: at once, then likewise), and again a settle window after each
 * "not found". Found → adopted, if it is this order's. Not found twice → 'resend', if
 * `mayResend`; otherwise keep looking. The deadline first → review with the evidence. Every wait
 * is a durable timer, and a look-up that fails is retried by Temporal with back-off until the
 * deadline: while the provider cannot be asked, the order waits.
 */
async function settle<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  evidence: string[],
  { mayResend, lookNow = false }: { mayResend: boolean; lookNow?: boolean },
): Promise<'resend' | 'done'> {
  const settleS = Math.round(o.timings.settleMs / 100) / 10;
  if (!lookNow) {
    o.note(`Send outcome unknown; looking the ref up in ${settleS} s, nothing is sent before`);
  }
  let notFound = 0;
  let lookAt = lookNow ? Date.now() : Date.now() + o.timings.settleMs;
  for (;;) {
    const wait = Math.min(lookAt, o.deadlineAt) - Date.now();
    if (wait > 0) await sleep(wait, { summary: 'settle window: check-ref before re-sending' });
    const answer = await lookUp(o, o.deadlineAt - Date.now(), 'check-ref before re-sending');
    if (typeof answer !== 'string') {
      adopt(o, answer);
      return 'done';
    }
    evidence.push(answer === PROVIDER_DOES_NOT_KNOW ? 'check-ref: not found' : answer);
    if (Date.now() >= o.deadlineAt) {
      o.toReview(
        'the provider did not confirm by the deadline whether the top-up was sent',
        summarize(evidence),
      );
      return 'done';
    }
    if (answer === PROVIDER_DOES_NOT_KNOW) {
      notFound++;
      if (mayResend && notFound >= 2) {
        o.note(`Check-ref did not find the ref twice, ${settleS} s apart; sending again`);
        return 'resend';
      }
      o.note(`Check-ref does not find the ref; looking again in ${settleS} s`);
    }
    lookAt = Date.now() + o.timings.settleMs;
  }
}

/** A top-up found under our ref after an unclear send: carry on with it, unless it is not this order's. */
function adopt<R extends OrderRequest, C extends ProviderCheck>(o: Order<R, C>, check: C): void {
  const problem = o.notThisOrder(check);
  if (problem) return o.toReview("the provider's top-up under this ref is not this order's", problem);
  o.onSubmitted({ alreadySent: true, check });
}

/**
 * The provider stayed out of reach until the deadline. A placement that never reached it is
 * FAILED. A top-up's earlier attempts may have been sent before the outage, so its ref is looked
 * up one last time: found → carry on with it; unknown to the provider → FAILED, nothing was sent;
 * no answer → review, since nobody can say.
 */
async function giveUpSubmitting<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  lastFailure: string,
): Promise<void> {
  const unreachable = { failure: { code: 'PROVIDER_UNREACHABLE', message: lastFailure } };
  if (o.adapter.submitRetry === 'once') {
    return o.finish('FAILED', 'The provider could not be reached; nothing was submitted', unreachable);
  }
  const answer = await lookUp(o, o.timings.activityTimeoutMs, 'last look-up before giving up');
  if (typeof answer !== 'string') {
    return adopt(o, answer);
  }
  if (answer === PROVIDER_DOES_NOT_KNOW) {
    return o.finish('FAILED', 'The provider could not be reached and has no trace of the order', unreachable);
  }
  return o.toReview('the provider could not be reached to confirm whether the top-up was sent', answer);
}

/** The first send: a local activity in the first workflow task, never retried. */
function localSendActivities<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
): OrderActivities {
  const { taskTimeoutMs } = workflowInfo();
  return proxyLocalActivities<OrderActivities>({
    // Both well inside the task's heartbeat point (80 % of its timeout) in the normal case.
    scheduleToStartTimeout: Math.min(LOCAL_SEND_QUEUE_MS, taskTimeoutMs / 10),
    startToCloseTimeout: Math.min(LOCAL_SEND_TIMEOUT_MS, o.timings.activityTimeoutMs, taskTimeoutMs / 2),
    retry: { maximumAttempts: 1 },
  });
}

/**
 * The first send, as a local activity. One the worker declined (its provider calls are
 * rate-limited by the task queue) or that never got a slot was not sent: it goes through the
 * task queue instead (`viaQueue`), at once. Any other failure is the caller's.
 */
async function submitLocalFirst<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  viaQueue: () => Promise<Submission<C>>,
  first: FirstSend,
): Promise<Submission<C>> {
  try {
    return await o.adapter.submit(localSendActivities(o), o.order, {
      notAfter: sendWindowEnd(),
      ...first,
    });
  } catch (err) {
    const type = providerFailureOf(err)?.type;
    const declined = type === ProviderFailureType.localSendDeclined;
    if (!declined && !neverStarted(err)) throw err;
    return viaQueue();
  }
}

/** SendOptions.notAfter of the local send: Date.now() is this workflow task's start. */
function sendWindowEnd(): number {
  return Date.now() + LOCAL_SEND_WINDOW_SHARE * workflowInfo().taskTimeoutMs;
}

/** A placement through the task queue: Temporal places again only after attempts that never reached the provider. */
function placementActivities<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
): OrderActivities {
  return proxyActivities<OrderActivities>({
    startToCloseTimeout: o.timings.activityTimeoutMs,
    summary: 'place the order with the provider',
    // Temporal stops retrying when the next attempt would start past this (the last failure, a
    // certain "not reached", is the result); an attempt that starts past the deadline anyway
    // refuses to place (SendOptions.placeUntil), which is certain too, where this timeout firing
    // mid-attempt is not.
    scheduleToCloseTimeout: Math.max(o.deadlineAt - Date.now(), o.timings.activityTimeoutMs),
    retry: {
      ...o.retryPolicy([
        ProviderFailureType.rejected,
        ProviderFailureType.outcomeUnknown,
        ProviderFailureType.duplicateRef,
      ]),
      // The local placement was the first.
      maximumAttempts: MAX_SUBMIT_TRIES - 1,
    },
  });
}
