/**
 * The API's errors, typed: every non-2xx answer is `application/problem+json` (RFC 9457), thrown
 * as a ProblemError carrying the problem as the API sent it.
 */
import type { components } from './schema';

export type Problem = components['schemas']['Problem'];

/** The problem types the API documents (its `type` is `/problems/<one of these>`). */
export type ProblemType =
  | 'validation-error'
  | 'malformed-request'
  | 'unauthorized'
  | 'forbidden'
  | 'not-found'
  | 'method-not-allowed'
  | 'not-acceptable'
  | 'order-not-found'
  | 'client-not-found'
  | 'reconciliation-not-found'
  | 'webhook-event-not-found'
  | 'ref-conflict'
  | 'bulk-conflict'
  | 'order-not-in-review'
  | 'decision-refused'
  | 'decision-invalid'
  | 'order-unacceptable'
  | 'payload-too-large'
  | 'unsupported-media-type'
  | 'rate-limited'
  | 'internal-error'
  | 'provider-unavailable'
  | 'temporarily-unavailable';

export class ProblemError extends Error {
  override readonly name = 'ProblemError';
  /** The HTTP status. */
  readonly status: number;
  /** The problem's type without its `/problems/` prefix, e.g. `ref-conflict`. */
  readonly problemType: ProblemType | (string & {});
  /** The request's X-Request-Id: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** Seconds the API asked to wait (Retry-After), on a 429 or 503 still refused at the deadline. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly problem: Problem,
    response: Pick<Response, 'status' | 'headers'>,
  ) {
    super(`${problem.status} ${problem.title}: ${problem.detail}`);
    this.status = response.status;
    this.problemType = problem.type.replace(/^\/problems\//, '');
    this.requestId = problem.requestId ?? response.headers.get('x-request-id') ?? undefined;
    const retryAfter = response.headers.get('retry-after');
    this.retryAfterSeconds = retryAfter && /^\d+$/.test(retryAfter) ? Number(retryAfter) : undefined;
  }

  /** Validation problems: one per bad field (a 400). */
  get fieldErrors(): NonNullable<Problem['errors']> {
    return this.problem.errors ?? [];
  }
}

/** Whether `err` is the API's problem, of `type` when given: `if (isProblem(err, 'ref-conflict'))`. */
export function isProblem(err: unknown, type?: ProblemType): err is ProblemError {
  return err instanceof ProblemError && (type === undefined || err.problemType === type);
}

/** A problem from an answer whose body is not problem+json (a proxy's page, an empty body). */
export function problemOf(
  body: unknown,
  response: Pick<Response, 'status' | 'statusText' | 'headers'>,
): ProblemError {
  const looksLikeProblem =
    typeof body === 'object' && body !== null && 'type' in body && 'status' in body && 'title' in body;
  const problem: Problem = looksLikeProblem
    ? (body as Problem)
    : {
        type: 'about:blank',
        title: response.statusText || `HTTP ${response.status}`,
        status: response.status,
        detail:
          typeof body === 'string' && body.length > 0
            ? body.slice(0, 500)
            : 'no problem document in the answer',
      };
  return new ProblemError(problem, response);
}
