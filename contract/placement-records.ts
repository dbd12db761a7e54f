/**
 * What a lost gift-card placement's search of the provider's records is asked and answers
 * (src/orders/gift-card-records.activities.ts; src/orders/lifecycle/records.workflow.ts acts on it). Free of I/O: workflow
 * code imports it.
 */
import type { GiftCardRequest } from './schemas';

/** What the workflow asks: the placement's request and the window its commit must fall in (epoch ms). */
export interface PlacementSearchInput {
  request: Pick<GiftCardRequest, 'productId' | 'typeId' | 'quantity'>;
  from: number;
  to: number;
  /** The order's settle window: how long after its own placement ended another order may still commit. */
  settleMs: number;
}

/** One provider order that may be the lost placement (no card codes). */
export interface PlacementCandidate {
  orderId: string;
  time?: string;
  status: string;
  quantity?: number;
  pricePerCard?: number;
}

/** Another order of ours that matters to the search. */
export interface OtherOrder {
  ref: string;
  /** Its provider order id, when it has one. */
  providerReference?: string;
  status?: string;
  /** Same product, type and quantity as the order searching; undefined: not read (may be). */
  sameItem?: boolean;
  acceptedAt?: string;
  reviewSince?: string;
  /** Its view could not be read: it may be anything. */
  unreadable?: boolean;
}

export type PlacementSearch =
  | { kind: 'found'; candidate: PlacementCandidate }
  | { kind: 'none'; claimedByOthers: string[] }
  | { kind: 'ambiguous'; candidates: PlacementCandidate[]; rivals: string[] };

/** The evidence line for a review: the candidates and the rivals, no card codes. */
export function describeCandidates(search: Extract<PlacementSearch, { kind: 'ambiguous' }>): string {
  const candidates = search.candidates.map((c) => {
    const amount =
      c.pricePerCard !== undefined && c.quantity !== undefined ? `, ${c.pricePerCard * c.quantity} DZD` : '';
    return `${c.orderId} (${c.time ?? 'time not shown'}, ${c.status}, quantity ${c.quantity ?? '?'}${amount})`;
  });
  const rivals = search.rivals.length
    ? `; other orders of ours that may have placed the same item then: ${search.rivals.join(', ')}`
    : '';
  return `candidates in the provider's gift-card list: ${candidates.join(', ')}${rivals}`;
}

/** The evidence line for a placement the list did not show, twice: the window and when it was read. */
export function describeNotFound(
  search: Extract<PlacementSearch, { kind: 'none' }>,
  window: { from: number; to: number },
  firstLook: number,
  lastLook: number,
): string {
  const iso = (ms: number) => new Date(ms).toISOString();
  const claimed = search.claimedByOthers.length
    ? ` (matching orders there, each another order's of ours: ${search.claimedByOthers.join(', ')})`
    : '';
  return (
    `not in the provider's gift-card list between ${iso(window.from)} and ${iso(window.to)}${claimed}, ` +
    `read at ${iso(firstLook)} and ${iso(lastLook)}; the list's lag has no documented bound, so it may still appear`
  );
}

/** Review reasons of a placement whose answer was lost (the chaos summary splits gift cards in review by them). */
export const placementReviewReasons = {
  /** Records could settle it, but were not read in time (or the order type has none to read). */
  unknown: 'the submission may or may not have reached the provider',
  /** The records show more than one order that may be this placement, or a rival of ours: not a guess. */
  ambiguous: "the provider's records show more than one order that may be this placement",
  /** The list did not show it, twice a settle window apart: placed or not, an operator decides. */
  notFound: "the placement is not in the provider's gift-card list (yet)",
} as const;
