import type { ProviderFailureKind } from '../../contract/provider';

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
