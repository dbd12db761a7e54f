/**
 * After an operator's decision the provider had not confirmed: the provider is checked until the
 * watch ends; an answer against the decision reopens the order as DISPUTED.
 */
import { condition, log } from '@temporalio/workflow';
import type { DecisionWatch, OrderRequest, OrderResult, ReconciledDispute } from '../../../contract/order';
import { contradictsLater, type LaterContradiction } from './decision-rules.workflow';
import { countDispute } from './decision-metrics.workflow';
import { providerAnswerOf } from './failures.workflow';
import { askProvider } from './provider.workflow';
import type { Order } from './state.workflow';
import type { Asked, ProviderCheck } from './types.workflow';

export function startWatch<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  decision: 'FULFILLED' | 'REFUNDED',
  asked: Asked<C>,
): void {
  const { reviewWatchMs, reviewWatchFirstCheckMs } = o.timings;
  if (reviewWatchMs <= 0) return;
  if (!o.canLookUp()) {
    o.note('Not watched: the order has no provider reference to check');
    return;
  }
  const untilMs = Date.now() + reviewWatchMs;
  o.watch = {
    decision,
    ...(asked.kind === 'status' && { baseline: asked.check.status }),
    untilMs,
    nextCheckMs: reviewWatchFirstCheckMs,
  };
  const until = new Date(untilMs).toISOString();
  o.view.watch = { decision, until };
  o.note(`Watching the provider until ${until}: an answer against the decision reopens the order`);
}

export async function watchStep<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  watch: DecisionWatch,
): Promise<void> {
  const wait = Math.min(watch.nextCheckMs, watch.untilMs - Date.now());
  if (wait > 0 && (await condition(() => o.historyIsLong(), wait, { summary: 'watch: next check' }))) return; // continue as new first
  // Nobody waits for these: retried for up to one attempt's time, like a recheck.
  const asked = await askProvider(o, o.view.providerReference, {
    startToCloseTimeout: o.timings.activityTimeoutMs,
    summary: 'watch: does the provider still agree?',
    scheduleToCloseTimeout: o.timings.activityTimeoutMs,
    retry: o.retryPolicy(),
  });
  const at = new Date().toISOString();
  if (o.view.watch) o.view.watch.lastCheck = { at, ...providerAnswerOf(asked) };
  if (asked.kind === 'status') {
    const { status } = asked.check;
    o.view.providerStatus = status;
    if (status === watch.decision && asked.meaning.kind === 'final') {
      return endWatch(o, 'confirmed', `Watch: the provider confirms ${status}`, asked.meaning.result);
    }
    // A partial fill reopens the order too: a dispute's RECHECK settles it PARTIALLY_FULFILLED (review.ts).
    if (contradictsLater(watch.decision, watch.baseline, status))
      return disputeDecision(o, watch, status, asked);
  }
  if (Date.now() >= watch.untilMs) {
    return endWatch(
      o,
      'quiet',
      `Watch ended: the provider did not contradict ${watch.decision} (${providerAnswerOf(asked).answer})`,
    );
  }
  watch.nextCheckMs = Math.min(watch.nextCheckMs * 2, Math.max(o.timings.reviewRecheckMs, watch.nextCheckMs));
}

function endWatch<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  outcome: 'confirmed' | 'quiet',
  event: string,
  result?: OrderResult,
): void {
  o.watch = undefined;
  if (result) o.view.result = { ...o.view.result, ...result };
  if (o.view.watch) o.view.watch.ended = { at: new Date().toISOString(), outcome };
  o.note(event);
}

/** The provider now says otherwise than the operator's decision: the order reopens for operators. */
function disputeDecision<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  watch: DecisionWatch,
  status: LaterContradiction,
  asked: Asked<C>,
): void {
  o.watch = undefined;
  const at = new Date().toISOString();
  if (o.view.watch) o.view.watch.ended = { at, outcome: 'disputed' };
  o.view.dispute = { decision: watch.decision, providerStatus: status, reportedAt: at };
  const resolution = o.view.review?.resolution;
  o.view.review = {
    reason: `the provider reports ${status} after the order was resolved ${watch.decision}`,
    evidence: disputeEvidence(asked),
    since: at,
    ...(resolution && { resolution }),
  };
  delete o.view.completedAt;
  log.warn('order disputed: the provider contradicts the decision', { decision: watch.decision, status });
  countDispute(o.orderType, watch.decision);
  o.transition('DISPUTED', `Disputed: the provider now reports ${status}, against ${watch.decision}`, {
    publish: !o.reviewGetsOwnRun('DISPUTED'),
  });
}

/** What the provider said; for a partial fill, what was delivered and how the dispute ends. */
function disputeEvidence<C extends ProviderCheck>(asked: Asked<C>): string {
  const { answer } = providerAnswerOf(asked);
  const partial =
    asked.kind === 'status' && asked.meaning.kind === 'final' ? asked.meaning.result.partial : undefined;
  if (!partial) return answer;
  return (
    `${answer}: ${partial.fulfilledQuantity} of ${partial.quantity} cards delivered, ` +
    `${partial.refundedQuantity} refunded; RECHECK settles the order PARTIALLY_FULFILLED`
  );
}

/**
 * A run the nightly reconciliation started after a closed one (OrderInput.reconciled): the provider
 * now reports the other final status than the order's, so the order reopens as DISPUTED exactly as
 * the watch reopens it, and operators decide it as any dispute. Only old input never carries
 * `reconciled`: histories from before it replay as they were.
 */
export function reopenReconciled<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  found: ReconciledDispute,
): void {
  const was = o.view.status;
  // A refunded or failed order took no money: both are REFUNDED against a FULFILLED answer.
  const decision = was === 'FULFILLED' || was === 'PARTIALLY_FULFILLED' ? 'FULFILLED' : 'REFUNDED';
  const at = new Date().toISOString();
  o.view.providerStatus = found.providerStatus;
  o.view.dispute = {
    decision,
    providerStatus: found.providerStatus,
    reportedAt: at,
    reconciliation: found.date,
  };
  const resolution = o.view.review?.resolution;
  o.view.review = {
    reason: `the provider reports ${found.providerStatus} for an order that was ${was} (reconciliation of ${found.date})`,
    evidence: found.evidence,
    since: at,
    ...(resolution && { resolution }),
  };
  delete o.view.completedAt;
  log.warn('order disputed by the reconciliation', { was, status: found.providerStatus, date: found.date });
  countDispute(o.orderType, decision);
  o.transition(
    'DISPUTED',
    `Disputed by the reconciliation of ${found.date}: the provider now reports ${found.providerStatus}, against ${was}`,
    { publish: !o.reviewGetsOwnRun('DISPUTED') },
  );
}
