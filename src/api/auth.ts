/**
 * Bearer API keys and the per-caller rate limit.
 *
 * Keys come from configuration only. A presented key is compared with every configured key in
 * constant time: both sides are hashed to a fixed length first (timingSafeEqual needs equal
 * lengths, and hashing hides the configured keys' lengths), and the loop never stops early.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import { ConfigError } from '../config';
import { ApiError } from './errors';

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Who the caller is, for the rate limit and the log: a short, non-reversible key fingerprint. */
export interface Caller {
  keyId: string;
}

declare module 'express-serve-static-core' {
  interface Locals {
    caller?: Caller;
  }
}

export class ApiKeys {
  readonly #digests: Buffer[];

  constructor(keys: readonly string[] | undefined) {
    const usable = (keys ?? []).filter((k) => k.length > 0);
    if (usable.length === 0) {
      throw new ConfigError(
        'Invalid configuration:\n  API_KEYS: required (comma-separated bearer keys the intake API accepts)',
      );
    }
    this.#digests = usable.map(sha256);
  }

  /** The matching key's fingerprint, or undefined. Constant time in the presented key's content. */
  identify(presented: string): Caller | undefined {
    const digest = sha256(presented);
    let match: Buffer | undefined;
    for (const candidate of this.#digests) {
      if (timingSafeEqual(candidate, digest)) match = candidate;
    }
    return match ? { keyId: match.subarray(0, 6).toString('hex') } : undefined;
  }
}

/** RFC 9110: the scheme is case-insensitive; the token is printable ASCII (bounded, so hashing stays cheap). */
const BEARER = /^Bearer ([\x21-\x7e]{1,512})$/i;

/** Identifies the caller if a valid key is presented; refuses nobody (see `requireApiKey`). */
export function identifyCaller(keys: ApiKeys): RequestHandler {
  return (req, res, next) => {
    const match = BEARER.exec(req.get('authorization') ?? '');
    const caller = match?.[1] ? keys.identify(match[1]) : undefined;
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

/**
 * At most `perMinute` requests a minute per API key, or per client IP for callers without a valid
 * key (so guessing keys is throttled too). In memory: each API instance counts on its own, which
 * is enough to stop a runaway client; a shared store is the step after.
 */
export function rateLimitPerCaller(perMinute: number): RequestHandler {
  return rateLimit({
    windowMs: 60_000,
    limit: perMinute,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    keyGenerator: (req: Request, res) => {
      const caller = (res.locals as { caller?: Caller }).caller;
      return caller ? `key:${caller.keyId}` : `ip:${ipKeyGenerator(req.ip ?? 'unknown')}`;
    },
    handler: (_req, _res, next) => {
      // Retry-After is already set by the limiter (standardHeaders).
      next(
        new ApiError(
          'rate-limited',
          `At most ${perMinute} requests a minute; retry after the Retry-After delay.`,
        ),
      );
    },
  });
}
