/**
 * Per-client API limits (docs/integrators.md "Limits"), so that one client cannot take the API's
 * start lanes, or Temporal's start capacity, from the others:
 *
 * - **orders**: every order submitted counts, alone or in a batch (a batch of 500 counts 500), at
 *   most `ordersPerMinute` a minute, plus a burst allowance of `ordersBurst` more in any ten
 *   minutes for the minute that needs it. A submission that does not fit is refused whole (nothing
 *   started) and costs nothing.
 * - **requests**: every other /v1 request (reads, reviews, webhooks) counts one, `requestsPerMinute`.
 * - **concurrent requests**: at most `concurrentRequests` of a client's requests in flight at once,
 *   each counted until its handler has ended, even when the caller hung up long before.
 *
 * Callers without a valid key share a budget per IP (`requestsPerMinute` of the defaults), so
 * guessing keys is throttled too. Counted in memory, per API instance, in fixed windows
 * (rate-limiter-flexible). Answers carry the IETF draft's `RateLimit-Policy` and `RateLimit`
 * headers (draft-ietf-httpapi-ratelimit-headers, the draft-8 form express-rate-limit also sent);
 * a refusal is 429 with `Retry-After`.
 */
import type { Request, RequestHandler, Response } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import { RateLimiterMemory, type RateLimiterRes } from 'rate-limiter-flexible';
import type { Caller } from '../clients';
import type { ClientLimits } from '../clients';
import { ApiError } from '../http';
import { afterRequestWork } from '../http';

export type Limits = Required<ClientLimits>;

const MINUTE_S = 60;
const BURST_WINDOW_S = 600;

interface ClientLimiters {
  /** The limits these were made for: a reload that changes them makes new ones. */
  limits: Limits;
  orders: RateLimiterMemory;
  ordersBurst: RateLimiterMemory;
  requests: RateLimiterMemory;
}

const remainingOf = (limiter: RateLimiterMemory, res: RateLimiterRes | null) =>
  Math.max(0, limiter.points - (res?.consumedPoints ?? 0));
const secondsUntil = (res: RateLimiterRes | null, windowS: number) =>
  Math.max(1, Math.ceil((res?.msBeforeNext ?? windowS * 1_000) / 1_000));

function setRateLimitHeaders(
  res: Response,
  policy: string,
  quota: number,
  remaining: number,
  resetS: number,
) {
  res.set('RateLimit-Policy', `"${policy}";q=${quota};w=${MINUTE_S}`);
  res.set('RateLimit', `"${policy}";r=${remaining};t=${resetS}`);
}

function refused(res: Response, retryAfterS: number, detail: string): ApiError {
  res.set('Retry-After', String(retryAfterS));
  return new ApiError('rate-limited', detail);
}

/** Whether the route submits orders (charged per order by `chargeOrders`, not per request). */
function submitsOrders(req: Request): boolean {
  return req.method === 'POST' && (req.path === '/orders' || req.path === '/orders/batch');
}

export class ApiLimits {
  readonly #defaults: Limits;
  readonly #clients = new Map<string, ClientLimiters>();
  readonly #inFlight = new Map<string, number>();
  readonly #anonymous: RateLimiterMemory;

  constructor(defaults: Limits) {
    this.#defaults = defaults;
    this.#anonymous = new RateLimiterMemory({
      keyPrefix: 'ip',
      points: defaults.requestsPerMinute,
      duration: MINUTE_S,
    });
  }

  /** The client's limits: its own from the clients file, the defaults for the rest. */
  limitsOf(caller: Pick<Caller, 'limits'>): Limits {
    return { ...this.#defaults, ...caller.limits };
  }

  #limiters(caller: Caller): ClientLimiters {
    const limits = this.limitsOf(caller);
    const known = this.#clients.get(caller.id);
    if (known && JSON.stringify(known.limits) === JSON.stringify(limits)) return known;
    const made: ClientLimiters = {
      limits,
      orders: new RateLimiterMemory({
        keyPrefix: 'orders',
        points: limits.ordersPerMinute,
        duration: MINUTE_S,
      }),
      ordersBurst: new RateLimiterMemory({
        keyPrefix: 'orders-burst',
        points: Math.max(1, limits.ordersBurst),
        duration: BURST_WINDOW_S,
      }),
      requests: new RateLimiterMemory({
        keyPrefix: 'requests',
        points: limits.requestsPerMinute,
        duration: MINUTE_S,
      }),
    };
    this.#clients.set(caller.id, made);
    return made;
  }

  /**
   * For /v1, after identifyCaller: the concurrency cap and the request budget of a known client,
   * the IP's budget for anyone else. Order submissions pass here uncharged: `chargeOrders` counts them.
   */
  requests(): RequestHandler {
    return (req, res, next) => {
      const caller = res.locals.caller;
      if (!caller) {
        const key = ipKeyGenerator(req.ip ?? 'unknown');
        this.#anonymous.consume(key).then(
          () => next(),
          (rejection: RateLimiterRes) =>
            next(
              refused(
                res,
                secondsUntil(rejection, MINUTE_S),
                'Too many requests without a valid key from this address; retry after the Retry-After delay.',
              ),
            ),
        );
        return;
      }
      const limits = this.limitsOf(caller);
      const inFlight = this.#inFlight.get(caller.id) ?? 0;
      if (inFlight >= limits.concurrentRequests) {
        next(
          refused(
            res,
            1,
            `At most ${limits.concurrentRequests} requests of your client at once; wait for one to finish.`,
          ),
        );
        return;
      }
      this.#inFlight.set(caller.id, inFlight + 1);
      // Given back when the handler has ended, not when the response closed: a caller that hangs
      // up (or is answered by the request deadline) leaves its handler running (request-work.ts).
      afterRequestWork(res, () => {
        const now = (this.#inFlight.get(caller.id) ?? 1) - 1;
        if (now > 0) this.#inFlight.set(caller.id, now);
        else this.#inFlight.delete(caller.id);
      });
      if (submitsOrders(req)) return next();
      const { requests } = this.#limiters(caller);
      requests.consume(caller.id).then(
        (done) => {
          setRateLimitHeaders(
            res,
            'requests',
            requests.points,
            done.remainingPoints,
            secondsUntil(done, MINUTE_S),
          );
          next();
        },
        (rejection: RateLimiterRes) => {
          const retry = secondsUntil(rejection, MINUTE_S);
          setRateLimitHeaders(res, 'requests', requests.points, 0, retry);
          next(
            refused(
              res,
              retry,
              `At most ${requests.points} requests a minute besides order submissions; retry after the Retry-After delay.`,
            ),
          );
        },
      );
    };
  }

  /**
   * Charges `count` orders to the caller: from the minute's budget, else from the burst allowance.
   * Throws a 429 (nothing charged) when neither has room for all of them.
   */
  async chargeOrders(caller: Caller, count: number, res: Response): Promise<void> {
    const { orders, ordersBurst, limits } = this.#limiters(caller);
    const minute = await orders.get(caller.id);
    const inMinute = remainingOf(orders, minute);
    const resetS = secondsUntil(minute, MINUTE_S);
    if (inMinute >= count) {
      const done = await orders.consume(caller.id, count);
      setRateLimitHeaders(res, 'orders', orders.points, done.remainingPoints, secondsUntil(done, MINUTE_S));
      return;
    }
    const burst = await ordersBurst.get(caller.id);
    if (limits.ordersBurst > 0 && remainingOf(ordersBurst, burst) >= count) {
      await ordersBurst.consume(caller.id, count);
      setRateLimitHeaders(res, 'orders', orders.points, inMinute, resetS);
      return;
    }
    setRateLimitHeaders(res, 'orders', orders.points, inMinute, resetS);
    const most = limits.ordersPerMinute + limits.ordersBurst;
    throw refused(
      res,
      resetS,
      count > most
        ? `${count} orders in one request is more than your client may submit at once (${most}); split it.`
        : `At most ${limits.ordersPerMinute} orders a minute (${limits.ordersBurst} more in any ten minutes); ` +
            `${inMinute} left this minute. Nothing was submitted; retry after the Retry-After delay.`,
    );
  }
}

/** The limits a client without its own gets (API_* variables, docs/deployers.md "Configuration"). */
export function defaultLimitsFromConfig(config: {
  API_ORDERS_PER_MINUTE: number;
  API_ORDERS_BURST: number;
  API_RATE_LIMIT_PER_MINUTE: number;
  API_CONCURRENT_REQUESTS: number;
}): Limits {
  return {
    ordersPerMinute: config.API_ORDERS_PER_MINUTE,
    ordersBurst: config.API_ORDERS_BURST,
    requestsPerMinute: config.API_RATE_LIMIT_PER_MINUTE,
    concurrentRequests: config.API_CONCURRENT_REQUESTS,
  };
}
