/**
 * The polling and deadline timings an order starts with, from configuration. The starter (API,
 * tests) puts them in the workflow input, so a running order keeps the timings it started with
 * and replays deterministically after a configuration change.
 */
import type { Config } from '../config';
import type { OrderTimings, OrderType } from '../../workflows/contract';

type TimingConfig = Pick<
  Config,
  | 'POLL_FIRST_CHECK_MS'
  | 'POLL_HANDLING_CHECK_MS'
  | 'POLL_MAX_INTERVAL_MS'
  | 'ORDER_DEADLINE_MOBILE_MS'
  | 'ORDER_DEADLINE_INTERNET_MS'
  | 'ORDER_DEADLINE_GIFT_CARD_MS'
  | 'REVIEW_RECHECK_INTERVAL_MS'
  | 'REVIEW_WATCH_MS'
  | 'REVIEW_WATCH_FIRST_CHECK_MS'
  | 'PROVIDER_CONNECT_TIMEOUT_MS'
  | 'PROVIDER_HEADERS_TIMEOUT_MS'
  | 'PROVIDER_BODY_TIMEOUT_MS'
>;

/** Head room for the activity's own work and the worker's scheduling, on top of the HTTP timeouts. */
const ACTIVITY_MARGIN_MS = 5_000;

export function timingsFromConfig(config: TimingConfig, orderType: OrderType): OrderTimings {
  const deadlines: Record<OrderType, number> = {
    mobile_topup: config.ORDER_DEADLINE_MOBILE_MS,
    internet_topup: config.ORDER_DEADLINE_INTERNET_MS,
    gift_card: config.ORDER_DEADLINE_GIFT_CARD_MS,
  };
  const oneCallMs =
    config.PROVIDER_CONNECT_TIMEOUT_MS + config.PROVIDER_HEADERS_TIMEOUT_MS + config.PROVIDER_BODY_TIMEOUT_MS;
  return {
    firstCheckMs: config.POLL_FIRST_CHECK_MS,
    handlingCheckMs: config.POLL_HANDLING_CHECK_MS,
    maxIntervalMs: config.POLL_MAX_INTERVAL_MS,
    deadlineMs: deadlines[orderType],
    reviewRecheckMs: config.REVIEW_RECHECK_INTERVAL_MS,
    reviewWatchMs: config.REVIEW_WATCH_MS,
    reviewWatchFirstCheckMs: config.REVIEW_WATCH_FIRST_CHECK_MS,
    // A retried send makes two calls (check-ref, then send); the attempt must outlast both, so an
    // attempt Temporal has given up on cannot still be sending when the next one looks the ref up.
    activityTimeoutMs: 2 * oneCallMs + ACTIVITY_MARGIN_MS,
  };
}
