/**
 * What of the provider's documented formats is ours to share: the statuses an order's view shows,
 * the failure kinds an activity's failure carries, and the number, plan and amount rules the order
 * request schema (./schemas.ts) applies before anything reaches the provider. The provider client
 * (src/provider/wire.ts, errors.ts) reads them from here, so intake and the wire cannot disagree.
 */
import { z } from 'zod';

/**
 * Every status the provider documents: the spec's five, QUEUED (internet cards scheduled for
 * later delivery) and PARTIALLY_FILLED (gift-card orders).
 */
export const providerStatuses = [
  'PENDING',
  'HANDLING',
  'FULFILLED',
  'REFUNDED',
  'UNKNOWN_ERROR',
  'QUEUED',
  'PARTIALLY_FILLED',
] as const;
export const DocumentedStatus = z.enum(providerStatuses);
export type DocumentedStatus = z.infer<typeof DocumentedStatus>;
/**
 * A status as a check answer carries it: one of the documented ones, or any other string (an
 * undocumented status is an answer for review, not a parse error).
 */
export const ProviderStatus = z.string().min(1);
export type ProviderStatus = DocumentedStatus | (string & {});

export function isDocumentedStatus(status: string): status is DocumentedStatus {
  return (providerStatuses as readonly string[]).includes(status);
}

/** The 4G type id is the string `4G` (fact sheet, internet). */
export const internetLineTypes = ['ADSL', '4G'] as const;
export const InternetLineType = z.enum(internetLineTypes);
export type InternetLineType = z.infer<typeof InternetLineType>;

/** Decision (neither the spec nor the docs show bounds): what the sandbox accepts. */
export const limits = {
  refMaxLength: 64,
  /** DZD; one top-up or card value never exceeds this (GROS_MOBILIS goes to 300,000). */
  maxAmount: 300_000,
  maxQuantity: 100,
} as const;

/** The documented MSSIDN rule (send-topup): `0`, then 5, 6 or 7, then 8 digits. */
export const mobileNumberPattern = /^0[567][0-9]{8}$/;
/** The documented line numbers (internet, validate-number): ADSL 9 digits with the 0, 4G `213` + 9 digits. */
export const lineNumberPatterns: Readonly<Record<InternetLineType, RegExp>> = {
  ADSL: /^0[0-9]{8}$/,
  '4G': /^213[0-9]{9}$/,
};
/** A plan code as /v3/mobile/plans lists them (PREPAID_DJEZZY, PIXX_500, GETMENU_Mobilis…). */
export const PlanCode = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9_]+$/, 'expected a plan code from the provider’s plans');
/**
 * How a provider call failed, classified by what the caller may safely do next: by the provider's
 * documented `error.code` first, by the HTTP status when the code says nothing we know (classify.ts).
 *
 * The classification is the heart of never-send-twice: only `not_reached`, `rate_limited`,
 * `insufficient_balance` and `access_denied` prove that the provider did not act on the request.
 * `outcome_unknown` means it may have.
 */
export const providerFailureKinds = [
  /** The order itself is refused (ERR_VALIDATION, ERR_PHONE, out of stock, any other 4xx): no money moved, do not retry. */
  'refused',
  /** The request never reached the provider (connection refused, DNS, connect timeout): safe to retry. */
  'not_reached',
  /** Sent, but we cannot know what happened (timeout or reset after sending, 5xx, unreadable answer). */
  'outcome_unknown',
  /** 404: the ref or order is unknown to the provider. */
  'not_found',
  /** DUPLICATED_REF (documented as 403; whatever the status): the provider already holds a top-up under this ref. */
  'duplicate_ref',
  /** 429: refused before processing; retry after `retryAfterMs`. */
  'rate_limited',
  /** INSUFFICIENT_BALANCE / NO_BALANCE: nothing sent, the account cannot cover it; retry once funds are added. */
  'insufficient_balance',
  /**
   * We cannot talk to the provider: no key, a bad key (INVALID_ACCESS_TOKEN / ERR_AUTH), our
   * address blocked (IP_BLOCKED) or outside the key's whitelist (403 without a code), a disabled
   * key. Nothing was done, and it is never the order's fault.
   */
  'access_denied',
] as const;
export type ProviderFailureKind = (typeof providerFailureKinds)[number];

/** The operators `/v3/ping` reports on; Mobilis' fixed plans (not PREPAID_ / GROS_) have a state of their own. */
export const operatorNames = ['mobilis', 'ooredoo', 'djezzy', 'mobilisFixedPlans'] as const;
export const OperatorName = z.enum(operatorNames);
export type OperatorName = z.infer<typeof OperatorName>;
