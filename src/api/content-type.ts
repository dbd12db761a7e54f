/**
 * JSON bodies only. express.json() silently skips other content types, which would turn a form
 * post into "field X is required"; this answers 415 instead, before validation.
 */
import type { Request, RequestHandler } from 'express';
import { ApiError } from './errors';

function hasBody(req: Request): boolean {
  return req.get('transfer-encoding') !== undefined || Number(req.get('content-length') ?? 0) > 0;
}

function isJson(contentType: string): boolean {
  return contentType.split(';')[0]!.trim().toLowerCase() === 'application/json';
}

export const requireJsonBody: RequestHandler = (req, _res, next) => {
  const contentType = req.get('content-type');
  if (contentType === undefined ? hasBody(req) : !isJson(contentType)) {
    return next(new ApiError('unsupported-media-type', 'Send the body as application/json.'));
  }
  if (!hasBody(req)) {
    return next(
      new ApiError('validation-error', 'Invalid request: (body)', {
        errors: [{ field: '(body)', message: 'is required' }],
      }),
    );
  }
  next();
};
