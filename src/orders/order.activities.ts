/**
 * The provider activities: the only order code that does I/O. Built by a factory that receives
 * the provider client, so tests can inject a fake. Every provider call ends with the activity
 * attempt that makes it (attempt-deadline.ts).
 *
 * Never send twice (docs/contributors.md): a top-up send is one send, never repeated by Temporal, a
 * DUPLICATED_REF reported as such; the workflow runs the look-ups itself, a settle window apart, on durable
 * timers. A gift-card placement has no ref to look up: Temporal may place again only after an
 * attempt that certainly never reached the provider (placeGiftCardOrder).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory, CancelledFailure } from '@temporalio/common';
import type { ProviderClient } from '../provider';
import { isProviderError } from '../provider';
import type { GiftCardOrderCheck, InternetCheck, MobileCheck } from '../provider';
import type {
  GiftCardRequest,
  InternetTopupRequest,
  MobileTopupRequest,
  OrderRequest,
} from '../../contract/schemas';
import {
  nextCheckDelayMs,
  ProviderFailureType,
  type CheckOutcome,
  type PollObservation,
  type PollOutcome,
  type PollPlan,
  type PollProgress,
  type Submission,
} from '../../contract/activity-outcomes';
import { attemptDeadline, markAttemptStart, withinAttempt } from '../provider';
import { toTemporalFailure } from '../provider';
import type { AccountGate } from '../provider-account';
import { workerServerClock, type ServerClockEstimate } from '../temporal';

import type { createGiftCardRecordsActivities } from './gift-card-records.activities';
export type { PlacementSearch, PlacementSearchInput } from '../../contract/placement-records';

/** What the check activities return: the provider's answers, as the workflows' adapters read them. */
export type { GiftCardOrderCheck, InternetCheck, MobileCheck };

export type { CheckOutcome, Submission } from '../../contract/activity-outcomes';

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

export interface OrderActivityOptions {
  provider: OrderProvider;
  /**
   * Whether a send may run as a local activity (default true). False when the worker's provider
   * calls are rate-limited by the task queue (WORKER_PROVIDER_CALLS_PER_SECOND), which local
   * activities bypass: such a send is declined unsent, and the workflow sends through the queue.
   */
  localSends?: boolean;
  /**
   * Whether a polling attempt may wait for its next check itself and make several (default: as
   * `localSends`). False when provider calls are rate-limited per task-queue activity, so that every
   * check is one activity attempt the limit counts.
   */
  holdPolls?: boolean;
  /** The provider account's send gate (src/provider-account): held orders wait at it. */
  gate?: AccountGate;
  /**
   * The Temporal server's clock as this worker tells it (src/temporal/server-clock.ts), for the
   * local send's window; default the process's own, which the workers' activity interceptor feeds.
   */
  serverClock?: ServerClockEstimate;
}

export function createOrderActivities({
  provider,
  localSends = true,
  holdPolls = localSends,
  gate,
  serverClock: clockEstimate = workerServerClock,
}: OrderActivityOptions) {
  const sendOnce = async <C>(
    request: OrderRequest,
    operation: string,
    options: SendOptions,
    send: () => Promise<{ topupId: string }>,
  ) => {
    mayRunThisSend(options, localSends, clockEstimate);
    await gate?.beforeSend(request, operation, options.released);
    return justSend<C>(send);
  };
  return {
    sendMobileTopup(
      request: MobileTopupRequest,
      options: SendOptions = {},
    ): Promise<Submission<MobileCheck>> {
      const ref = options.providerRef ?? request.ref;
      return sendOnce(request, 'sendMobileTopup', options, () =>
        provider.sendMobileTopup(
          { plan_code: request.planCode, MSSIDN: request.msisdn, amount: request.amount, ref },
          withinAttempt(),
        ),
      );
    },

    checkMobileTopup(ref: string): Promise<CheckOutcome<MobileCheck>> {
      return check(() => provider.checkMobileTopup(ref, withinAttempt()));
    },

    /** Checks until the top-up is no longer PENDING / HANDLING; see pollUntilSettled. */
    pollMobileTopup(ref: string, plan: PollPlan): Promise<PollOutcome<MobileCheck>> {
      return pollUntilSettled(
        plan,
        () => provider.checkMobileTopup(ref, withinAttempt()),
        holdPolls,
        clockEstimate,
      );
    },

    sendInternetTopup(
      request: InternetTopupRequest,
      options: SendOptions = {},
    ): Promise<Submission<InternetCheck>> {
      const ref = options.providerRef ?? request.ref;
      return sendOnce(request, 'sendInternetTopup', options, () =>
        provider.sendInternetTopup(
          { type: request.lineType, number: request.number, value: request.value, ref },
          withinAttempt(),
        ),
      );
    },

    checkInternetTopup(ref: string): Promise<CheckOutcome<InternetCheck>> {
      return check(() => provider.checkInternetTopup(ref, withinAttempt()));
    },

    pollInternetTopup(ref: string, plan: PollPlan): Promise<PollOutcome<InternetCheck>> {
      return pollUntilSettled(
        plan,
        () => provider.checkInternetTopup(ref, withinAttempt()),
        holdPolls,
        clockEstimate,
      );
    },

    /**
     * One placement per attempt. placeOrder carries no reference of ours, so an attempt whose
     * answer was lost can never be looked up: Temporal may run another attempt only after one that
     * certainly never reached the provider (not reached, 429). Such an attempt says so in its last
     * heartbeat; an attempt that finds no such word from the attempt just before it (that one
     * timed out, its worker died) refuses to place: the order goes to review.
     */
    async placeGiftCardOrder(
      request: GiftCardRequest,
      options: Pick<SendOptions, 'notAfter' | 'placeUntil' | 'released' | 'earlierTaskMayHaveSent'> = {},
    ): Promise<Submission<GiftCardOrderCheck>> {
      // The attempt starts now, not at the call: the gate's reading counts in its time.
      markAttemptStart();
      mayRunThisSend(options, localSends, clockEstimate);
      await gate?.beforeSend(request, 'placeGiftCardOrder', options.released);
      const { attempt, heartbeatDetails } = Context.current().info;
      if (
        attempt > 1 &&
        (heartbeatDetails as PlacementNotReached | undefined)?.notReachedAttempt !== attempt - 1
      ) {
        throw ApplicationFailure.nonRetryable(
          'the placement attempt before this one may have reached the provider: not placed again',
          ProviderFailureType.outcomeUnknown,
        );
      }
      // The server's clock for this attempt (the workflow's deadline is on that clock too).
      const scheduledAt = Context.current().info.currentAttemptScheduledTimestampMs;
      if (options.placeUntil !== undefined && scheduledAt > options.placeUntil) {
        throw ApplicationFailure.nonRetryable(
          'the order reached its deadline before the provider could be reached: nothing was placed',
          ProviderFailureType.notReached,
        );
      }
      try {
        const { orderId } = await provider.placeGiftCardOrder(
          { productId: request.productId, typeId: request.typeId, quantity: request.quantity },
          // Informational: the provider takes no ref of ours (wire.ts CLIENT_REFERENCE_HEADER).
          { ...withinAttempt(), clientReference: Context.current().info.workflowExecution?.workflowId ?? '' },
        );
        return { providerReference: orderId, alreadySent: false };
      } catch (err) {
        const failure = toTemporalFailure(err, { neverRetry: true });
        const type = failure instanceof ApplicationFailure ? failure.type : undefined;
        if (type !== ProviderFailureType.notReached && type !== ProviderFailureType.rateLimited)
          throw failure;
        // A local placement is never retried by Temporal (the workflow decides), and cannot heartbeat.
        if (!Context.current().info.isLocal) {
          Context.current().heartbeat({ notReachedAttempt: attempt } satisfies PlacementNotReached);
        }
        throw toTemporalFailure(err);
      }
    },

    checkGiftCardOrder(orderId: string): Promise<CheckOutcome<GiftCardOrderCheck>> {
      return check(() => provider.checkGiftCardOrder(orderId, withinAttempt()));
    },

    pollGiftCardOrder(orderId: string, plan: PollPlan): Promise<PollOutcome<GiftCardOrderCheck>> {
      return pollUntilSettled(
        plan,
        () => provider.checkGiftCardOrder(orderId, withinAttempt()),
        holdPolls,
        clockEstimate,
      );
    },
  };
}

/**
 * What the order workflows call: the order activities, and the search of the provider's records
 * for a lost placement (gift-card-records.activities.ts), registered beside them.
 */
export type OrderActivities = ReturnType<typeof createOrderActivities> &
  ReturnType<typeof createGiftCardRecordsActivities>;

/** A gift-card placement attempt's last heartbeat: it certainly never reached the provider. */
interface PlacementNotReached {
  notReachedAttempt: number;
}

/**
 * A top-up send: one send, a DUPLICATED_REF reported as `ProviderDuplicateRef`, every failure non-retryable,
 * and an attempt > 1 refused. The workflow knows whether this is the order's first send and runs
 * the look-ups itself.
 */
export interface SendOptions {
  /** The ref to send to the provider (OrderInput.providerRef); the request's own ref when absent. */
  providerRef?: string;
  /**
   * Epoch ms (the workflow's clock, i.e. the server's) after which this send must not go out: set on the first send,
   * which runs as a local activity inside the order's first workflow task. That task can be
   * completed by a heartbeat only after most of its timeout; a worker that dies later makes the
   * next one run the local activity again without any trace in the history. A local send
   * scheduled past this time may be such a re-run, so it is refused as "outcome unknown" and the
   * workflow looks the ref up instead.
   */
  notAfter?: number;
  /**
   * Epoch ms: a gift-card placement retried through the task queue places nothing after this (the
   * order's deadline). An attempt that finds it passed fails as "not reached", which is certain,
   * where the schedule-to-close timeout firing could not say whether the attempt it cut had placed.
   */
  placeUntil?: number;
  /**
   * The account workflow let this held order go (src/orders/lifecycle/hold.workflow.ts): the send gate does not
   * hold it for the orders still waiting for the balance.
   */
  released?: boolean;
  /**
   * The order's first workflow task ran before and did not complete (its worker died), or this is
   * a run the sweep resumed: a send made then may have reached the provider. The send refuses,
   * outcome unknown, without calling the provider, and the workflow looks the ref up. The workflow
   * passes this as an input rather than branching on it, because what it knows of that (the
   * history's length) reads differently on replay when the first task was completed by a heartbeat;
   * the send's recorded answer replays the same either way.
   */
  earlierTaskMayHaveSent?: boolean;
}

/**
 * Refuses a send that must not run here: one whose first workflow task may have sent already,
 * a local send on a worker that sends only through the task queue (nothing sent), or one started
 * past its `notAfter` (it may repeat an earlier run).
 */
function mayRunThisSend(
  { notAfter, earlierTaskMayHaveSent }: Pick<SendOptions, 'notAfter' | 'earlierTaskMayHaveSent'>,
  localSends: boolean,
  clockEstimate: ServerClockEstimate,
): void {
  if (earlierTaskMayHaveSent) {
    throw ApplicationFailure.nonRetryable(
      "the order's first workflow task did not complete: a send made in it may have reached the provider; nothing sent now",
      ProviderFailureType.outcomeUnknown,
    );
  }
  const { isLocal, scheduledTimestampMs } = Context.current().info;
  if (isLocal && !localSends) {
    throw ApplicationFailure.nonRetryable(
      'this worker sends through the task queue (provider calls are rate-limited); nothing was sent',
      ProviderFailureType.localSendDeclined,
    );
  }
  // notAfter is on the server's clock (the workflow's). A local activity's scheduled time is when
  // this worker's SDK scheduled it, on the worker's clock: a re-run after a lost task is scheduled
  // anew, late. (A regular activity's is the server's, so it counts from now.) Both are read on the
  // server's clock as this worker can tell it, which is never later than the true one; so a worker
  // whose clock is off sends, and a re-run still reads as late by the guard's room less the
  // estimate's error (LOCAL_SEND_WINDOW_SHARE; src/temporal/server-clock.ts). With no estimate
  // yet, the worker's own clock is taken as the server's, as the guard always did.
  const scheduledAt = clockEstimate.toServerClock(isLocal ? scheduledTimestampMs : Date.now());
  if (notAfter !== undefined && scheduledAt > notAfter) {
    throw ApplicationFailure.nonRetryable(
      'the send was scheduled after its window: it may repeat a send made by an earlier run of this task',
      ProviderFailureType.outcomeUnknown,
    );
  }
}

/** One send, whose outcome the workflow handles: Temporal never repeats it (see SendOptions). */
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

/** Kept of a long polling: the first answers and the latest ones (the history has every attempt's count). */
const MAX_OBSERVATIONS = 40;
/** Back-off of failed checks: the first retry after this, doubling up to the plan's cap. */
const FAILED_CHECK_FIRST_RETRY_MS = 1_000;
/**
 * At the pace, the room a held check keeps before the attempt's deadline for its call: the
 * provider client's whole default call (10 s headers + 10 s body).
 */
const CALL_ROOM_MS = 20_000;
/** A first attempt this close to its due time checks at once rather than wait for a retry. */
const DUE_SLACK_MS = 50;
const openStatuses: readonly string[] = ['PENDING', 'HANDLING'];

/**
 * The lifecycle's polling: one activity that checks until the order settles. At the provider's
 * pace (`plan.pace`, the default): a check every `intervalMs` in one attempt until the pace ends —
 * no billable action per check — with a heartbeat only when the next check's answer could come
 * later than the heartbeat timeout allows (none in an order that settles within about two thirds
 * of it, 40 s by default); after the pace, the schedule below, each check handed to the server.
 * Without a pace it checks on the provider's schedule until the order settles. Within an attempt it waits for the next check itself (`holds`) while that check and its
 * answer fit in the attempt's start-to-close: at the spec's timings a normal order's checks at 5 s
 * and 15 s are one attempt, one billable action (docs/contributors.md "Cost per order"). A check
 * due later, or a failed check, ends the attempt with a retryable failure whose `nextRetryDelay`
 * follows the provider's schedule, so the server, not the workflow or a held slot, waits between
 * such checks: no history event per check. What the attempt saw is carried to the next in its
 * heartbeat details and returned at the end, so the history keeps every status the provider
 * reported. Without `holds` (provider calls rate-limited per task-queue activity: one check per
 * attempt) the first attempt only schedules the first check (the SDK has no start delay for
 * activities).
 *
 * Ends when the provider gives a status other than PENDING / HANDLING (`settled`), or when an
 * answer comes at or after the order's deadline (not settled: the workflow sends it to review).
 * A 404 or a failed check counts as "still open": polling goes on until the deadline.
 */
async function pollUntilSettled<C extends { status: string }>(
  plan: PollPlan,
  call: () => Promise<C>,
  holds: boolean,
  clockEstimate: ServerClockEstimate,
): Promise<PollOutcome<C>> {
  const context = Context.current();
  const now = serverClock(context.info, clockEstimate);
  markAttemptStart();
  // A rate-limited worker (no holds) makes one check per attempt: the pace would cost one attempt
  // and one heartbeat per check, so it keeps the provider's schedule.
  const pace = holds ? plan.pace : undefined;
  // A check due after this is left to the server's retry: its answer would not fit in the attempt
  // (at the pace: the pace is over).
  const lastHeldCheck = !holds
    ? -Infinity
    : pace
      ? Math.min(
          pace.until,
          attemptDeadline(context.info, now()) - Math.min(CALL_ROOM_MS, checkRoomMs(context.info)),
        )
      : attemptDeadline(context.info, now()) - checkRoomMs(context.info);
  let lastBeat = now();
  const carried = context.info.heartbeatDetails as PollProgress<C> | undefined;
  const progress: PollProgress<C> = carried ?? {
    nextCheckMs: plan.firstCheckMs,
    failuresInARow: 0,
    checks: 0,
    observed: [],
  };
  let due = carried ? now() : context.info.scheduledTimestampMs + plan.firstCheckMs;
  let checkedHere = false;
  /** Still open: waits here for the next check when it fits, else hands the wait to the server. */
  const waitFor = async (why: string | ((nextRetryDelayMs: number) => ApplicationFailure)) => {
    const wait = due - now();
    // Without holds an attempt makes one check at most.
    if (wait <= DUE_SLACK_MS && (holds || !checkedHere)) return;
    if (due <= lastHeldCheck) {
      if (pace && due - lastBeat >= (pace.heartbeatTimeoutMs * 2) / 3) {
        // The server times the attempt out a heartbeat timeout after the last heartbeat: beat
        // now unless the check and its answer (a call within a third of the timeout, 20 s at
        // 60 s: the provider client's whole default call) come before that. Each one that reaches
        // the server is a billable action, so only then.
        progress.heartbeats = (progress.heartbeats ?? 0) + 1;
        context.heartbeat(progress);
        lastBeat = now();
      }
      try {
        return await context.sleep(wait);
      } catch (err) {
        // A worker going down: the rest of the wait goes to the server, with what was seen so far.
        if (!(err instanceof CancelledFailure) || err.message !== 'WORKER_SHUTDOWN') throw err;
        return handOver(progress, checkedHere, stillOpen('the worker is shutting down', due - now()));
      }
    }
    const retryInMs = Math.max(1, Math.round(wait));
    handOver(progress, checkedHere, typeof why === 'string' ? stillOpen(why, retryInMs) : why(retryInMs));
  };
  await waitFor('the first check is not due yet');
  for (;;) {
    progress.checks++;
    checkedHere = true;
    let outcome: CheckOutcome<C>;
    try {
      outcome = await findOut(call);
    } catch (err) {
      const failure = toTemporalFailure(err);
      const retryAfterMs = failure instanceof ApplicationFailure ? retryAfterOf(failure) : undefined;
      observe(progress, { answer: 'CHECK_FAILED', failure: describeCheckFailure(failure) });
      progress.failuresInARow++;
      const backoffMs = Math.min(
        plan.maxIntervalMs,
        FAILED_CHECK_FIRST_RETRY_MS * 2 ** (progress.failuresInARow - 1),
      );
      const retryAt = scheduleNext(plan, now, retryAfterMs ?? backoffMs);
      if (retryAt === undefined) return { ...progress, settled: false };
      const nextRetryDelay = Math.max(1, Math.round(retryAt - now()));
      // A failed check is retried by the server whatever its kind (a check is always safe to
      // repeat), keeping its type for the record; never held here.
      return handOver(
        progress,
        true,
        failure instanceof ApplicationFailure
          ? ApplicationFailure.create({
              type: failure.type ?? undefined,
              message: failure.message,
              details: failure.details ?? undefined,
              nextRetryDelay,
            })
          : ApplicationFailure.create({ message: failure.message, nextRetryDelay }),
      );
    }
    progress.failuresInARow = 0;
    let why: string;
    if (!outcome.found) {
      observe(progress, { answer: 'NOT_FOUND' });
      progress.nextCheckMs = Math.min(plan.maxIntervalMs, progress.nextCheckMs * 2);
      why = 'the provider does not know the order (yet)';
    } else {
      const { status } = outcome.check;
      const previous = lastStatus(progress) ?? plan.lastStatus;
      observe(progress, { answer: status, check: outcome.check });
      if (!openStatuses.includes(status)) return { ...progress, settled: true };
      progress.nextCheckMs = nextCheckDelayMs(plan, progress.nextCheckMs, status, previous);
      why = `provider status ${status}`;
    }
    // At the pace the checks keep to a grid from the first (a slow answer does not push the
    // next ones later); past it, the schedule's wait from now.
    let paced: number | undefined;
    if (pace && due + pace.intervalMs <= pace.until) {
      paced = Math.max(due + pace.intervalMs, now());
      progress.nextCheckMs = pace.intervalMs;
    }
    const at =
      paced !== undefined && paced < plan.until ? paced : scheduleNext(plan, now, progress.nextCheckMs);
    if (at === undefined) return { ...progress, settled: false };
    due = at;
    await waitFor(why);
  }
}

/** When the next check is due: after `delayMs`, never past the deadline; undefined once it has passed. */
function scheduleNext(plan: PollPlan, now: () => number, delayMs: number): number | undefined {
  const left = plan.until - now();
  if (left <= 0) return undefined;
  return now() + Math.min(delayMs, left);
}

/**
 * The room a held check keeps before the attempt's deadline for the call and its answer: a
 * quarter of the attempt (the call itself is cut at the deadline, attempt-deadline.ts).
 */
function checkRoomMs(info: { startToCloseTimeoutMs: number }): number {
  return info.startToCloseTimeoutMs / 4;
}

/**
 * Ends the attempt with `failure` (retried by the server after its `nextRetryDelay`), recording
 * what it saw in a heartbeat first, if it checked at all: the next attempt starts from there.
 */
function handOver<C>(progress: PollProgress<C>, checked: boolean, failure: ApplicationFailure): never {
  if (checked) {
    // The attempt's first heartbeat reaches the server at once (a billable action, counted here).
    progress.heartbeats = (progress.heartbeats ?? 0) + 1;
    Context.current().heartbeat(progress);
  }
  throw failure;
}

/**
 * The polling's clock: the server's as this worker estimates it (its own clock, less the offset
 * src/temporal/server-clock.ts measured; never ahead of the server's), and never behind the time
 * the server scheduled this attempt (advanced by the attempt's own elapsed time). Due times and the
 * deadline come from the server and the workflow, so a worker whose clock runs behind (or a
 * time-skipping test server) neither waits past a due check nor polls past the deadline, and one
 * whose clock runs ahead does not take the deadline for passed; with clocks that agree it is the
 * worker's clock, which also counts the time the attempt waited in the task queue.
 */
function serverClock(
  info: { currentAttemptScheduledTimestampMs: number },
  estimate: ServerClockEstimate,
): () => number {
  const startedLocally = Date.now();
  return () =>
    Math.max(
      estimate.toServerClock(Date.now()),
      info.currentAttemptScheduledTimestampMs + (Date.now() - startedLocally),
    );
}

function stillOpen(message: string, nextRetryDelayMs: number): ApplicationFailure {
  return ApplicationFailure.create({
    type: ProviderFailureType.stillOpen,
    message,
    nextRetryDelay: Math.max(1, Math.round(nextRetryDelayMs)),
    // The normal course of polling, not an error: logged at debug level, kept out of failure metrics.
    category: ApplicationFailureCategory.BENIGN,
  });
}

function observe<C>(progress: PollProgress<C>, seen: Omit<PollObservation<C>, 'at' | 'times'>): void {
  const last = progress.observed.at(-1);
  if (last && last.answer === seen.answer && last.failure === seen.failure) {
    last.times++;
    return;
  }
  progress.observed.push({ at: new Date().toISOString(), times: 1, ...seen });
  if (progress.observed.length > MAX_OBSERVATIONS) progress.observed.splice(1, 1);
}

function lastStatus<C>(progress: PollProgress<C>): string | undefined {
  for (let i = progress.observed.length - 1; i >= 0; i--) {
    if (progress.observed[i]!.check !== undefined) return progress.observed[i]!.answer;
  }
  return undefined;
}

function retryAfterOf(failure: ApplicationFailure): number | undefined {
  return (failure.details?.[0] as { retryAfterMs?: number } | undefined)?.retryAfterMs;
}

function describeCheckFailure(failure: Error): string {
  return failure instanceof ApplicationFailure && failure.type ? failure.type : failure.name;
}
