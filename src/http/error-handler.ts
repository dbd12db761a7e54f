/**
 * The one place where errors become HTTP answers.
 *
 * Whatever was thrown — an ApiError from a route, a body-parser error, a Temporal or provider
 * failure, a bug — the client gets `application/problem+json` with a fixed title and a detail
 * written here, never an error message, stack trace or internal name. Unexpected errors are logged
 * (with the request ID, through the request's logger) and answered 500 / 502 / 503.
 */
import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import { NamespaceNotFoundError } from '@temporalio/common';
import { grpcCode } from '../temporal';
import { isProviderError } from '../provider';
import { ApiError } from './errors';

export { grpcCode };

/** gRPC status codes that mean "Temporal is unreachable or slow right now", not "the request is wrong". */
const GRPC_UNAVAILABLE_CODES: ReadonlySet<number> = new Set([
  1, // CANCELLED (a deadline we set, or a connection going away)
  4, // DEADLINE_EXCEEDED
  8, // RESOURCE_EXHAUSTED (server-side rate limits)
  14, // UNAVAILABLE
]);

/** Whether `err` is Temporal unreachable or slow right now (answered 503), not a refusal of the request. */
export function isTemporalUnavailable(err: unknown): boolean {
  const code = grpcCode(err);
  return code !== undefined && GRPC_UNAVAILABLE_CODES.has(code);
}

/** How long a client should wait before retrying after a 503: long enough for a reconnect. */
export const RETRY_AFTER_UNAVAILABLE_SECONDS = 5;

export function temporarilyUnavailable(detail: string, cause?: unknown): ApiError {
  return new ApiError('temporarily-unavailable', detail, {
    headers: { 'Retry-After': String(RETRY_AFTER_UNAVAILABLE_SECONDS) },
    cause,
  });
}

/** Errors from body-parser and the router (http-errors), keyed by their `type`. */
const bodyParserErrors: Record<string, () => ApiError> = {
  'entity.parse.failed': () => new ApiError('malformed-request', 'The body is not valid JSON.'),
  'entity.too.large': () => new ApiError('payload-too-large', 'The body exceeds the size limit.'),
  'encoding.unsupported': () => new ApiError('unsupported-media-type', 'Unsupported content encoding.'),
  'charset.unsupported': () => new ApiError('unsupported-media-type', 'The body must be UTF-8 JSON.'),
  'request.aborted': () => new ApiError('malformed-request', 'The request was aborted.'),
  'request.size.invalid': () => new ApiError('malformed-request', 'The body does not match Content-Length.'),
};

function httpErrorStatus(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { status, statusCode } = err as { status?: unknown; statusCode?: unknown };
  const value = typeof status === 'number' ? status : statusCode;
  return typeof value === 'number' ? value : undefined;
}

const INTERNAL_ERROR_DETAIL = 'An unexpected error occurred; quote the request ID when reporting it.';

/** Map anything thrown to an ApiError; the original stays as `cause` for the log. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;

  const bodyType = (err as { type?: unknown } | null)?.type;
  if (typeof bodyType === 'string' && bodyType in bodyParserErrors) {
    const mapped = bodyParserErrors[bodyType]!();
    return new ApiError(mapped.key, mapped.message, { cause: err });
  }
  // Other client errors from Express itself, e.g. a path with broken %-encoding (URIError, 400).
  const status = httpErrorStatus(err);
  if (status === 400)
    return new ApiError('malformed-request', 'The request could not be read.', { cause: err });
  if (status === 404) return new ApiError('not-found', 'No such resource.', { cause: err });
  if (status === 413)
    return new ApiError('payload-too-large', 'The body exceeds the size limit.', { cause: err });
  if (status === 415)
    return new ApiError('unsupported-media-type', 'The body must be application/json.', { cause: err });

  if (isTemporalUnavailable(err)) {
    return temporarilyUnavailable('The order store (Temporal) is unreachable; retry later.', err);
  }
  // Checked at start, so a namespace missing now is a Temporal that is (re)starting and has not
  // loaded its namespaces yet: the submission is worth retrying.
  if (err instanceof NamespaceNotFoundError) {
    return temporarilyUnavailable(
      `The order store (Temporal) does not know namespace ${err.namespace} right now; retry later.`,
      err,
    );
  }
  if (isProviderError(err)) {
    return new ApiError('provider-unavailable', 'The provider could not be reached or answered badly.', {
      cause: err,
    });
  }
  return new ApiError('internal-error', INTERNAL_ERROR_DETAIL, { cause: err });
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Answers with the problem document of `apiError`; logs the cause of a 5xx through the request's logger. */
export function sendProblem(req: Request, res: Response, apiError: ApiError): void {
  if (apiError.status >= 500) {
    // pino-http logs the request line with this error attached; causes are logged, never sent.
    res.err = apiError.cause instanceof Error ? apiError.cause : apiError;
  } else {
    req.log?.debug({ problem: apiError.key }, apiError.message);
  }
  const requestId = typeof req.id === 'string' ? req.id : undefined;
  res
    .status(apiError.status)
    .set({ 'Cache-Control': 'no-store', ...apiError.headers })
    .type(PROBLEM_CONTENT_TYPE)
    .send(JSON.stringify(apiError.toProblem({ requestId })));
}

/** Express calls this with every error passed to next() or thrown from an async route. */
export const errorHandler: ErrorRequestHandler = (err, req, res, next) => {
  if (res.headersSent) {
    // The request deadline already answered; the route finished late. Nothing more to send.
    if (res.writableEnded) return req.log?.warn({ err }, 'error after the response was sent');
    // Too late for a problem document mid-body: let Express close the connection.
    return next(err);
  }
  sendProblem(req, res, toApiError(err));
};

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * A documented path asked with a method it does not have: 405 with `Allow` (RFC 9110), not 404.
 * The methods come from the generated OpenAPI document, the same source clients integrate from.
 */
export function methodNotAllowedHandler(document: { paths?: Record<string, object> }): RequestHandler {
  const routes = Object.entries(document.paths ?? {}).map(([path, item]) => {
    const methods = Object.keys(item)
      .filter((m) => HTTP_METHODS.includes(m))
      .map((m) => m.toUpperCase());
    const pattern = path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^/}]+\}/g, '[^/]+');
    return {
      pattern: new RegExp(`^${pattern}/?$`),
      allow: methods.includes('GET') ? [...methods, 'HEAD'] : methods,
    };
  });
  return (req, _res, next) => {
    const route = routes.find((r) => r.pattern.test(req.path));
    if (!route) return next();
    const allow = route.allow.join(', ');
    next(
      new ApiError('method-not-allowed', `${req.method} is not allowed here; use ${allow}.`, {
        headers: { Allow: allow },
      }),
    );
  };
}

/** The last route: anything unmatched is a 404 problem, never Express's HTML page. */
export const notFoundHandler: RequestHandler = (_req, _res, next) => {
  next(new ApiError('not-found', 'No such resource.'));
};
