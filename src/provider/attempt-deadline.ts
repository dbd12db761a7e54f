/**
 * One clock for a provider call: its deadline is the activity attempt's own, as Temporal counts it
 * (start-to-close from when the attempt started, schedule-to-close from when the activity was first
 * scheduled), minus a margin, and it is cancelled with the activity. So no call outlives the
 * attempt Temporal gave up on, whatever HTTP timeouts the worker's environment sets: by the time
 * the workflow decides what to do after a timed-out attempt, that attempt's request is over.
 *
 * Start-to-close runs from the attempt's start, not from when it was scheduled: a task that waited
 * in the queue (workers down, a busy machine) still has its whole start-to-close. The SDK does not
 * say when the attempt started; the worker receives the task the moment the server records the
 * start, so the first provider call of an activity — made as it begins — takes that moment as the
 * start, and the margin covers the delivery.
 */
import { Context, type Info } from '@temporalio/activity';
import type { CallOptions } from './client';
import { deadline } from './deadline';
import { workerServerClock } from '../temporal';

/**
 * Time left to report the outcome to Temporal before it times the attempt out. A tenth of the
 * attempt, between 50 ms and 1 s: the task's delivery and the clocks of worker and server.
 */
export function marginMs(startToCloseTimeoutMs: number): number {
  return Math.min(1_000, Math.max(50, startToCloseTimeoutMs / 10));
}

/**
 * A local activity's margin: a quarter of its start-to-close. Its timeout is kept by the worker's
 * SDK core, off the event loop, while its outcome is reported from the event loop: a busy loop runs
 * the attempt's own deadline late, and an attempt that misses the core's timeout leaves only a bare
 * timeout, never the "not sent" it could have proved.
 */
export function localMarginMs(startToCloseTimeoutMs: number): number {
  return Math.max(marginMs(startToCloseTimeoutMs), startToCloseTimeoutMs / 4);
}

type AttemptTimes = Pick<
  Info,
  'startToCloseTimeoutMs' | 'scheduledTimestampMs' | 'scheduleToCloseTimeoutMs'
> &
  Partial<Pick<Info, 'isLocal' | 'currentAttemptScheduledTimestampMs'>>;

/**
 * Epoch ms by which a provider call made in an attempt that started at `startedAt` must be over;
 * schedule-to-close counts when set (0: none). A local attempt counts from when this worker
 * scheduled it if that is earlier (the same machine's clock; the core starts it no sooner), so a
 * loop that started its code late does not push its deadline past the core's.
 *
 * `startedAt` and the result are on the clock of `serverOffsetMs`'s reader: a regular activity's
 * scheduled time is the server's, so on a worker whose clock is `serverOffsetMs` ahead
 * (src/temporal/server-clock.ts) its schedule-to-close ends that much later; a local activity's
 * times are the worker's own.
 */
export function attemptDeadline(info: AttemptTimes, startedAt: number, serverOffsetMs = 0): number {
  const local = info.isLocal === true;
  const from =
    local && info.currentAttemptScheduledTimestampMs !== undefined
      ? Math.min(startedAt, info.currentAttemptScheduledTimestampMs)
      : startedAt;
  const ends = [from + info.startToCloseTimeoutMs];
  const scheduledAt = info.scheduledTimestampMs + (local ? 0 : serverOffsetMs);
  if (info.scheduleToCloseTimeoutMs > 0) ends.push(scheduledAt + info.scheduleToCloseTimeoutMs);
  const margin = local ? localMarginMs(info.startToCloseTimeoutMs) : marginMs(info.startToCloseTimeoutMs);
  return Math.min(...ends) - margin;
}

/** When each running activity made its first provider call, i.e. when it started (see above). */
const startedAt = new WeakMap<Context, number>();

/**
 * For an activity that does not call the provider as it begins (a polling attempt that first
 * waits): the attempt starts now, not at its first call.
 */
export function markAttemptStart(now: number = Date.now()): void {
  const context = Context.current();
  if (!startedAt.has(context)) startedAt.set(context, now);
}

/**
 * Call options for a provider call inside the current activity: aborted at the attempt's deadline
 * or when the activity is cancelled (worker shutdown, the workflow gave up on it). Already aborted
 * when no time is left, so the call is not even queued.
 */
export function withinAttempt(now: number = Date.now()): Required<Pick<CallOptions, 'signal'>> {
  const context = Context.current();
  if (!startedAt.has(context)) startedAt.set(context, now);
  const { info, cancellationSignal } = context;
  // Its own timer holds it until the attempt's deadline; nothing to clear before that.
  const { signal } = deadline(
    attemptDeadline(info, startedAt.get(context) ?? now, workerServerClock.offsetMs() ?? 0) - now,
    'the activity attempt has no time left',
    cancellationSignal,
  );
  return { signal };
}
