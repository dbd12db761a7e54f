/**
 * The intake API's one error class and its catalogue of problem types (RFC 9457).
 *
 * Routes throw `ApiError`s (or let library errors through); the central handler in
 * error-handler.ts turns every error into an `application/problem+json` answer. Each problem
 * type has a stable `type` URI, a fixed title and status, so clients branch on `type`, never on
 * `detail` (which is for humans and may change).
 */

/** A field that failed validation: `field` is the dotted path (`ref`, `cards.0.code`), or a parameter name. */
export interface FieldError {
  field: string;
  message: string;
}

interface ProblemKind {
  status: number;
  title: string;
}

/** Every problem the API answers with. The key is the last segment of the `type` URI. */
export const problemKinds = {
  'validation-error': { status: 400, title: 'The request is invalid' },
  'malformed-request': { status: 400, title: 'The request could not be read' },
  unauthorized: { status: 401, title: 'A valid API key is required' },
  forbidden: { status: 403, title: 'The client lacks the scope this route needs' },
  'not-found': { status: 404, title: 'No such resource' },
  'method-not-allowed': { status: 405, title: 'The method is not allowed on this resource' },
  'not-acceptable': { status: 406, title: 'None of the formats in Accept can be served' },
  'order-not-found': { status: 404, title: 'No order with this ref' },
  'client-not-found': { status: 404, title: 'No client whose orders you can list' },
  'reconciliation-not-found': { status: 404, title: 'No reconciliation of this day has run' },
  'webhook-event-not-found': { status: 404, title: 'No such webhook event for this order' },
  'ref-conflict': { status: 409, title: 'This ref was already used for a different order' },
  'bulk-conflict': { status: 409, title: 'This bulk ID was already used for a different bulk decision' },
  'order-not-in-review': { status: 409, title: 'The order is not waiting for a review' },
  'decision-refused': { status: 409, title: 'The provider contradicts the decision or cannot confirm it' },
  'decision-invalid': { status: 422, title: 'The decision cannot apply to this order' },
  'order-unacceptable': { status: 422, title: 'The provider would refuse this order' },
  'payload-too-large': { status: 413, title: 'The request body is too large' },
  'unsupported-media-type': { status: 415, title: 'The request body must be application/json' },
  'rate-limited': { status: 429, title: 'Too many requests' },
  'internal-error': { status: 500, title: 'Internal error' },
  'provider-unavailable': { status: 502, title: 'The provider did not answer as expected' },
  'temporarily-unavailable': { status: 503, title: 'The service is temporarily unavailable' },
} as const satisfies Record<string, ProblemKind>;

export type ProblemKey = keyof typeof problemKinds;

/**
 * Problem type identifiers. Relative URI references (RFC 9457 section 3.1.1 allows them): stable
 * identifiers for clients to branch on, resolved against the API's own origin.
 */
export function problemType(key: ProblemKey): string {
  return `/problems/${key}`;
}

/** The problem+json body (RFC 9457) plus our `errors[]` extension for validation. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  requestId?: string;
  errors?: FieldError[];
  /** decision-refused / decision-invalid: why, and what the provider said. */
  refusal?: string;
  provider?: { status?: string; answer: string };
  forceable?: boolean;
}

/** Extension members (RFC 9457 section 3.2) a problem may carry besides `errors`. */
export type ProblemExtensions = Pick<Problem, 'refusal' | 'provider' | 'forceable'>;

export class ApiError extends Error {
  override name = 'ApiError';
  readonly key: ProblemKey;
  readonly status: number;
  readonly errors?: FieldError[];
  readonly extensions: ProblemExtensions;
  /** Extra response headers, e.g. Retry-After or WWW-Authenticate. */
  readonly headers: Record<string, string>;

  constructor(
    key: ProblemKey,
    detail: string,
    options: {
      errors?: FieldError[];
      extensions?: ProblemExtensions;
      headers?: Record<string, string>;
      cause?: unknown;
    } = {},
  ) {
    // `detail` is the message: it reaches the client, so it never holds a secret or internal detail.
    super(detail, { cause: options.cause });
    this.key = key;
    this.status = problemKinds[key].status;
    this.errors = options.errors;
    this.extensions = options.extensions ?? {};
    this.headers = options.headers ?? {};
  }

  toProblem(extra: { instance?: string; requestId?: string } = {}): Problem {
    return {
      type: problemType(this.key),
      title: problemKinds[this.key].title,
      status: this.status,
      detail: this.message,
      ...extra,
      ...this.extensions,
      ...(this.errors ? { errors: this.errors } : {}),
    };
  }
}
