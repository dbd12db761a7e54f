/** The provider's answers as the lifecycle asks for them: status checks and the decision's check. */
import { log, proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { OrderActivities } from '../order.activities';
import type { OrderRequest } from '../../../contract/order';
import { describeFailure, PROVIDER_DOES_NOT_KNOW } from './failures.workflow';
import type { Order } from './state.workflow';
import type { Asked, ProviderCheck } from './types.workflow';

/**
 * The provider's answer, or why there is none. Retries failed calls for up to `withinMs`.
 * `summary`: why it is asked, shown on the activity in Temporal UI.
 */
export async function lookUp<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  withinMs: number,
  summary: string,
): Promise<C | string> {
  const activities = proxyActivities<OrderActivities>({
    startToCloseTimeout: o.timings.activityTimeoutMs,
    summary,
    scheduleToCloseTimeout: Math.max(withinMs, o.timings.activityTimeoutMs),
    retry: o.retryPolicy(),
  });
  const pending = o.adapter.check(activities, o.order, o.view.providerReference);
  if (!pending) return 'the order cannot be looked up (no provider reference)';
  try {
    const outcome = await pending;
    return outcome.found ? outcome.check : PROVIDER_DOES_NOT_KNOW;
  } catch (err) {
    log.warn('status check failed', { failure: describeFailure(err) });
    return `the status check failed (${describeFailure(err)})`;
  }
}

/** What the provider says about the order (by `reference` for a gift card), for a decision or the watch. */
export async function askProvider<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  reference: string | undefined,
  options: ActivityOptions,
): Promise<Asked<C>> {
  const pending = o.adapter.check(proxyActivities<OrderActivities>(options), o.order, reference);
  if (!pending) return { kind: 'no-reference' };
  try {
    const outcome = await pending;
    if (!outcome.found) return { kind: 'not-found' };
    return { kind: 'status', check: outcome.check, meaning: o.meaningOf(outcome.check) };
  } catch (err) {
    log.warn('status check failed', { failure: describeFailure(err) });
    return { kind: 'failed', detail: describeFailure(err) };
  }
}
