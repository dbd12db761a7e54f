/**
 * ProviderError → Temporal failure. The failure's `type` tells Temporal's retry policy and the
 * workflow what is safe to do next (see outcomes.types.ts); its message is the ProviderError's,
 * which never carries the API key or a request body, because failures are kept in workflow history.
 */
import { ApplicationFailure } from '@temporalio/common';
import { isProviderError, type ProviderError } from '../src/provider/errors';
import { ProviderFailureType, type ProviderFailureDetails } from './outcomes.types';

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
    nextRetryDelay: err.kind === 'rate_limited' ? err.retryAfterMs : undefined,
    details: [detailsOf(err)],
  });
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
    case 'outcome_unknown':
      return ProviderFailureType.outcomeUnknown;
  }
}

function detailsOf(err: ProviderError): ProviderFailureDetails {
  const details: ProviderFailureDetails = { kind: err.kind, operation: err.operation };
  if (err.status !== undefined) details.status = err.status;
  if (err.code !== undefined) details.code = err.code;
  if (err.retryAfterMs !== undefined) details.retryAfterMs = err.retryAfterMs;
  return details;
}
