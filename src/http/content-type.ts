/**
 * JSON bodies only, in UTF-8 only. express.json() silently skips other content types, which would
 * turn a form post into "field X is required", and decodes any `utf-*` charset it is told (UTF-16
 * included); this answers 415 instead, before validation. RFC 8259 defines JSON exchanged between
 * systems as UTF-8 and gives application/json no charset parameter: an explicit `charset=utf-8` is
 * tolerated, any other charset is refused.
 */
import type { Request, RequestHandler } from 'express';
import { parse as parseContentType } from 'content-type';
import { ApiError } from './errors';

function hasBody(req: Request): boolean {
  return req.get('transfer-encoding') !== undefined || Number(req.get('content-length') ?? 0) > 0;
}

/** Why a Content-Type is not a UTF-8 JSON body, or undefined when it is one. */
function notUtf8Json(contentType: string): string | undefined {
  let parsed;
  try {
    parsed = parseContentType(contentType);
  } catch {
    return 'Send the body as application/json.';
  }
  if (parsed.type !== 'application/json') return 'Send the body as application/json.';
  const charset = parsed.parameters.charset;
  if (charset !== undefined && charset.toLowerCase() !== 'utf-8') {
    return 'The body must be UTF-8 JSON: send it without a charset, or with charset=utf-8.';
  }
  return undefined;
}

export const requireJsonBody: RequestHandler = (req, _res, next) => {
  const contentType = req.get('content-type');
  const refusal =
    contentType === undefined
      ? hasBody(req)
        ? 'Send the body as application/json.'
        : undefined
      : notUtf8Json(contentType);
  if (refusal) return next(new ApiError('unsupported-media-type', refusal));
  if (!hasBody(req)) {
    return next(
      new ApiError('validation-error', 'Invalid request: (body)', {
        errors: [{ field: '(body)', message: 'is required' }],
      }),
    );
  }
  next();
};
