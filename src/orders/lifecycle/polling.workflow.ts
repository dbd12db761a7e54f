/**
 * Polling: one activity that the server retries on the provider's schedule (activities
 * pollUntilSettled) and that returns what the provider said on the way; the view takes each
 * status change at the time the provider reported it (docs/contributors.md "The order lifecycle").
 */
import { ActivityFailure, log, proxyActivities, sleep, TimeoutFailure } from '@temporalio/workflow';
import type { OrderActivities } from '../order.activities';
import type { PollPlan, PollProgress } from '../../../contract/activity-outcomes';
import type { OrderRequest } from '../../../contract/order';
import { describeFailure, PROVIDER_DOES_NOT_KNOW } from './failures.workflow';
import type { Order } from './state.workflow';
import type { ProviderCheck } from './types.workflow';

/**
 * Polling: one activity that the server retries on the provider's schedule
 * (activities pollUntilSettled) and that returns what the provider said on the way; the view
 * takes each status change at the time the provider reported it. While it runs the view keeps
 * the status it had when it started (docs/contributors.md "The order lifecycle").
 */
export async function pollStep<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
): Promise<void> {
  const { pollIntervalMs, pollPaceMs, pollHeartbeatTimeoutMs, activityTimeoutMs } = o.timings;
  // The provider's pace counts from when the order was first polled (right after its send).
  o.pacedUntil ??= Math.min(o.deadlineAt, Date.now() + pollPaceMs);
  // QUEUED is re-checked at its own pace (hours), never the provider's polling pace.
  const paced = pollIntervalMs > 0 && Date.now() < o.pacedUntil && o.view.status !== 'QUEUED';
  const plan: PollPlan = {
    firstCheckMs: Math.max(
      0,
      Math.min(o.nextCheckMs, o.deadlineAt - Date.now(), paced ? pollIntervalMs : Infinity),
    ),
    handlingCheckMs: o.timings.handlingCheckMs,
    maxIntervalMs: o.timings.maxIntervalMs,
    until: o.deadlineAt,
    ...(o.view.providerStatus && { lastStatus: o.view.providerStatus }),
    ...(paced && {
      pace: { intervalMs: pollIntervalMs, until: o.pacedUntil, heartbeatTimeoutMs: pollHeartbeatTimeoutMs },
    }),
  };
  const activities = proxyActivities<OrderActivities>({
    // At the pace, one attempt checks until the pace ends (its heartbeat timeout finds a dead
    // worker); a check after that gets a whole attempt's time for its call.
    startToCloseTimeout: paced ? o.pacedUntil - Date.now() + activityTimeoutMs : activityTimeoutMs,
    ...(paced && { heartbeatTimeout: pollHeartbeatTimeoutMs }),
    // A backstop only: the activity itself ends at the deadline with the last answer.
    scheduleToCloseTimeout: Math.max(0, o.deadlineAt - Date.now()) + 2 * activityTimeoutMs,
    retry: o.retryPolicy(),
    summary: paced
      ? `status checks every ${pollIntervalMs / 1_000} s until the order settles`
      : 'status checks until the order settles (one per attempt)',
  });
  let progress: PollProgress<C> | undefined;
  let settled = false;
  let failed: string | undefined;
  try {
    const outcome = o.adapter.poll(activities, o.order, o.view.providerReference, plan);
    if (!outcome) return o.toReview('stuck: the order cannot be looked up', 'no provider reference');
    ({ settled, ...progress } = await outcome);
  } catch (err) {
    failed = describeFailure(err);
    const timeout =
      err instanceof ActivityFailure && err.cause instanceof TimeoutFailure ? err.cause : undefined;
    progress = timeout?.lastHeartbeatDetails as PollProgress<C> | undefined;
    log.warn('polling ended without an answer', { failure: failed });
  }
  let last: string | undefined;
  for (const seen of progress?.observed ?? []) {
    last = seen.check
      ? `provider status ${seen.answer}`
      : seen.answer === 'NOT_FOUND'
        ? PROVIDER_DOES_NOT_KNOW
        : `the status check failed (${seen.failure ?? 'no answer'})`;
    if (seen.check && o.isOpen()) observePolled(o, seen.check, seen.at);
  }
  if (!o.isOpen()) return;
  // Settled and still open is QUEUED: its own pace, up to its own deadline.
  if (Date.now() >= o.deadlineAt) {
    const queued = o.view.status === 'QUEUED' ? ' (QUEUED: not delivered by its own deadline)' : '';
    return o.toReview(`stuck: no final status by the deadline${queued}`, failed ?? last ?? 'no answer');
  }
  if (settled) return o.publishStatus();
  // Not settled before the deadline: only a failure of the polling itself (a bug); try again later.
  o.publishStatus();
  await sleep(o.timings.maxIntervalMs);
}

/** One answer the polling activity saw, at the time it saw it. */
function observePolled<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  check: C,
  at: string,
): void {
  o.actOnCheck(check, (status) => {
    if (status === o.view.status) return;
    // Published with whatever status the polling ends in: one search-attribute update.
    o.transition(status, `The provider reports ${check.status}`, { at, publish: false });
  });
}
