/**
 * The sandbox's failure vocabulary: one error class carrying the HTTP status, the error code of
 * wire.ts (the documented ones wherever the docs show one), a message and the documented
 * `details`. Routes and state throw these; one handler turns them into the failure envelope, so
 * no route formats an error itself.
 */
import { type z } from 'zod';
import { errorCodes } from '../provider';

/** wire.ts names no code for an oversized body (the docs show none); this is the sandbox's choice. */
export const payloadTooLargeCode = 'PAYLOAD_TOO_LARGE';

export class SandboxError extends Error {
  override name = 'SandboxError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Extra response headers, e.g. Retry-After on a 429. */
    readonly headers: Readonly<Record<string, string>> = {},
    /** The documented `error.details`, e.g. `{field, value}` or `{required, available}`. */
    readonly details?: Readonly<Record<string, unknown>>,
  ) {
    super(message);
  }
}

/** ERR_VALIDATION names the field as the docs do (`body/MSSIDN`) and echoes its value. */
export const validationError = (message: string, field?: string, value?: unknown) =>
  new SandboxError(
    400,
    errorCodes.validation,
    message,
    {},
    field === undefined ? undefined : { field, value: value ?? null },
  );
export const missingKey = () =>
  new SandboxError(401, errorCodes.missingKey, 'X-Access-Token header is required');
export const invalidKey = (attemptsLeft: number) =>
  new SandboxError(401, errorCodes.invalidKey, 'invalid access token', {}, { attemptsLeft });
/** The docs give no status for IP_BLOCKED; 403 is the sandbox's choice. */
export const ipBlocked = (retryAfterSeconds: number) =>
  new SandboxError(403, errorCodes.ipBlocked, 'too many invalid keys: this IP is blocked for a while', {
    'Retry-After': String(retryAfterSeconds),
  });
export const forbidden = (code: string, message: string) => new SandboxError(403, code, message);
export const notFound = (message: string) => new SandboxError(404, errorCodes.notFound, message);
/** Documented: 403, and "check the status of the existing top-up". */
export const duplicatedRef = (ref: string) =>
  new SandboxError(
    403,
    errorCodes.duplicatedRef,
    `ref '${ref}' is already used; check the status of the existing top-up`,
  );
export const insufficientBalance = (required: number, available: number) =>
  new SandboxError(
    403,
    errorCodes.insufficientBalance,
    'insufficient balance; add funds before retrying',
    {},
    { required, available },
  );
export const phoneError = (number: string, type: string, reason: string) =>
  new SandboxError(400, errorCodes.phone, `invalid ${type} number`, {}, { number, type, reason });
/** The docs show out-of-stock exists but not its code: OUT_OF_STOCK, 400, is the sandbox's choice. */
export const outOfStock = (message: string) => new SandboxError(400, errorCodes.outOfStock, message);

/**
 * One line naming every bad field, e.g. `MSSIDN: expected a local number…; extra: unrecognized field`,
 * so a client (or a person reading a log) sees which field to fix without the request body.
 */
export function describeIssues(issues: readonly z.core.$ZodIssue[], subject = 'body'): string {
  return issues
    .flatMap((issue) => {
      // Unknown keys are reported against their parent object; name each key instead.
      if (issue.code === 'unrecognized_keys') {
        return issue.keys.map((key) => `${[...issue.path, key].join('.')}: unrecognized field`);
      }
      const path = issue.path.map(String).join('.');
      return [`${path || subject}: ${issue.message}`];
    })
    .join('; ');
}

/** Parse with a wire schema, or throw ERR_VALIDATION naming every bad field (`details` the first). */
export function parseOrThrow<T extends z.ZodType>(schema: T, input: unknown, subject = 'body'): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const first = result.error.issues[0];
  const path: PropertyKey[] = first ? [...first.path] : [];
  if (first?.code === 'unrecognized_keys' && first.keys[0] !== undefined) path.push(first.keys[0]);
  const field = [subject, ...path.map(String)].join('/');
  throw validationError(describeIssues(result.error.issues, subject), field, valueAt(input, path));
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}
