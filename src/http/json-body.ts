/**
 * The JSON body parser of every route that takes a body: UTF-8 JSON only (content-type.ts), within
 * a size limit, objects and arrays at the top level, and I-JSON's rule (RFC 7493 section 2.3): no
 * object may name a member twice. JSON.parse keeps the last of two equal names while a proxy,
 * signer or log in front of us may keep the first, so `{"amount":5,"amount":7}` would be one order
 * to them and another to us; such a body is refused with a 400 naming the member.
 *
 * The names are compared as decoded (`"a"` and `"\u0061"` are the same member). The check walks
 * the text once with jsonc-parser's visitor, before JSON.parse: a body the visitor cannot read as
 * strict JSON is refused as malformed, so nothing it did not check is ever parsed.
 *
 * Before that, a body nesting arrays and objects deeper than MAX_BODY_DEPTH is refused with a 400
 * naming the limit: the visitor descends recursively and runs out of stack a few thousand levels
 * down (a 10 kB body of `[`), which answered 500 instead of refusing the body.
 */
import express, { type RequestHandler } from 'express';
import { visit, type JSONPath } from 'jsonc-parser';
import { requireJsonBody } from './content-type';
import { ApiError } from './errors';
import { fieldPath } from './validation';

/**
 * How deep a body may nest arrays and objects. The deepest body a route takes is a batch (the
 * envelope, its `orders` array, an order: 3 levels); 32 leaves room for any future body and
 * stays far below the depth at which the duplicate-member visitor runs out of stack.
 */
export const MAX_BODY_DEPTH = 32;

/**
 * Whether `text` opens more than `max` arrays or objects inside one another. One pass, no
 * recursion, brackets inside strings skipped: it runs before anything that descends recursively.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return false;
}

/** The first member named twice in one object, as its dotted path (`orders.3.amount`), if any. */
export function firstDuplicateMember(text: string): { path?: string; malformed: boolean } {
  const open: Set<string>[] = [];
  let duplicate: string | undefined;
  let malformed = false;
  visit(
    text,
    {
      onObjectBegin: () => {
        open.push(new Set());
      },
      onObjectEnd: () => {
        open.pop();
      },
      onObjectProperty: (name: string, _offset, _length, _line, _column, pathSupplier: () => JSONPath) => {
        const names = open.at(-1);
        if (!names || duplicate !== undefined) return;
        if (names.has(name)) duplicate = fieldPath([...pathSupplier(), name]);
        names.add(name);
      },
      onError: () => {
        malformed = true;
      },
    },
    { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false },
  );
  return { ...(duplicate !== undefined ? { path: duplicate } : {}), malformed };
}

/** express.json's `verify` hook: runs on the raw body before it is parsed; a throw refuses the body. */
function checkBody(_req: unknown, _res: unknown, raw: Buffer): void {
  const text = raw.toString('utf8');
  if (nestsDeeperThan(text, MAX_BODY_DEPTH)) {
    throw new ApiError(
      'validation-error',
      `Invalid request: (body) nests deeper than ${MAX_BODY_DEPTH} levels`,
      {
        errors: [
          {
            field: '(body)',
            message: `arrays and objects nested deeper than ${MAX_BODY_DEPTH} levels (the limit)`,
          },
        ],
      },
    );
  }
  const { path, malformed } = firstDuplicateMember(text);
  if (malformed) throw new ApiError('malformed-request', 'The body is not valid JSON.');
  if (path !== undefined) {
    throw new ApiError('validation-error', `Invalid request: ${path}`, {
      errors: [{ field: path, message: 'duplicate member name (each name once per object, RFC 7493)' }],
    });
  }
}

/** Content-type check, then the parser: past `limit` the body is refused (413), not buffered. */
export function jsonBody(limit: string): RequestHandler[] {
  return [
    requireJsonBody,
    // strict: only objects and arrays at the top level.
    express.json({ limit, strict: true, type: 'application/json', verify: checkBody }),
  ];
}
