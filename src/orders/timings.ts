/**
 * The polling and deadline timings an order starts with, from configuration. The starter (API,
 * tests) puts them in the workflow input, so a running order keeps the timings it started with
 * and replays deterministically after a configuration change.
 *
 * Nothing here derives from the provider client's HTTP timeouts: those are the worker's, and each
 * provider call ends within its activity attempt whatever they say (src/provider/attempt-deadline.ts).
 */
import type { Config } from '../config';
import type { OrderTimings, OrderType } from '../../contract/order';

type TimingConfig = Pick<
  Config,
  | 'POLL_FIRST_CHECK_MS'
  | 'POLL_HANDLING_CHECK_MS'
  | 'POLL_MAX_INTERVAL_MS'
  | 'POLL_INTERVAL_MS'
  | 'POLL_PACE_MOBILE_MS'
  | 'POLL_PACE_INTERNET_MS'
  | 'POLL_PACE_GIFT_CARD_MS'
  | 'POLL_HEARTBEAT_TIMEOUT_MS'
  | 'ORDER_DEADLINE_MOBILE_MS'
  | 'ORDER_DEADLINE_INTERNET_MS'
  | 'ORDER_DEADLINE_GIFT_CARD_MS'
  | 'REVIEW_RECHECK_INTERVAL_MS'
  | 'ORDER_ACTIVITY_TIMEOUT_MS'
  | 'PROVIDER_SETTLE_MS'
  | 'REVIEW_WATCH_MS'
  | 'REVIEW_WATCH_FIRST_CHECK_MS'
  | 'ORDER_MAX_HOLD_MS'
  | 'ORDER_QUEUED_RECHECK_MS'
  | 'ORDER_QUEUED_DEADLINE_MS'
>;

export function timingsFromConfig(config: TimingConfig, orderType: OrderType): OrderTimings {
  const deadlines: Record<OrderType, number> = {
    mobile_topup: config.ORDER_DEADLINE_MOBILE_MS,
    internet_topup: config.ORDER_DEADLINE_INTERNET_MS,
    gift_card: config.ORDER_DEADLINE_GIFT_CARD_MS,
  };
  const paces: Record<OrderType, number> = {
    mobile_topup: config.POLL_PACE_MOBILE_MS,
    internet_topup: config.POLL_PACE_INTERNET_MS,
    gift_card: config.POLL_PACE_GIFT_CARD_MS,
  };
  return {
    firstCheckMs: config.POLL_FIRST_CHECK_MS,
    handlingCheckMs: config.POLL_HANDLING_CHECK_MS,
    maxIntervalMs: config.POLL_MAX_INTERVAL_MS,
    pollIntervalMs: config.POLL_INTERVAL_MS,
    pollPaceMs: paces[orderType],
    pollHeartbeatTimeoutMs: config.POLL_HEARTBEAT_TIMEOUT_MS,
    deadlineMs: deadlines[orderType],
    reviewRecheckMs: config.REVIEW_RECHECK_INTERVAL_MS,
    reviewWatchMs: config.REVIEW_WATCH_MS,
    reviewWatchFirstCheckMs: config.REVIEW_WATCH_FIRST_CHECK_MS,
    activityTimeoutMs: config.ORDER_ACTIVITY_TIMEOUT_MS,
    settleMs: config.PROVIDER_SETTLE_MS,
    maxHoldMs: config.ORDER_MAX_HOLD_MS,
    queuedRecheckMs: config.ORDER_QUEUED_RECHECK_MS,
    queuedDeadlineMs: config.ORDER_QUEUED_DEADLINE_MS,
  };
}
