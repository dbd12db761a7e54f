/**
 * An order in NEEDS_REVIEW or DISPUTED: operator decisions (signal `resolveReview` or update
 * `decideReview`) wait in one queue that the run loop works through, so a decision never races a
 * recheck or another decision. Each FULFILLED / REFUNDED decision is checked against the provider
 * first (decision-rules.ts); one the provider has not confirmed is then watched (watch.ts).
 */
import { ApplicationFailure, condition, log } from '@temporalio/workflow';
import { checkReviewDecision, decidedByWhom } from '../../../contract/review-decision';
import type { ReviewDecision } from '../../../contract/schemas';
import { REVIEW_DECISION_EVENT } from '../../../contract/event-types';
import {
  DecisionRejection,
  type DecisionOutcome,
  type DecisionRefusal,
  type OrderRequest,
} from '../../../contract/order';
import { judgeDecision } from './decision-rules.workflow';
import { decisionAnswerOf, providerAnswerOf } from './failures.workflow';
import { askProvider, lookUp } from './provider.workflow';
import type { Order } from './state.workflow';
import type { Asked, ProviderCheck, QueuedDecision } from './types.workflow';
import { startWatch } from './watch.workflow';
import { recheckRecords } from './records.workflow';

export async function reviewStep<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
): Promise<void> {
  // Entering review is published by the review's own run; one that stays here (a decision was
  // already queued) publishes it now.
  o.publishStatus();
  // Also wake when the history grows long: signals alone (a script resending a malformed
  // decision, say) must not push it towards Temporal's limit while we wait.
  const wake = () => o.decisions.length > 0 || o.historyIsLong();
  if (o.view.status === 'DISPUTED') {
    // The provider has spoken and contradicts an operator: only an operator settles o. Woken every
    // re-check interval all the same, so the loop can move it to a new worker version (continue-as-new.ts).
    await condition(wake, o.timings.reviewRecheckMs, { summary: 'dispute: wait for an operator' });
  } else if (!(await condition(wake, o.timings.reviewRecheckMs, { summary: 'review re-check' }))) {
    return recheck(o);
  }
  const queued = o.decisions.shift();
  if (!queued) return; // the loop continues as new first
  await decide(o, queued);
  // Refused decisions change nothing, so receivers hear only of those the workflow acted on.
  if (queued.outcome?.outcome !== 'refused')
    o.announce(REVIEW_DECISION_EVENT, { ...queued.decision, outcome: o.view.status });
}

/** In review only a final FULFILLED or REFUNDED settles the order; anything else waits for an operator. */
async function recheck<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  requestedBy?: ReviewDecision,
): Promise<void> {
  // In review because its records could not be searched or did not show the placement: searched again first (records.workflow.ts).
  await recheckRecords(o);
  // One attempt's worth of retries: decisions queued behind a recheck should not wait long.
  const answer = await lookUp(o, o.timings.activityTimeoutMs, 'review re-check');
  if (typeof answer !== 'string') o.view.providerStatus = answer.status;
  const meaning = typeof answer === 'string' ? undefined : o.meaningOf(answer);
  // A dispute is the provider against an operator: a recheck informs, it does not settle it.
  // Except a partial fill, which no decision can settle: an operator's RECHECK does (the watch
  // reopens the order for it, watch.ts).
  const settlesPartialFill =
    requestedBy !== undefined && meaning?.kind === 'final' && meaning.status === 'PARTIALLY_FULFILLED';
  if (meaning?.kind === 'final' && (o.view.status === 'NEEDS_REVIEW' || settlesPartialFill)) {
    return o.finish(meaning.status, `Recheck: the provider reports ${meaning.status}`, {
      result: meaning.result,
      resolution: requestedBy,
    });
  }
  if (requestedBy) {
    const found = typeof answer === 'string' ? answer : `provider status ${answer.status}`;
    const still = o.view.status === 'NEEDS_REVIEW' ? 'in review' : o.view.status;
    o.note(`Recheck: ${found}; still ${still}`);
  }
}

/** A decision that cannot apply to this order whatever the provider says. */
function misfit<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  decision: ReviewDecision,
): { field: string; message: string } | undefined {
  if (decision.orderId === undefined) return undefined;
  if (o.orderType !== 'gift_card') {
    return { field: 'orderId', message: 'only a gift-card order takes the provider’s orderId' };
  }
  const known = o.view.providerReference;
  if (known !== undefined && known !== decision.orderId) {
    return {
      field: 'orderId',
      message: `this order is the provider’s order ${known}, not ${decision.orderId}`,
    };
  }
  return undefined;
}

/** The update's validator: a rejected update is answered at once and leaves nothing in the history. */
export function validateDecision<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  payload: unknown,
): void {
  const checked = checkReviewDecision(payload);
  const errors = checked.ok
    ? [misfit(o, checked.decision)].filter((e) => e !== undefined)
    : checked.fields.map((field) => ({ field, message: 'missing or invalid' }));
  if (errors.length > 0) {
    const fields = errors.map((e) => e.field).join(', ');
    const message = `invalid review decision (${fields})`;
    throw ApplicationFailure.nonRetryable(message, DecisionRejection.invalid, { errors });
  }
  if (!o.takesDecisions()) {
    const { status } = o.view;
    throw ApplicationFailure.nonRetryable(
      `the order is ${status}; only an order in NEEDS_REVIEW or DISPUTED takes a decision`,
      DecisionRejection.notInReview,
      { status },
    );
  }
}

export async function onUpdate<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  payload: ReviewDecision,
): Promise<DecisionOutcome> {
  const checked = checkReviewDecision(payload);
  // The validator let only valid decisions in; this keeps the cleaned (trimmed) value.
  if (!checked.ok)
    throw ApplicationFailure.nonRetryable('invalid review decision', DecisionRejection.invalid);
  const queued: QueuedDecision = { decision: checked.decision };
  o.decisions.push(queued);
  await condition(() => queued.outcome !== undefined);
  return queued.outcome as DecisionOutcome;
}

export function onSignal<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  payload: unknown,
): void {
  // Operators type this by hand in Temporal UI: check it by the API's rule (zod-free, see review-decision.ts).
  const checked = checkReviewDecision(payload);
  if (!checked.ok) {
    const fields = checked.fields.join(', ');
    log.warn('invalid review decision ignored', { fields });
    o.note(`Invalid review decision ignored (${fields})`);
    return;
  }
  const { decision } = checked.decision;
  const who = decidedByWhom(checked.decision);
  const unfit = misfit(o, checked.decision);
  if (unfit) {
    log.warn('review decision ignored: it does not fit the order', { field: unfit.field });
    o.note(`Review decision ${decision} by ${who} ignored: ${unfit.message}`);
    return;
  }
  if (!o.takesDecisions()) {
    o.note(`Review decision ${decision} by ${who} ignored: the order is not in review`);
    return;
  }
  o.decisions.push({ decision: checked.decision });
}

/** Works one queued decision off: RECHECK asks the provider; FULFILLED / REFUNDED is checked, then applied or refused. */
async function decide<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  queued: QueuedDecision,
): Promise<void> {
  const { decision } = queued;
  const who = decidedByWhom(decision);
  if (!o.takesDecisions()) {
    return refuse(o, queued, {
      kind: 'not-in-review',
      reason: `the order is already ${o.view.status}`,
      forceable: false,
    });
  }
  const newOrderId =
    decision.orderId !== undefined && decision.orderId !== o.view.providerReference
      ? decision.orderId
      : undefined;
  if (decision.decision === 'RECHECK' && newOrderId === undefined) {
    o.note(`Recheck requested by ${who}`);
    await recheck(o, decision);
    return o.answer(queued, 'rechecked');
  }
  const unfit = misfit(o, decision); // the order may have changed since the decision was queued
  if (unfit) return refuse(o, queued, { kind: 'invalid', reason: unfit.message, forceable: false });

  // The operator is waiting for the answer: one attempt, and they try again if it fails.
  const asked = await askProvider(o, newOrderId ?? o.view.providerReference, {
    startToCloseTimeout: o.timings.activityTimeoutMs,
    summary: 'check the decision with the provider',
    retry: { maximumAttempts: 1 },
  });
  if (decision.decision === 'RECHECK') return recheckOrderId(o, queued, asked);
  const verdict = judgeDecision({
    decision: decision.decision,
    orderType: o.orderType,
    bringsOrderId: newOrderId !== undefined,
    answer: decisionAnswerOf(asked),
  });
  switch (verdict.verdict) {
    case 'confirmed':
    case 'unconfirmed':
      return apply(o, queued, decision.decision, asked, verdict.verdict);
    case 'resume':
      if (asked.kind === 'status') return resumePolling(o, queued, asked.check);
      throw new Error('judgeDecision resumes polling only on a provider status');
    case 'refused':
      if (decision.force && verdict.forceable) {
        return apply(o, queued, decision.decision, asked, 'forced', verdict.reason);
      }
      return refuse(o, queued, {
        kind: verdict.kind,
        reason: verdict.reason,
        provider: providerAnswerOf(asked),
        forceable: verdict.forceable,
      });
  }
}

function apply<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  queued: QueuedDecision,
  decided: 'FULFILLED' | 'REFUNDED',
  asked: Asked<C>,
  how: 'confirmed' | 'unconfirmed' | 'forced',
  forcedPast?: string,
): void {
  const { decision } = queued;
  if (decision.orderId !== undefined) o.view.providerReference = decision.orderId;
  if (asked.kind === 'status') o.view.providerStatus = asked.check.status;
  const provider = providerAnswerOf(asked);
  const resolved = `Resolved as ${decided} by ${decidedByWhom(decision)}`;
  const event =
    how === 'confirmed'
      ? `${resolved}; the provider confirms it`
      : how === 'forced'
        ? `${resolved}, forced although ${forcedPast} (${provider.answer})`
        : `${resolved} (${provider.answer})`;
  if (how === 'forced') log.warn('review decision forced', { decision: decided, over: forcedPast });
  o.finish(decided, event, {
    result:
      how === 'confirmed' && asked.kind === 'status' && asked.meaning.kind === 'final'
        ? asked.meaning.result
        : undefined,
    resolution: { ...decision, provider, ...(forcedPast !== undefined && { forcedPast }) },
  });
  if (how !== 'confirmed') startWatch(o, decided, asked);
  o.answer(queued, 'applied');
}

function refuse<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  queued: QueuedDecision,
  refusal: DecisionRefusal,
): void {
  const { decision } = queued.decision;
  const because = refusal.provider ? `${refusal.reason} (${refusal.provider.answer})` : refusal.reason;
  log.warn('review decision refused', { decision, refusal: refusal.kind });
  o.note(`Review decision ${decision} by ${decidedByWhom(queued.decision)} refused: ${because}`);
  o.answer(queued, 'refused', refusal);
}

/** RECHECK with the provider's orderId for a gift card that had none: attach it if the provider knows it. */
function recheckOrderId<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  queued: QueuedDecision,
  asked: Asked<C>,
): void {
  if (asked.kind !== 'status') {
    const unknown = asked.kind === 'not-found';
    return refuse(o, queued, {
      kind: unknown ? 'invalid' : 'unconfirmed',
      reason: unknown
        ? 'the provider does not know this orderId'
        : 'the provider could not be asked about the order',
      provider: providerAnswerOf(asked),
      forceable: false,
    });
  }
  const { decision } = queued;
  o.view.providerReference = decision.orderId;
  o.view.providerStatus = asked.check.status;
  o.note(`Recheck requested by ${decidedByWhom(decision)} with the provider’s order ${decision.orderId}`);
  const { meaning } = asked;
  if (meaning.kind === 'open') return resumePolling(o, queued, asked.check);
  if (meaning.kind === 'final') {
    o.finish(meaning.status, `Recheck: the provider reports ${meaning.status}`, {
      result: meaning.result,
      resolution: { ...decision, provider: providerAnswerOf(asked) },
    });
  } else {
    o.note(`Recheck: provider status ${asked.check.status}; still in review`);
  }
  o.answer(queued, 'rechecked');
}

/** A gift card's orderId, given by an operator, is still being processed: poll it as if just placed. */
function resumePolling<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  queued: QueuedDecision,
  check: C,
): void {
  const { decision } = queued;
  o.view.providerReference = decision.orderId;
  o.deadlineAt = Date.now() + o.timings.deadlineMs;
  o.nextCheckMs = o.timings.firstCheckMs;
  o.note(
    `The provider’s order ${decision.orderId}, given by ${decidedByWhom(decision)}, is ${check.status}: polling it again`,
  );
  o.observe(check);
  o.answer(queued, 'resumed');
}
