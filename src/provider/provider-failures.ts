/**
 * ProviderError → Temporal failure. The failure's `type` tells Temporal's retry policy and the
 * workflow what is safe to do next (see contract/activity-outcomes.ts); its message is the ProviderError's,
 * which never carries the API key or a request body, because failures are kept in workflow history.
 */
import { ApplicationFailure } from '@temporalio/common';
import { isProviderError, type ProviderError } from './errors';
import { ProviderFailureType, type ProviderFailureDetails } from '../../contract/activity-outcomes';

/**
 * The back-off of a retried call the account's balance could not cover: someone must add funds
 * first, so retrying sooner only repeats the refusal (the docs: "don't retry without adding funds").
 */
export const INSUFFICIENT_BALANCE_RETRY_MS = 5 * 60_000;
/** The back-off of a call refused for its key or address, when the provider gives none. */
export const ACCESS_DENIED_RETRY_MS = 60_000;

export interface FailureOptions {
  /**
   * Forbid Temporal from retrying whatever the kind, for a placement the workflow must decide
   * about itself; the `type` still says whether a repeat would be safe.
   */
  neverRetry?: boolean;
}

export function toTemporalFailure(err: unknown, options: FailureOptions = {}): Error {
  // Not a provider failure: a bug in this process. Rethrown as is, so Temporal retries it like any error.
  if (!isProviderError(err)) return err instanceof Error ? err : new Error(String(err));
  const type = failureType(err);
  return ApplicationFailure.create({
    type,
    message: err.message,
    nonRetryable: options.neverRetry || type === ProviderFailureType.rejected,
    nextRetryDelay: retryDelayOf(err),
    details: [detailsOf(err)],
  });
}

function retryDelayOf(err: ProviderError): number | undefined {
  switch (err.kind) {
    case 'rate_limited':
      return err.retryAfterMs;
    case 'insufficient_balance':
      return INSUFFICIENT_BALANCE_RETRY_MS;
    case 'access_denied':
      return err.retryAfterMs ?? ACCESS_DENIED_RETRY_MS;
    default:
      return undefined;
  }
}

function failureType(err: ProviderError): string {
  switch (err.kind) {
    // A 404 answer to a send or placement is as definitive as any other 4xx: nothing was done.
    case 'refused':
    case 'not_found':
      return ProviderFailureType.rejected;
    case 'not_reached':
      return ProviderFailureType.notReached;
    case 'rate_limited':
      return ProviderFailureType.rateLimited;
    case 'duplicate_ref':
      return ProviderFailureType.duplicateRef;
    case 'insufficient_balance':
      return ProviderFailureType.insufficientBalance;
    case 'access_denied':
      return ProviderFailureType.accessDenied;
    case 'outcome_unknown':
      return ProviderFailureType.outcomeUnknown;
  }
}

function detailsOf(err: ProviderError): ProviderFailureDetails {
  const details: ProviderFailureDetails = { kind: err.kind, operation: err.operation };
  if (err.status !== undefined) details.status = err.status;
  if (err.code !== undefined) details.code = err.code;
  if (err.retryAfterMs !== undefined) details.retryAfterMs = err.retryAfterMs;
  if (err.balance) details.balance = err.balance;
  if (failureType(err) === ProviderFailureType.outcomeUnknown) details.endedAt = Date.now();
  return details;
}
