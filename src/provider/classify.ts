/**
 * Turning what went wrong on a provider call into a ProviderError whose `kind` tells the caller
 * what is safe to do next (see errors.ts). Pure functions, so each rule is tested on its own.
 *
 * Every message built here is short and safe to log or keep in workflow history: the operation,
 * the HTTP status or transport code and the provider's own error code/message — never the API
 * key, request headers or request body (phone numbers are personal data).
 */
import { errorCodeAliases, errorCodes, FailureEnvelope } from './wire';
import { ProviderError } from './errors';
import type { ProviderFailureKind } from '../../contract/provider';

/** When a 429 carries no usable Retry-After we still back off; one second is the usual floor. */
export const DEFAULT_RETRY_AFTER_MS = 1_000;

export const CALL_DEADLINE_EXCEEDED = 'CALL_DEADLINE_EXCEEDED';
/** The caller cancelled the call (its activity was cancelled: worker shutdown, workflow cancelled). */
export const CALL_CANCELLED = 'CALL_CANCELLED';
/** The caller's signal had fired before the call began: nothing was sent. */
export const CALL_NOT_STARTED = 'CALL_NOT_STARTED';

/** The call ended before its request was written to a socket: nothing was sent. */
export const CALL_NOT_SENT = 'CALL_NOT_SENT';

/** Long enough for any real provider message, short enough to keep log lines and histories small. */
const MAX_PROVIDER_MESSAGE_LENGTH = 200;

/**
 * Transport failures that happen before a single byte of the request can have been processed:
 * the connection was never established (or the request never left this process), so the
 * provider cannot have acted on it. Everything else is treated as "maybe it did".
 */
const NOT_REACHED_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  // Raised synchronously by undici before dispatch: the request was never written to a socket.
  'UND_ERR_INVALID_ARG', // the request options were rejected
  'UND_ERR_CLOSED', // the pool was already closed (a closing pool still finishes requests in flight)
]);

/**
 * Routing failures: "not reached" only while connecting. On an established keep-alive socket the
 * same codes can arrive after the request was written, when the provider may have acted on it.
 */
const NOT_REACHED_WHILE_CONNECTING: ReadonlySet<string> = new Set(['EHOSTUNREACH', 'ENETUNREACH']);

function isNotReached(err: unknown, code: string): boolean {
  if (NOT_REACHED_CODES.has(code)) return true;
  return NOT_REACHED_WHILE_CONNECTING.has(code) && connectSyscall(err);
}

function connectSyscall(err: unknown): boolean {
  if (err instanceof AggregateError) return err.errors.every(connectSyscall);
  return typeof err === 'object' && err !== null && (err as { syscall?: unknown }).syscall === 'connect';
}

/** The `code` of a transport error; looks inside an AggregateError (Node's happy-eyeballs connect). */
export function transportErrorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { name } = err as { name?: unknown };
  // A whole-call deadline (AbortSignal.timeout, ours or the caller's): queued or sent, nobody can tell.
  if (name === 'TimeoutError') return CALL_DEADLINE_EXCEEDED;
  // Temporal's CancelledFailure, or a plain abort: likewise.
  if (name === 'CancelledFailure' || name === 'AbortError') return CALL_CANCELLED;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  if (err instanceof AggregateError) {
    const codes = err.errors.map(transportErrorCode).filter((c): c is string => c !== undefined);
    // "Not reached" only if every attempted address said so; otherwise report the one that did not.
    return codes.find((c) => !NOT_REACHED_CODES.has(c)) ?? codes[0];
  }
  return undefined;
}

/**
 * A request that failed before any response headers arrived.
 * `cause` is kept for operators: undici's and Node's transport errors carry addresses and
 * codes, never the headers or body of the request.
 */
export function transportFailure(operation: string, err: unknown): ProviderError {
  const code = transportErrorCode(err) ?? 'UNKNOWN';
  if (isNotReached(err, code)) {
    return new ProviderError(
      { kind: 'not_reached', operation, code },
      `${operation}: provider not reached (${code})`,
      { cause: err },
    );
  }
  return new ProviderError(
    { kind: 'outcome_unknown', operation, code },
    `${operation}: no answer from the provider (${code}); it may have acted on the request`,
    { cause: err },
  );
}

/** The caller's signal had already fired: the request was never queued, let alone sent. */
export function notStarted(operation: string, reason: unknown): ProviderError {
  const why = transportErrorCode(reason) ?? 'ABORTED';
  return new ProviderError(
    { kind: 'not_reached', operation, code: CALL_NOT_STARTED },
    `${operation}: not sent, the caller's time was already up (${why})`,
  );
}

/**
 * The call ended (its deadline, a cancel, a failed connection) before undici handed the request to
 * a socket: still queued for a connection, or connecting. Not a byte of it was written.
 */
export function notSent(operation: string, err: unknown): ProviderError {
  const why = transportErrorCode(err) ?? 'UNKNOWN';
  return new ProviderError(
    { kind: 'not_reached', operation, code: CALL_NOT_SENT },
    `${operation}: not sent, the request never left this process (${why})`,
    { cause: err },
  );
}

/**
 * The response headers arrived but reading the body failed (body timeout, reset mid-body).
 * Whatever the error code, the provider did receive and process the request.
 */
export function bodyReadFailure(operation: string, status: number, err: unknown): ProviderError {
  const code = transportErrorCode(err) ?? 'UNKNOWN';
  return new ProviderError(
    { kind: 'outcome_unknown', operation, status, code },
    `${operation}: HTTP ${status} but the response body was lost (${code}); it may have acted on the request`,
    { cause: err },
  );
}

/**
 * A 2xx whose body is not the documented envelope. For a send, the provider may well have
 * committed, so this is never a refusal: the caller must find out (check-ref) before resending.
 * The parse error is deliberately not attached: a JSON SyntaxError quotes the body, which may
 * hold personal data. Only the paths and codes of the schema issues are reported.
 */
export function invalidResponse(operation: string, status: number, problem: string): ProviderError {
  return new ProviderError(
    { kind: 'outcome_unknown', operation, status, code: 'INVALID_RESPONSE' },
    `${operation}: HTTP ${status} with an unexpected response (${problem})`,
  );
}

/** Documented: an IP_BLOCKED address stays blocked for 15 minutes. */
export const IP_BLOCK_MS = 15 * 60_000;

/**
 * A failure answer: a non-2xx, or any answer whose body is the failure envelope. Classified by the
 * provider's `error.code` first (a DUPLICATED_REF is the same fact whatever status carries it),
 * then by the HTTP status. `details` are read only for the numbers they document (`required`,
 * `available`): a `value` echoes the request and may be personal data.
 */
export function statusFailure(
  operation: string,
  status: number,
  retryAfter: string | string[] | undefined,
  body: unknown,
  secret: string,
): ProviderError {
  const parsed = FailureEnvelope.safeParse(body);
  const providerError = parsed.success ? parsed.data.error : undefined;
  const code = providerError && (errorCodeAliases[providerError.code] ?? providerError.code);
  const kind = (code ? kindForCode(code) : undefined) ?? kindForStatus(status);
  let retryAfterMs: number | undefined;
  if (kind === 'rate_limited') retryAfterMs = parseRetryAfter(retryAfter);
  if (code === errorCodes.ipBlocked) retryAfterMs = retryAfter ? parseRetryAfter(retryAfter) : IP_BLOCK_MS;
  const balance = kind === 'insufficient_balance' ? balanceDetails(providerError?.details) : undefined;

  let message = `${operation}: HTTP ${status}`;
  if (providerError) {
    message += ` ${providerError.code}: ${safeProviderMessage(providerError.message, secret)}`;
    const field = fieldOf(providerError.details);
    if (field) message += ` (field ${field})`;
  }
  if (balance) message += ` (required ${balance.required ?? '?'}, available ${balance.available ?? '?'})`;
  if (retryAfterMs !== undefined) message += ` (retry after ${retryAfterMs} ms)`;

  return new ProviderError(
    { kind, operation, status, code: providerError?.code, retryAfterMs, ...(balance && { balance }) },
    message,
  );
}

/** The documented codes that say more than their status (fact sheet, "Envelope and errors"). */
export function kindForCode(code: string): ProviderFailureKind | undefined {
  switch (code) {
    case errorCodes.duplicatedRef:
      return 'duplicate_ref';
    case errorCodes.insufficientBalance:
      return 'insufficient_balance';
    case errorCodes.missingKey:
    case errorCodes.invalidKey:
    case errorCodes.ipBlocked:
      return 'access_denied';
    case errorCodes.notFound:
      return 'not_found';
    case errorCodes.validation:
    case errorCodes.phone:
      return 'refused';
    default:
      return undefined;
  }
}

export function kindForStatus(status: number): ProviderFailureKind {
  if (status === 401) return 'access_denied';
  // Documented 403s are the whitelist (no code), a short balance and a reused ref (by code,
  // above). Any other 403 is a key that may not do this: not the order's fault either.
  if (status === 403) return 'access_denied';
  if (status === 404) return 'not_found';
  if (status === 429) return 'rate_limited';
  if (status >= 400 && status < 500) return 'refused';
  // 5xx, 2xx failure envelopes with codes nobody documented, and anything else undici hands back
  // unfollowed (3xx): the request arrived and we cannot tell what became of it.
  return 'outcome_unknown';
}

function balanceDetails(details: unknown): { required?: number; available?: number } {
  const { required, available } = (typeof details === 'object' && details !== null ? details : {}) as {
    required?: unknown;
    available?: unknown;
  };
  return {
    ...(typeof required === 'number' && { required }),
    ...(typeof available === 'number' && { available }),
  };
}

/** ERR_VALIDATION names its field (`body/MSSIDN`): safe to report; its `value` is not. */
function fieldOf(details: unknown): string | undefined {
  const field = (typeof details === 'object' && details !== null ? details : {}) as { field?: unknown };
  return typeof field.field === 'string' && /^[A-Za-z0-9_/.[\]-]{1,64}$/.test(field.field)
    ? field.field
    : undefined;
}

/**
 * Retry-After is either delay-seconds or an HTTP date (RFC 9110 10.2.3). Anything unusable
 * (absent, garbage) falls back to a default rather than retrying immediately.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!raw) return DEFAULT_RETRY_AFTER_MS;
  // Fractions are not in the RFC but some servers send them; accept rather than ignore.
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.round(Number(raw) * 1_000);
  // All three HTTP-date forms hold a month name and hh:mm:ss; Date.parse alone accepts "-5" as a year.
  const date = /[A-Za-z]{3}.*\d\d:\d\d:\d\d/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (!Number.isNaN(date)) return Math.max(0, date - now);
  return DEFAULT_RETRY_AFTER_MS;
}

/**
 * The provider's message goes into our error message, so it is bounded, flattened to one line,
 * and scrubbed of our own API key in case the provider echoes it back (e.g. "unknown key …").
 */
function safeProviderMessage(message: string, secret: string): string {
  let safe = secret ? message.split(secret).join('[redacted]') : message;
  // eslint-disable-next-line no-control-regex -- control characters are exactly what we strip
  safe = safe.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  // A provider that echoes the request would put a phone number or card code into our logs and
  // histories: runs of 6+ digits (with spaces or dashes) are masked.
  safe = safe.replace(/\d(?:[\s-]?\d){5,}/g, '[digits]');
  return safe.length > MAX_PROVIDER_MESSAGE_LENGTH ? `${safe.slice(0, MAX_PROVIDER_MESSAGE_LENGTH)}…` : safe;
}
