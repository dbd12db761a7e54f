/**
 * Whether an operator's FULFILLED / REFUNDED decision may be applied, given what the provider
 * says about the order right now. Pure: the lifecycle asks the provider, this judges, the
 * operator's guide (docs/operators.md) has the same table in words.
 *
 * The principle: an operator may add knowledge the provider does not have (it has no trace of a
 * top-up that was never sent; it answers UNKNOWN_ERROR and the operator knows the customer was
 * credited), but not overrule what it says, nor refund before the provider says so.
 * A decision the provider contradicts, or cannot confirm yet, is refused with the reason; `force`
 * applies it anyway (recorded as forced), except where the decision names a provider order that
 * does not exist.
 */
import type { OrderType, ProviderStatus } from '../../../contract/order';

/** What the provider answered when asked about the order for the decision. */
export type DecisionAnswer =
  /** `usable`: a FULFILLED answer that matches the order (number and amount, card count, codes present). */
  | { kind: 'status'; status: ProviderStatus; usable: boolean; problem?: string }
  | { kind: 'not-found' }
  | { kind: 'failed' }
  /** A gift card with no provider order id, in the order or the decision: nothing to ask about. */
  | { kind: 'no-reference' };

export interface DecisionCase {
  decision: 'FULFILLED' | 'REFUNDED';
  orderType: OrderType;
  /** The decision names the provider's orderId (gift cards), which the order did not have. */
  bringsOrderId: boolean;
  answer: DecisionAnswer;
}

export type Verdict =
  /** The provider's final status is the decision: apply it with the provider's result; nothing to watch. */
  | { verdict: 'confirmed' }
  /** Nothing contradicts it, but the provider cannot confirm it: apply it, then watch the provider. */
  | { verdict: 'unconfirmed' }
  /** A gift card's newly given orderId is still being processed: take it and poll it again. */
  | { verdict: 'resume' }
  | {
      verdict: 'refused';
      kind: 'contradicted' | 'unconfirmed' | 'invalid';
      reason: string;
      forceable: boolean;
    };

const refused = (
  kind: 'contradicted' | 'unconfirmed' | 'invalid',
  reason: string,
  forceable = true,
): Verdict => ({ verdict: 'refused', kind, reason, forceable });

/** A REFUNDED decision the provider has answered neither way: it needs `force`. */
const refundBeforeProvider = (reason: string): Verdict => refused('unconfirmed', reason);

export function judgeDecision({ decision, orderType, bringsOrderId, answer }: DecisionCase): Verdict {
  switch (answer.kind) {
    case 'failed':
      return refused('unconfirmed', 'the provider could not be asked about the order');
    case 'no-reference':
      // Only a gift card whose placement answer was lost: no order id anywhere.
      return decision === 'REFUNDED'
        ? { verdict: 'unconfirmed' }
        : refused(
            'invalid',
            'a gift card is resolved FULFILLED with the provider’s orderId, so its cards can be delivered',
          );
    case 'not-found':
      if (bringsOrderId) return refused('invalid', 'the provider does not know this orderId', false);
      // Nothing was sent, or not yet committed: REFUNDED stands, and the watch catches a late commit.
      return decision === 'REFUNDED'
        ? { verdict: 'unconfirmed' }
        : refused(
            'contradicted',
            `the provider has no trace of the ${orderType === 'gift_card' ? 'order' : 'top-up'}`,
          );
    case 'status':
      return judgeStatus(decision, orderType, bringsOrderId, answer);
  }
}

function judgeStatus(
  decision: 'FULFILLED' | 'REFUNDED',
  orderType: OrderType,
  bringsOrderId: boolean,
  { status, usable, problem }: Extract<DecisionAnswer, { kind: 'status' }>,
): Verdict {
  switch (status) {
    case 'FULFILLED':
      if (decision === 'REFUNDED') return refused('contradicted', 'the provider reports FULFILLED');
      return usable
        ? { verdict: 'confirmed' }
        : refused('contradicted', `the provider's FULFILLED answer does not match this order (${problem})`);
    case 'REFUNDED':
      return decision === 'REFUNDED'
        ? { verdict: 'confirmed' }
        : refused('contradicted', 'the provider reports REFUNDED');
    case 'PARTIALLY_FILLED':
      // Part delivered, part refunded: neither decision is true; a RECHECK settles it as PARTIALLY_FULFILLED.
      return refused(
        'contradicted',
        'the provider reports PARTIALLY_FILLED: part of the order was delivered and the rest refunded (RECHECK settles it)',
      );
    case 'PENDING':
    case 'HANDLING':
    case 'QUEUED':
      if (decision === 'REFUNDED') {
        return refused('contradicted', `the provider reports ${status}: it may still fulfil the order`);
      }
      if (bringsOrderId && orderType === 'gift_card') return { verdict: 'resume' };
      return refused(
        'unconfirmed',
        `the provider reports ${status}: it has not fulfilled the order yet (the order settles itself when it does)`,
      );
    case 'UNKNOWN_ERROR':
      // The provider itself does not know yet, and documents how it ends: its support settles the
      // order within hours, and a refund before then may pay twice (the refund, and a credit that
      // comes through). FULFILLED is applied and watched: a later REFUNDED reopens the order.
      return decision === 'REFUNDED'
        ? refundBeforeProvider(UNKNOWN_ERROR_GUIDANCE)
        : { verdict: 'unconfirmed' };
    default:
      // A status nobody documented tells us nothing either way: a refund waits for the provider's
      // word like one on UNKNOWN_ERROR; FULFILLED is applied and watched.
      return decision === 'REFUNDED'
        ? refundBeforeProvider(
            `the provider reports ${status}, a status it does not document: it may still fulfil the order`,
          )
        : { verdict: 'unconfirmed' };
  }
}

/** What the provider documents about UNKNOWN_ERROR, as a refused REFUNDED quotes it. */
export const UNKNOWN_ERROR_GUIDANCE =
  'the provider reports UNKNOWN_ERROR: its support resolves it to FULFILLED or REFUNDED within 1-24 h, ' +
  'and it documents not to refund before it says so';

/**
 * While a decision is watched: does the provider's answer reopen the order? Only a final status
 * that contradicts the decision and is news (not what the provider said when the decision was
 * applied, which the operator saw and overrode). PARTIALLY_FILLED contradicts either decision:
 * part of a gift-card order was delivered and the rest refunded.
 */
export function contradictsLater(
  decision: 'FULFILLED' | 'REFUNDED',
  baseline: ProviderStatus | undefined,
  status: ProviderStatus,
): status is LaterContradiction {
  const final = status === 'FULFILLED' || status === 'REFUNDED' || status === 'PARTIALLY_FILLED';
  return final && status !== decision && status !== baseline;
}

/** A provider's final answer that reopens a watched decision. */
export type LaterContradiction = 'FULFILLED' | 'REFUNDED' | 'PARTIALLY_FILLED';
