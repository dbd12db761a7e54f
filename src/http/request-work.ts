/**
 * A request's work beyond its response. A caller that hangs up, or the request deadline's 503,
 * closes the response while the route's handler goes on (a Temporal call, a bulk decision waiting
 * for its results). Two things follow from that here:
 *
 * - `afterRequestWork`: what must wait for the handler, not for the response — the client's
 *   in-flight slot (limits.ts). Freed on the response's close, a slot let a client run any number
 *   of handlers at once by hanging up after 50 ms: 30 bulk reviews started 30 bulks past a limit
 *   of 16.
 * - `signalOf(res)`: aborted once the response has closed, so a handler does not start what no one
 *   waits for any more (a bulk decision, the rest of a batch). What was started runs to its end.
 *
 * Handlers are counted by the routers made with `trackedRouter()` (every /v1 router): a handler
 * runs from its call until it returns or, when it returns a promise, until that settles.
 */
import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { ApiError } from './errors';

interface RequestWork {
  controller: AbortController;
  /** Handlers of the request that have not ended yet. */
  running: number;
  closed: boolean;
  /** Run once the response has closed and no handler runs. */
  whenDone: (() => void)[];
}

declare module 'express-serve-static-core' {
  interface Locals {
    work?: RequestWork;
  }
}

/** The reason a request's signal carries: a 4xx, so a handler that stops for it logs no error. */
function closedBeforeAnswered(): ApiError {
  return new ApiError('malformed-request', 'The request was closed before it was answered.');
}

function settle(work: RequestWork): void {
  if (!work.closed || work.running > 0) return;
  for (const done of work.whenDone.splice(0)) done();
}

/** First in the chain: every request gets its work record, its signal aborted when the response closes. */
export const trackRequestWork: RequestHandler = (_req, res, next) => {
  const work: RequestWork = { controller: new AbortController(), running: 0, closed: false, whenDone: [] };
  res.locals.work = work;
  res.once('close', () => {
    work.closed = true;
    work.controller.abort(closedBeforeAnswered());
    settle(work);
  });
  next();
};

/** Runs `done` once the response has closed and every tracked handler of the request has ended. */
export function afterRequestWork(res: Response, done: () => void): void {
  const work = res.locals.work;
  if (!work) {
    res.once('close', done);
    return;
  }
  work.whenDone.push(done);
  settle(work);
}

/** Aborted once the request's response has closed: the caller is gone or was answered. */
export function signalOf(res: Response): AbortSignal {
  return res.locals.work?.controller.signal ?? new AbortController().signal;
}

type Handler = (req: Request, res: Response, next: NextFunction) => unknown;

/** `handler`, counted as running from its call until it returns or its promise settles. */
function tracked(handler: Handler): Handler {
  // Express tells error handlers (four parameters) by their arity: those are left as they are.
  if (handler.length > 3) return handler;
  return (req, res, next) => {
    const work = res.locals.work;
    if (!work) return handler(req, res, next);
    work.running++;
    const ended = () => {
      work.running--;
      settle(work);
    };
    let result: unknown;
    try {
      result = handler(req, res, next);
    } catch (err) {
      ended();
      throw err;
    }
    if (result instanceof Promise) result.then(ended, ended);
    else ended();
    return result;
  };
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/**
 * An Express Router whose route handlers are tracked (above): a route added to it holds its
 * client's slot until its handler has ended, whatever happened to the response — by construction,
 * so that no route can be added that frees its slot when the caller hangs up.
 */
export function trackedRouter(): Router {
  const router = Router();
  for (const method of METHODS) {
    const add = router[method].bind(router) as (path: string, ...handlers: Handler[]) => Router;
    Object.assign(router, {
      [method]: (path: string, ...handlers: (Handler | Handler[])[]) =>
        add(path, ...handlers.flat().map(tracked)),
    });
  }
  return router;
}
