/**
 * One clock for a provider call: its deadline is the activity attempt's own, as Temporal set it
 * (start-to-close from the attempt's scheduled time, schedule-to-close from the first), minus a
 * margin, and it is cancelled with the activity. So no call outlives the attempt Temporal gave up
 * on, whatever HTTP timeouts the worker's environment sets: by the time the workflow decides what
 * to do after a timed-out attempt, that attempt's request is over.
 */
import { Context, type Info } from '@temporalio/activity';
import type { CallOptions } from '../src/provider';
import { deadline } from '../src/provider/deadline';

/**
 * Time left to report the outcome to Temporal before it times the attempt out. A tenth of the
 * attempt, between 50 ms and 1 s: the worker's clock and the server's may also differ a little.
 */
export function marginMs(startToCloseTimeoutMs: number): number {
  return Math.min(1_000, Math.max(50, startToCloseTimeoutMs / 10));
}

type AttemptTimes = Pick<
  Info,
  | 'currentAttemptScheduledTimestampMs'
  | 'startToCloseTimeoutMs'
  | 'scheduledTimestampMs'
  | 'scheduleToCloseTimeoutMs'
>;

/**
 * Epoch ms by which a provider call made in this attempt must be over. The attempt's scheduled
 * time is at or before its start, so this errs early; schedule-to-close counts when set (0: none).
 */
export function attemptDeadline(info: AttemptTimes): number {
  const ends = [info.currentAttemptScheduledTimestampMs + info.startToCloseTimeoutMs];
  if (info.scheduleToCloseTimeoutMs > 0) ends.push(info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs);
  return Math.min(...ends) - marginMs(info.startToCloseTimeoutMs);
}

/**
 * Call options for a provider call inside the current activity: aborted at the attempt's deadline
 * or when the activity is cancelled (worker shutdown, the workflow gave up on it). Already aborted
 * when no time is left, so the call is not even queued.
 */
export function withinAttempt(now: number = Date.now()): Required<CallOptions> {
  const { info, cancellationSignal } = Context.current();
  // Its own timer holds it until the attempt's deadline; nothing to clear before that.
  const { signal } = deadline(
    attemptDeadline(info) - now,
    'the activity attempt has no time left',
    cancellationSignal,
  );
  return { signal };
}
