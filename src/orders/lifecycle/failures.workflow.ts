/** Failures and answers in the words the timeline, the review evidence and the decisions use. */
import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';
import { ProviderFailureType, type ProviderFailureDetails } from '../../../contract/activity-outcomes';
import type { OrderResult, ProviderAnswer } from '../../../contract/order';
import type { DecisionAnswer } from './decision-rules.workflow';
import type { Asked, ProviderCheck } from './types.workflow';

/** lookUp's answer when the provider has no trace of the ref or order. */
export const PROVIDER_DOES_NOT_KNOW = 'the provider does not know the order';
/** How many steps of an unclear send's story the review evidence keeps (the first and the latest). */
const MAX_EVIDENCE_STEPS = 8;

export interface ProviderFailure {
  type: string;
  message: string;
  details?: ProviderFailureDetails;
}

/** The provider activity's ApplicationFailure behind an activity failure, if that is what it was. */
export function providerFailureOf(err: unknown): ProviderFailure | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (!(cause instanceof ApplicationFailure) || !cause.type) return undefined;
  return { type: cause.type, message: cause.message, details: cause.details?.[0] as ProviderFailureDetails };
}

/** A local activity that timed out before the worker started it (schedule-to-start): it did nothing. */
export function neverStarted(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_START';
}

/** Only these prove that the provider did not act on the request. */
export function isSafeToRepeat(type: string): boolean {
  return type === ProviderFailureType.notReached || type === ProviderFailureType.rateLimited;
}

/** Evidence for operators: activity, failure type, codes and message — never a request body. */
export function describeFailure(err: unknown): string {
  const parts: string[] = [];
  // A local activity's failure comes without the ActivityFailure that names it: name its operation.
  const operation =
    err instanceof ApplicationFailure ? providerFailureOf(err)?.details?.operation : undefined;
  if (operation) parts.push(`${operation} failed`);
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof ActivityFailure) parts.push(`${e.activityType ?? 'activity'} failed`);
    else if (e instanceof TimeoutFailure) parts.push(`${e.timeoutType} timeout`);
    else if (e instanceof ApplicationFailure) parts.push(e.type ? `${e.type}: ${e.message}` : e.message);
    else parts.push(e.message);
  }
  return parts.join('; ') || String(err);
}

/** An unclear send's story for operators: its first step and the latest ones. */
export function summarize(evidence: string[]): string {
  if (evidence.length <= MAX_EVIDENCE_STEPS) return evidence.join('; ');
  const skipped = evidence.length - MAX_EVIDENCE_STEPS;
  return [evidence[0], `(${skipped} more)`, ...evidence.slice(-(MAX_EVIDENCE_STEPS - 1))].join('; ');
}

export function refundOf(check: ProviderCheck): OrderResult {
  const result: OrderResult = {};
  if (check.refund_message) result.refundMessage = check.refund_message;
  return { ...result, ...offersOf(check) };
}

/**
 * The provider's `suggested_offers`, whatever the answer carries them: a REFUNDED plan mismatch,
 * or the offers a `GETMENU_<Operator>` plan returns (documented; its status is not).
 */
export function offersOf(check: ProviderCheck): Pick<OrderResult, 'suggestedOffers'> {
  if (!check.suggested_offers?.length) return {};
  return {
    suggestedOffers: check.suggested_offers.map((offer) => ({
      planCode: offer.plan_code,
      ...(offer.amount !== undefined && { amount: offer.amount }),
      ...(offer.typename !== undefined && { typename: offer.typename }),
    })),
  };
}

/** The provider's answer as the decision rules read it. */
export function decisionAnswerOf<C extends ProviderCheck>(asked: Asked<C>): DecisionAnswer {
  if (asked.kind !== 'status') return asked.kind === 'failed' ? { kind: 'failed' } : { kind: asked.kind };
  const { meaning } = asked;
  return {
    kind: 'status',
    status: asked.check.status,
    usable: meaning.kind === 'final',
    ...(meaning.kind === 'review' && { problem: meaning.evidence }),
  };
}

/** What the provider said, for the resolution, a refusal and the watch (no personal data). */
export function providerAnswerOf<C extends ProviderCheck>(asked: Asked<C>): ProviderAnswer {
  switch (asked.kind) {
    case 'status': {
      const { status } = asked.check;
      const problem =
        status === 'FULFILLED' && asked.meaning.kind === 'review' ? ` (${asked.meaning.evidence})` : '';
      return { status, answer: `provider status ${status}${problem}` };
    }
    case 'not-found':
      return { answer: PROVIDER_DOES_NOT_KNOW };
    case 'failed':
      return { answer: `the status check failed (${asked.detail})` };
    case 'no-reference':
      return { answer: 'the order cannot be looked up (no provider reference)' };
  }
}
