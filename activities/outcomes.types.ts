/**
 * What the provider activities return and how they fail: the part of the activities' contract the
 * workflows need at run time (the failure `type` strings) or as types. Free of I/O, so workflow
 * code may import it (the lint rule allows `activities/*.types`).
 */
import type { ProviderFailureKind } from '../src/provider/errors';

/** `ApplicationFailure.type` of every failure the provider activities throw. */
export const ProviderFailureType = {
  /** A definitive refusal (4xx): nothing was done, retrying cannot help. Non-retryable. */
  rejected: 'ProviderRejected',
  /** The request certainly never reached the provider: safe to repeat, even a gift-card placement. */
  notReached: 'ProviderNotReached',
  /** 429, refused before processing: safe to repeat after `retryAfterMs`. */
  rateLimited: 'ProviderRateLimited',
  /** The provider may have acted on the request: only a lookup can tell. */
  outcomeUnknown: 'ProviderOutcomeUnknown',
  /**
   * 409 on a send: the provider already has a top-up under this ref. Ours, if an earlier send of
   * this order may have reached it; otherwise someone else's (a ref used before, by an order we no
   * longer hold).
   */
  duplicateRef: 'ProviderDuplicateRef',
} as const;
export type ProviderFailureType = (typeof ProviderFailureType)[keyof typeof ProviderFailureType];

/** The first detail of every provider failure: codes only, never a request body or personal data. */
export interface ProviderFailureDetails {
  kind: ProviderFailureKind;
  /** The provider client method, e.g. `sendMobileTopup`. */
  operation: string;
  /** HTTP status, when an answer arrived. */
  status?: number;
  /** The provider's error code or the transport error code. */
  code?: string;
  retryAfterMs?: number;
}

/** A check: what the provider says, or that it does not know the ref / order (404). */
export type CheckOutcome<C> = { found: true; check: C } | { found: false };

/** What a send or placement returns once the provider has the order. */
export interface Submission<C> {
  /** The provider's identifier (topupId, orderId); absent when an earlier attempt's send was found by ref. */
  providerReference?: string;
  /** True when an earlier attempt had already been accepted (found by ref, or a 409): nothing was sent now. */
  alreadySent: boolean;
  /** The order's state, when the activity had to look it up. */
  check?: C;
}
