/**
 * The sandbox's failure vocabulary: one error class carrying the HTTP status, the stable error
 * code of wire.ts and a message. Routes and state throw these; one handler turns them into the
 * failure envelope, so no route formats an error itself.
 */
import { type z } from 'zod';
import { errorCodes } from '../provider/wire';

/** wire.ts names no code for an oversized body (the spec shows none); this is the sandbox's choice. */
export const payloadTooLargeCode = 'PAYLOAD_TOO_LARGE';

export class SandboxError extends Error {
  override name = 'SandboxError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Extra response headers, e.g. Retry-After on a 429. */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

export const validationError = (message: string) => new SandboxError(400, errorCodes.badRequest, message);
export const unauthorized = (message: string) => new SandboxError(401, errorCodes.unauthorized, message);
export const forbidden = (message: string) => new SandboxError(403, errorCodes.forbidden, message);
export const notFound = (message: string) => new SandboxError(404, errorCodes.notFound, message);
export const duplicateRef = (ref: string) =>
  new SandboxError(409, errorCodes.duplicateRef, `ref: "${ref}" was already used by this key`);

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

/** Parse with a wire schema, or throw a 400 naming every bad field. */
export function parseOrThrow<T extends z.ZodType>(schema: T, input: unknown, subject?: string): z.output<T> {
  const result = schema.safeParse(input);
  if (!result.success) throw validationError(describeIssues(result.error.issues, subject));
  return result.data;
}
