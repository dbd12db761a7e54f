/**
 * The HTTP plumbing every sandbox route shares: the response envelope (spec 2.1), JSON body
 * reading, fault injection, the 404 fallback and the one error handler. Every answer, success or
 * failure, leaves through `deliver`, which is where an after-commit fault takes the answer over.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import express, { type ErrorRequestHandler, type RequestHandler, type Response } from 'express';
import { type Logger } from 'pino';
import { errorCodes } from '../provider';
import { type KeyRole } from './auth';
import { notFound, payloadTooLargeCode, SandboxError, validationError } from './errors';
import {
  actsAfterCommit,
  effectOf,
  type ActionRule,
  type FaultEffect,
  type FaultStore,
  type RouteName,
} from './faults';
import { type SandboxState } from './state';

/** Bodies are a handful of short fields: anything bigger is a client bug (or abuse). */
const BODY_LIMIT = '16kb';

interface SandboxLocals {
  requestId: string;
  /** Set once the request's API key has been checked. */
  role?: KeyRole;
  /** A fault rule chosen for this request that acts once the request has been processed. */
  afterCommit?: ActionRule;
  /** A send: commit this long after it was validated (a `late_commit` rule). */
  commitDelayMs?: number;
  /** A read: answer as of this long ago (a `lagging_reads` rule). */
  readLagMs?: number;
}

export function localsOf(res: Response): SandboxLocals {
  return res.locals as SandboxLocals;
}

/** First middleware: a fresh request id, also sent as a header so even a non-JSON client can quote it. */
export const requestContext: RequestHandler = (_req, res, next) => {
  const requestId = randomUUID();
  localsOf(res).requestId = requestId;
  res.set('X-Request-Id', requestId);
  next();
};

/**
 * Spec section 4: bodies are JSON and require Content-Type application/json. Checked on the
 * header itself, before reading, so an empty POST with the wrong type is refused too.
 */
const requireJsonContentType: RequestHandler = (req, _res, next) => {
  const mediaType = req.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  if (mediaType !== 'application/json') {
    throw new SandboxError(415, errorCodes.unsupportedMediaType, 'Content-Type must be application/json');
  }
  next();
};

export const jsonBody: RequestHandler[] = [requireJsonContentType, express.json({ limit: BODY_LIMIT })];

export function createResponder(now: () => number, logger: Logger) {
  const meta = () => ({ timestamp: new Date(now()).toISOString() });

  function write(
    res: Response,
    status: number,
    body: object,
    headers: Readonly<Record<string, string>> = {},
  ) {
    // The client may be gone (aborted upload, reset): nothing left to answer.
    if (res.headersSent || res.destroyed) return;
    res.status(status).set(headers).json(body);
  }

  function writeFailure(res: Response, error: SandboxError) {
    const { requestId } = localsOf(res);
    // Documented: no `data`, no `meta`; `details` where the code has them.
    const body = {
      success: false,
      error: { code: error.code, message: error.message, ...(error.details && { details: error.details }) },
      requestId,
    };
    write(res, error.status, body, error.headers);
  }

  function enact(res: Response, effect: FaultEffect) {
    switch (effect.kind) {
      case 'answer':
        return writeFailure(res, effect.error);
      case 'hang':
        // Never answer; the socket stays open until the client gives up or the server closes.
        return;
      case 'drop':
        res.socket?.destroy();
        return;
    }
  }

  /** Every answer goes through here, so an after-commit fault applies whatever the outcome was. */
  function deliver(res: Response, answer: () => void) {
    const locals = localsOf(res);
    const rule = locals.afterCommit;
    if (!rule) return answer();
    locals.afterCommit = undefined;
    enact(res, effectOf(rule));
  }

  /** `beside`: documented fields next to `data` (the catalog's totals). */
  const success = (res: Response, data: unknown, status = 200, beside: object = {}) =>
    deliver(res, () =>
      write(res, status, {
        success: true,
        data,
        ...beside,
        meta: meta(),
        requestId: localsOf(res).requestId,
      }),
    );

  const failure = (res: Response, error: SandboxError) => deliver(res, () => writeFailure(res, error));

  /** Route middleware: apply the fault rules chosen for this request (see faults.ts). */
  function injectFaults(faults: FaultStore, route: RouteName): RequestHandler {
    return async (_req, res, next) => {
      const { latencyMs, commitDelayMs, readLagMs, action } = faults.plan(route);
      const locals = localsOf(res);
      if (commitDelayMs > 0) locals.commitDelayMs = commitDelayMs;
      if (readLagMs > 0) locals.readLagMs = readLagMs;
      // Unref'd: a delayed request must not keep a closing test process alive.
      if (latencyMs > 0) await sleep(latencyMs, undefined, { ref: false });
      if (action && !actsAfterCommit(action)) return enact(res, effectOf(action));
      if (action) locals.afterCommit = action;
      next();
    };
  }

  /** Route middleware: log when the request came and when its connection let go (GET /admin/requests). */
  function trackRequest(state: SandboxState, route: RouteName): RequestHandler {
    return (req, res, next) => {
      const page = Number(req.query.page);
      const record = state.trackRequest(route, Number.isInteger(page) ? page : undefined);
      res.once('close', () => {
        record.endedAt = now();
        record.answered = res.writableFinished;
      });
      next();
    };
  }

  const unknownRoute: RequestHandler = (req) => {
    throw notFound(`no route ${req.method} ${req.path}`);
  };

  /** Malformed input of any kind is a 4xx; only a bug in the sandbox answers 500 (and is logged). */
  const errorHandler: ErrorRequestHandler = (err: unknown, req, res, _next) => {
    const known = asSandboxError(err);
    if (!known) logger.error({ err, method: req.method, path: req.path }, 'sandbox request failed');
    failure(res, known ?? new SandboxError(500, errorCodes.internal, 'internal sandbox error'));
  };

  return { success, failure, injectFaults, trackRequest, unknownRoute, errorHandler };
}

export type Responder = ReturnType<typeof createResponder>;

/** Map body-parser and router errors (http-errors with a 4xx `status`) onto the sandbox's codes. */
function asSandboxError(err: unknown): SandboxError | undefined {
  if (err instanceof SandboxError) return err;
  if (!(err instanceof Error)) return undefined;
  const { status, type } = err as Error & { status?: unknown; type?: unknown };
  if (typeof status !== 'number' || status < 400 || status > 499) return undefined;
  if (status === 413) return new SandboxError(413, payloadTooLargeCode, `body: larger than ${BODY_LIMIT}`);
  if (status === 415) return new SandboxError(415, errorCodes.unsupportedMediaType, `body: ${err.message}`);
  // JSON.parse messages quote the body; never echo it.
  if (type === 'entity.parse.failed') return validationError('body: malformed JSON');
  return new SandboxError(status, errorCodes.validation, `request: ${err.message}`);
}
