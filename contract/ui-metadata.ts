/**
 * What an order shows of itself in Temporal UI, so an operator reads it on the workflow page
 * without a click: the static summary the API sets at start (`orderSummary`) and the current
 * details the workflow keeps up to date (`orderDetails`, Temporal markdown) — the status and, in
 * review, why, the evidence and the decision JSON to paste into **Send an Update** /
 * **Send a Signal**. Also the handler descriptions Temporal UI lists beside the query, signal and
 * update names.
 *
 * Never a phone or line number or a card code: the summary and details are payloads (encrypted by
 * the codec like the rest, test/orders/ui-metadata.test.ts), but they are meant to be glanced
 * at on a shared screen. The view's reason, evidence and timeline hold none either.
 *
 * Pure and deterministic: imported by workflow code and by the API.
 */
import type { OrderRequest, OrderView } from './order';

const typeNames = {
  mobile_topup: 'Mobile top-up',
  internet_topup: 'Internet top-up',
  gift_card: 'Gift card',
} as const;

/** One line: the order's type, ref and amount (a gift card: how many of which product). */
export function orderSummary(request: OrderRequest): string {
  const what = `${typeNames[request.type]} ${request.ref}`;
  switch (request.type) {
    case 'mobile_topup':
      return `${what} · amount ${request.amount} · plan ${request.planCode}`;
    case 'internet_topup':
      return `${what} · value ${request.value} · ${request.lineType}`;
    case 'gift_card':
      return `${what} · ${request.quantity} × product ${request.productId}, type ${request.typeId}`;
  }
}

export type PastableDecision = { decision: 'FULFILLED' | 'REFUNDED' | 'RECHECK'; operator: ''; note: '' };

/** The decisions an operator may paste; `operator` and `note` are left empty on purpose (required). */
export const pastableDecisions: readonly PastableDecision[] = (
  ['FULFILLED', 'REFUNDED', 'RECHECK'] as const
).map((decision) => ({ decision, operator: '', note: '' }));

const howToDecide =
  'More Actions → Send an Update → decideReview (answers applied, or refused and why), or Send a Signal → ' +
  'resolveReview (no answer: see the timeline). Paste one of the decisions below, fill in operator and note.';

const whatDecisionsMean =
  'FULFILLED: the customer got it. REFUNDED: they did not. RECHECK: ask the provider again now. ' +
  'A decision the provider contradicts is refused, and so is REFUNDED while it answers UNKNOWN_ERROR ' +
  '(it resolves those itself within 1-24 h); force: true applies it anyway (say why in note).';

/**
 * What an order in review (or disputed) shows as the input of its own run: Temporal UI prints a
 * run's input on the workflow page as it opens, one block per argument, each with a copy button.
 * The workflow continues as new into review with it (order-lifecycle.ts `reviewGetsOwnRun`), so
 * the page says why without a click; the decisions follow as arguments of their own.
 */
export interface ReviewNotice {
  status: 'NEEDS_REVIEW' | 'DISPUTED';
  /** The order in one line, as the first run's static summary says it (a continued run has none). */
  order: string;
  why: string;
  evidence?: string;
  providerStatus?: string;
  inReviewSince: string;
  disputed?: string;
  howToDecide: string;
  decisions: string;
}

/** The notice for the view's review, none outside review. */
export function reviewNotice(view: OrderView): ReviewNotice | undefined {
  const { review, status } = view;
  if ((status !== 'NEEDS_REVIEW' && status !== 'DISPUTED') || !review) return undefined;
  return {
    status,
    order: orderSummary(view.request),
    why: review.reason,
    ...(review.evidence ? { evidence: review.evidence } : {}),
    ...(view.providerStatus ? { providerStatus: view.providerStatus } : {}),
    inReviewSince: review.since,
    ...(view.dispute ? { disputed: disputeLine(view.dispute, review.resolution) } : {}),
    howToDecide,
    decisions: whatDecisionsMean,
  };
}

/** What was decided, by whom, and what the provider reported against it. */
function disputeLine(
  dispute: NonNullable<OrderView['dispute']>,
  decided: NonNullable<OrderView['review']>['resolution'],
): string {
  return (
    `Decided ${dispute.decision}${decided ? ` by ${decided.operator}` : ''}; the provider reported ` +
    `${dispute.providerStatus} at ${dispute.reportedAt}`
  );
}

/** The workflow's current details: what Temporal UI shows under the summary of the order's page. */
export function orderDetails(view: OrderView): string {
  const lines = [`**${view.status}** · ${orderSummary(view.request)}`];
  const { review } = view;
  if ((view.status === 'NEEDS_REVIEW' || view.status === 'DISPUTED') && review) {
    lines.push(
      '',
      // A list: Temporal UI joins the lines of a paragraph.
      `- **Why:** ${review.reason}`,
      ...(review.evidence ? [`- **Evidence:** ${review.evidence}`] : []),
      ...(view.providerStatus ? [`- **Provider status:** ${view.providerStatus}`] : []),
      `- **In review since** ${review.since}`,
    );
    if (view.dispute) lines.push(`- **${disputeLine(view.dispute, review.resolution)}**`);
    lines.push(
      '',
      `**Decide:** ${howToDecide}`,
      // One block each: a block's copy button then copies exactly one decision.
      ...pastableDecisions.flatMap((decision) => ['', '```json', JSON.stringify(decision), '```']),
      '',
      whatDecisionsMean,
    );
  } else if (view.watch && !view.watch.ended) {
    lines.push('', `Decided ${view.watch.decision}; the provider is watched until ${view.watch.until}.`);
  }
  const last = view.timeline.at(-1);
  if (last) lines.push('', `**Last:** ${last.event} (${last.at})`);
  return lines.join('\n');
}

/** Descriptions Temporal UI shows beside the handlers (the `__temporal_workflow_metadata` query). */
export const handlerDescriptions = {
  status:
    'The order as the API shows it: status, providerStatus, review {reason, evidence, since, ' +
    'resolution}, watch, dispute, result, timeline. Card codes appear here in clear.',
  decideReview:
    'An operator decision on an order in NEEDS_REVIEW or DISPUTED, checked against the provider; ' +
    'answers applied, rechecked, resumed or refused (and why). Payload: {"decision": "FULFILLED" | ' +
    '"REFUNDED" | "RECHECK", "operator": "<your name>", "note": "<why>", "force"?: true, "orderId"?: ' +
    '"<gift card: the provider order id>"}. A malformed one or an order not in review is rejected ' +
    'before it is recorded.',
  resolveReview:
    'The same decision as decideReview, as a signal: no answer, the outcome is in the timeline ' +
    '(query status). Payload: {"decision": "FULFILLED" | "REFUNDED" | "RECHECK", "operator": ' +
    '"<your name>", "note": "<why>", "force"?: true, "orderId"?: "<gift card>"}.',
} as const;
