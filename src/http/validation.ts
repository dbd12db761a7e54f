/**
 * zod at the edge: parse a request part with its schema and hand on the *parsed* value, or throw
 * one validation ApiError that names every bad field.
 */
import { z } from 'zod';
import { ApiError, type FieldError } from './errors';

/** Where the value came from; named in the problem's detail. */
export type RequestPart = 'body' | 'path' | 'query';

/** Unknown keys are echoed back as field names; a hostile one is cut short, not reflected whole. */
const MAX_FIELD_NAME_LENGTH = 64;

/** A field's dotted path (`cards.0.code`), cut short past MAX_FIELD_NAME_LENGTH. */
export function fieldPath(path: readonly PropertyKey[]): string {
  const name = path.map(String).join('.');
  return name.length > MAX_FIELD_NAME_LENGTH ? `${name.slice(0, MAX_FIELD_NAME_LENGTH)}…` : name;
}

function fieldName(path: readonly PropertyKey[], part: RequestPart): string {
  return path.length === 0 ? `(${part})` : fieldPath(path);
}

/** zod's default messages say "received undefined" for a missing field; say what a client needs. */
const errorMap: z.core.$ZodErrorMap = (issue) =>
  issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : undefined;

/**
 * One entry per bad field: an `unrecognized_keys` issue becomes one entry per unknown key, and a
 * field that broke several rules gets one entry with every message.
 */
export function fieldErrors(error: z.ZodError, part: RequestPart): FieldError[] {
  const byField = new Map<string, string[]>();
  for (const issue of error.issues) {
    const entries =
      issue.code === 'unrecognized_keys'
        ? issue.keys.map((key) => [fieldName([...issue.path, key], part), 'unknown field'] as const)
        : [[fieldName(issue.path, part), issue.message] as const];
    for (const [field, message] of entries) {
      const messages = byField.get(field) ?? [];
      if (!messages.includes(message)) messages.push(message);
      byField.set(field, messages);
    }
  }
  return [...byField].map(([field, messages]) => ({ field, message: messages.join('; ') }));
}

type Schemas = Partial<Record<RequestPart, z.ZodType>>;

/**
 * The query of a route that takes no parameters. Every route refuses a parameter it does not know
 * (400 `unknown field`), as the routes with parameters do through their strict schemas: a caller
 * who adds `?client=…` where it means nothing is told, not silently answered for itself. (A
 * batch item has no query of its own: undefined.)
 */
const NoQuery = z.strictObject({}).optional();
type Parsed<S extends Schemas> = { [K in keyof S]: S[K] extends z.ZodType ? z.output<S[K]> : never };

/**
 * Validates each part of a request with its schema and returns the parsed values; otherwise throws
 * one 400 naming every bad field of every part (a bad ref and a bad body are reported together).
 * Without a query schema the query must be empty (NoQuery).
 */
export function validateRequest<S extends Schemas>(
  schemas: S,
  values: Record<RequestPart, unknown>,
): Parsed<S> {
  const parsed: Record<string, unknown> = {};
  const errors: FieldError[] = [];
  const withQuery: Schemas = { query: NoQuery, ...schemas };
  for (const [part, schema] of Object.entries(withQuery) as [RequestPart, z.ZodType][]) {
    const result = schema.safeParse(values[part], { error: errorMap });
    if (result.success) parsed[part] = result.data;
    else errors.push(...fieldErrors(result.error, part));
  }
  if (errors.length > 0) {
    const names = [...new Set(errors.map((e) => e.field))].join(', ');
    throw new ApiError('validation-error', `Invalid request: ${names}`, { errors });
  }
  return parsed as Parsed<S>;
}
