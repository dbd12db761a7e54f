/**
 * What a provider check answer means for an order, by the provider's documented statuses: open,
 * final (with the order's result) or one a person must review. Deterministic workflow code.
 */
import type { OrderRequest, OrderResult } from '../../../contract/order';
import { offersOf, refundOf } from './failures.workflow';
import type { Interpretation, OrderAdapter, ProviderCheck } from './types.workflow';

export function interpretCheck<R extends OrderRequest, C extends ProviderCheck>(
  adapter: OrderAdapter<R, C>,
  request: R,
  check: C,
): Interpretation {
  switch (check.status) {
    case 'PENDING':
      return { kind: 'open', status: 'SUBMITTED' };
    case 'HANDLING':
      return { kind: 'open', status: 'PROCESSING' };
    case 'QUEUED':
      return { kind: 'open', status: 'QUEUED' };
    case 'REFUNDED':
      return {
        kind: 'final',
        status: 'REFUNDED',
        result: withDebit(adapter, request, check, refundOf(check)),
      };
    case 'UNKNOWN_ERROR':
      return {
        kind: 'review',
        reason: 'the provider reports UNKNOWN_ERROR',
        // The provider's own guidance (docs/operators.md "Runbook: UNKNOWN_ERROR").
        evidence:
          'provider status UNKNOWN_ERROR: the provider resolves it to FULFILLED or REFUNDED within 1-24 h; ' +
          `do not refund before it says so${providerSays(check.refund_message)}`,
        ...(check.refund_message && { refundMessage: check.refund_message }),
      };
    case 'FULFILLED': {
      const result = adapter.fulfilledResult(check, request);
      return 'problem' in result
        ? {
            kind: 'review',
            reason: 'the provider reports FULFILLED with an unusable answer',
            evidence: result.problem,
          }
        : {
            kind: 'final',
            status: 'FULFILLED',
            result: withDebit(adapter, request, check, { ...result, ...offersOf(check) }),
          };
    }
    case 'PARTIALLY_FILLED': {
      const result = adapter.partialResult?.(check, request) ?? {
        problem: 'this order type is never filled in part',
      };
      return 'problem' in result
        ? {
            kind: 'review',
            reason: 'the provider reports PARTIALLY_FILLED with an unusable answer',
            evidence: result.problem,
          }
        : {
            kind: 'final',
            status: 'PARTIALLY_FULFILLED',
            result: withDebit(adapter, request, check, result),
          };
    }
    default:
      // A status nobody documented:
      // an answer a person reads, never a loop.
      return {
        kind: 'review',
        reason: `the provider reports ${check.status}, which this service does not act on`,
        evidence: `provider status ${check.status}`,
      };
  }
}

/** A final answer's result with what the provider debited, when its answer says. */
function withDebit<R extends OrderRequest, C extends ProviderCheck>(
  adapter: OrderAdapter<R, C>,
  request: R,
  check: C,
  result: OrderResult,
): OrderResult {
  const debit = adapter.debit?.(check, request);
  return debit ? { ...result, debit } : result;
}

/** Long enough for the provider's message, short enough for a review notice and a log line. */
const MAX_QUOTED_MESSAGE = 200;

/**
 * The provider's `refund_message` quoted in the evidence, which is logged: one line, bounded, and
 * runs of digits masked in case it names a number (the view keeps the text as given).
 */
function providerSays(message: string | undefined): string {
  if (!message) return '';
  // eslint-disable-next-line no-control-regex -- control characters are exactly what we strip
  let quoted = message.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  // Any digits (Arabic-Indic too), with one separator of any kind between them (06.61.23…, 0661/…).
  quoted = quoted.replace(/\p{Nd}(?:[^\p{L}\p{Nd}]?\p{Nd}){5,}/gu, '[digits]');
  if (quoted.length > MAX_QUOTED_MESSAGE) quoted = `${quoted.slice(0, MAX_QUOTED_MESSAGE)}…`;
  return `; the provider says: "${quoted}"`;
}
