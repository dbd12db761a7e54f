/**
 * Who is calling: bearer keys identify a client (src/clients/registry.ts), each route requires one
 * scope; the limits per client are in limits.ts.
 *
 * Order of refusals: no or unknown key → 401, before anything else; then the route's scope → 403
 * naming it, before a body is parsed or an order is looked up (so a 403 says nothing about orders).
 */
import type { RequestHandler } from 'express';
import type { Caller, ClientRegistry } from '../clients';
import type { Scope } from '../clients';
import { ApiError } from './errors';

declare module 'express-serve-static-core' {
  interface Locals {
    caller?: Caller;
  }
}

/** RFC 9110: the scheme is case-insensitive; the token is printable ASCII (bounded, so hashing stays cheap). */
const BEARER = /^Bearer ([\x21-\x7e]{1,512})$/i;

/** Identifies the caller if a valid key is presented; refuses nobody (see `requireApiKey`). */
export function identifyCaller(clients: ClientRegistry): RequestHandler {
  return (req, res, next) => {
    const match = BEARER.exec(req.get('authorization') ?? '');
    const caller = match?.[1] ? clients.identify(match[1]) : undefined;
    if (caller) res.locals.caller = caller;
    next();
  };
}

export const WWW_AUTHENTICATE = 'Bearer realm="intake"';

export const requireApiKey: RequestHandler = (req, res, next) => {
  if (res.locals.caller) return next();
  const presented = req.get('authorization') !== undefined;
  next(
    new ApiError(
      'unauthorized',
      presented ? 'The API key is not valid.' : 'Send an API key: Authorization: Bearer <key>.',
      {
        headers: {
          'WWW-Authenticate': presented ? `${WWW_AUTHENTICATE}, error="invalid_token"` : WWW_AUTHENTICATE,
        },
      },
    ),
  );
};

/** The authenticated caller; only behind requireApiKey. */
export function callerOf(res: { locals: { caller?: Caller } }): Caller {
  const caller = res.locals.caller;
  if (!caller) throw new Error('callerOf: no authenticated caller (is requireApiKey in front?)');
  return caller;
}

/** 403 naming the scope the route needs when the caller's client lacks it. */
export function requireScope(scope: Scope): RequestHandler {
  return (_req, res, next) => {
    if (callerOf(res).scopes.has(scope)) return next();
    next(insufficientScope(scope, 'This route needs'));
  };
}

/** For a parameter that needs a scope beyond the route's (`what`: e.g. `reveal=true`): 403 otherwise. */
export function assertScope(caller: Caller, scope: Scope, what: string): void {
  if (!caller.scopes.has(scope)) throw insufficientScope(scope, `${what} needs`);
}

function insufficientScope(scope: Scope, needs: string): ApiError {
  return new ApiError('forbidden', `${needs} the scope ${scope}, which your client does not have.`, {
    headers: { 'WWW-Authenticate': `${WWW_AUTHENTICATE}, error="insufficient_scope", scope="${scope}"` },
  });
}
