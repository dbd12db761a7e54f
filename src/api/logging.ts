/**
 * Request IDs and the one structured log line per request.
 *
 * The log line carries the request ID, method, path, matched route, status, duration and the
 * authenticated client with its key's id. It never carries headers (Authorization), bodies (phone
 * numbers, card codes) or query values beyond the URL: the serializers below pick fields
 * explicitly instead of redacting a full dump, and the redaction list in `createLogger`
 * (src/logging.ts) is the second line of defence for anything logged by hand.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import { errorSerializer } from '../logging';
import { matchedRoute } from '../observability';

export const REQUEST_ID_HEADER = 'X-Request-Id';

/** A caller's request ID is kept only if it cannot inject anything into a header or a log line. */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdFor(header: string | string[] | undefined): string {
  return typeof header === 'string' && SAFE_REQUEST_ID.test(header) ? header : randomUUID();
}

export function requestLogger(logger: Logger) {
  return pinoHttp({
    logger,
    genReqId(req: IncomingMessage, res: ServerResponse) {
      const id = requestIdFor(req.headers['x-request-id']);
      res.setHeader(REQUEST_ID_HEADER, id);
      return id;
    },
    // req.log carries only the request ID; the request itself is described once, on the final line.
    quietReqLogger: true,
    customAttributeKeys: { reqId: 'requestId', responseTime: 'durationMs' },
    serializers: {
      req: (req: { method?: string; url?: string; raw?: IncomingMessage }) => ({
        method: req.method,
        // The path only: a query string is short and harmless here, but nothing is logged by default.
        path: (req.raw as Request | undefined)?.path ?? req.url?.split('?')[0],
      }),
      res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
      // pino-http has its own error serializer unless given one: the service's keeps request bodies out.
      err: errorSerializer,
    },
    // The client and the id of the key it used (never the key or its hash): who did what, and
    // whether an old key is still in use before it is revoked.
    customProps: (req, res) => {
      const route = matchedRoute(req);
      const caller = (res as Partial<Response>).locals?.caller;
      return {
        ...(route ? { route } : {}),
        ...(caller ? { client: caller.id, keyId: caller.keyId } : {}),
      };
    },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : 'info'),
    customSuccessMessage: (req, res) =>
      `${req.method} ${matchedRoute(req) ?? '(no route)'} ${res.statusCode}`,
    customErrorMessage: (req, res) => `${req.method} ${matchedRoute(req) ?? '(no route)'} ${res.statusCode}`,
  });
}
