/**
 * How a provider call failed, classified by what the caller may safely do next.
 *
 * The classification is the heart of never-send-twice: only `not_reached` and `rate_limited`
 * prove that the provider did not act on the request. `outcome_unknown` means it may have.
 */
export const providerFailureKinds = [
  /** Definitive 4xx refusal (bad body, bad/disabled key, forbidden): no money moved, do not retry. */
  'refused',
  /** The request never reached the provider (connection refused, DNS, connect timeout): safe to retry. */
  'not_reached',
  /** Sent, but we cannot know what happened (timeout or reset after sending, 5xx, unreadable answer). */
  'outcome_unknown',
  /** 404: the ref or order is unknown to the provider. */
  'not_found',
  /** 409 on a send: this ref was already used, i.e. an earlier send of it was accepted. */
  'duplicate_ref',
  /** 429: refused before processing; retry after `retryAfterMs`. */
  'rate_limited',
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
  /** For `rate_limited`: how long the provider asked us to wait. */
  retryAfterMs?: number;
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

  constructor(details: ProviderErrorDetails, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ProviderError';
    this.kind = details.kind;
    this.operation = details.operation;
    this.status = details.status;
    this.code = details.code;
    this.retryAfterMs = details.retryAfterMs;
  }
}

export function isProviderError(err: unknown, kind?: ProviderFailureKind): err is ProviderError {
  return err instanceof ProviderError && (kind === undefined || err.kind === kind);
}
