/**
 * The gift cards of a chaos run against the sandbox's truth: each placement the sandbox committed
 * carries the workflow ID of the order that placed it (our X-Client-Reference header), so every
 * order that holds a provider order id — above all one settled from the provider's records after
 * its placement's answer was lost (src/orders/lifecycle/records.workflow.ts) — is checked to hold its own
 * placement, and no order's placement was made twice. Gift cards in review are split by why:
 * a reason the provider's records could have settled, the records' ambiguity or a placement the
 * list did not show (an operator's call), or anything else.
 */
import { orderWorkflowId } from '../../contract/order';
import { placementReviewReasons } from '../../contract/placement-records';
import type { PlacedGiftCardOrder } from '../../src/sandbox/state';
import type { OrderRecord } from './submit';

/** The timeline entry of an order settled from the provider's records (records.ts). */
const SETTLED_FROM_RECORDS = "Found in the provider's gift-card list";

export interface GiftCardTruth {
  inReview: {
    total: number;
    /** In review for a reason the provider's records could have settled (not searched in time, or not at all). */
    recordDecidable: number;
    /** The records show several candidates or a rival order of ours: an operator decides. */
    ambiguous: number;
    /** Not in the list, twice a settle window apart: its lag has no documented bound, an operator decides. */
    notFound: number;
    /** …of which the sandbox had in truth committed (the list lagged behind): the rest were never placed. */
    notFoundPlaced: number;
    /**
     * The "not in the list" orders by the failure that lost their placement's answer (the review
     * evidence before the search's own words, numbers masked), with how many of each were placed.
     */
    notFoundCauses: Record<string, { orders: number; placed: number }>;
    other: number;
  };
  /** Adopted from the provider's gift-card list after a lost answer. */
  settledFromRecords: number;
  /** Holding a provider order id the sandbox says another order (or nobody we know) placed. */
  wronglySettled: number;
  /** Orders whose placement the sandbox committed more than once. */
  placedTwice: number;
  problems: string[];
}

export function checkGiftCards(records: OrderRecord[], placements: PlacedGiftCardOrder[]): GiftCardTruth {
  const problems: string[] = [];
  const byOrderId = new Map(placements.map((p) => [p.orderId, p]));
  const placedBy = new Map<string, number>();
  for (const p of placements)
    if (p.clientRef) placedBy.set(p.clientRef, (placedBy.get(p.clientRef) ?? 0) + 1);
  const truth: GiftCardTruth = {
    inReview: {
      total: 0,
      recordDecidable: 0,
      ambiguous: 0,
      notFound: 0,
      notFoundPlaced: 0,
      notFoundCauses: {},
      other: 0,
    },
    settledFromRecords: 0,
    wronglySettled: 0,
    placedTwice: 0,
    problems,
  };
  for (const record of records) {
    const { request } = record.planned;
    const view = record.view;
    if (request.type !== 'gift_card' || !record.accepted || !view) continue;
    const workflowId = orderWorkflowId(request.ref);
    const placed = placedBy.get(workflowId) ?? 0;
    if (placed > 1) {
      truth.placedTwice++;
      problems.push(
        `${request.ref}: PLACED TWICE — the sandbox committed ${placed} placements of this order`,
      );
    }
    const fromRecords = view.timeline.some((e) => e.event.startsWith(SETTLED_FROM_RECORDS));
    if (fromRecords) truth.settledFromRecords++;
    if (view.providerReference !== undefined) {
      const placement = byOrderId.get(view.providerReference);
      if (placement?.clientRef !== workflowId) {
        if (fromRecords) truth.wronglySettled++;
        problems.push(
          `${request.ref}: holds provider order ${view.providerReference}, which ${placement ? `${placement.clientRef ?? 'an unknown caller'} placed` : 'the sandbox does not have'}${fromRecords ? ' (settled from the records: WRONGLY SETTLED)' : ''}`,
        );
      }
    }
    if (view.status === 'NEEDS_REVIEW') {
      truth.inReview.total++;
      const reason = view.review?.reason;
      if (reason === placementReviewReasons.unknown) truth.inReview.recordDecidable++;
      else if (reason === placementReviewReasons.ambiguous) truth.inReview.ambiguous++;
      else if (reason === placementReviewReasons.notFound) {
        truth.inReview.notFound++;
        if (placed > 0) truth.inReview.notFoundPlaced++;
        const cause = (truth.inReview.notFoundCauses[causeOf(view.review?.evidence)] ??= {
          orders: 0,
          placed: 0,
        });
        cause.orders++;
        if (placed > 0) cause.placed++;
      } else truth.inReview.other++;
    }
  }
  return truth;
}

/** The failure that lost a placement's answer, from its review evidence: numbers masked, so like ones count together. */
function causeOf(evidence: string | undefined): string {
  const failure = evidence?.split("; not in the provider's gift-card list")[0] ?? '(no evidence)';
  return failure.replace(/\d+/g, 'N').slice(0, 240);
}
