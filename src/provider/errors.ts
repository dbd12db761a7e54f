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

export interface ProviderErrorDetails {
  kind: ProviderFailureKind;
  /** Which client method failed, e.g. `sendMobileTopup`. */
  operation: string;
  /** HTTP status when an answer arrived. */
  status?: number;
  /** The provider's error code, or the transport error code (`ECONNREFUSED`, `UND_ERR_HEADERS_TIMEOUT`). */
  code?: string;
  /** For `rate_limited` and `access_denied`: how long the provider asked us to wait. */
  retryAfterMs?: number;
  /** For `insufficient_balance`: what the order needs and what the account holds (DZD), when told. */
  balance?: { required?: number; available?: number };
}

/**
 * The only error the provider client throws. Its message never contains the API key, request
 * headers or personal data from the request body: it is logged and may end up in workflow history.
 */
export class ProviderError extends Error {
  readonly kind: ProviderFailureKind;
  readonly operation: string;
  readonly status?: number;
  readonly code?: string;
  readonly retryAfterMs?: number;
  readonly balance?: { required?: number; available?: number };

  constructor(details: ProviderErrorDetails, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ProviderError';
    this.kind = details.kind;
    this.operation = details.operation;
    this.status = details.status;
    this.code = details.code;
    this.retryAfterMs = details.retryAfterMs;
    if (details.balance) this.balance = details.balance;
  }
}

export function isProviderError(err: unknown, kind?: ProviderFailureKind): err is ProviderError {
  return err instanceof ProviderError && (kind === undefined || err.kind === kind);
}
