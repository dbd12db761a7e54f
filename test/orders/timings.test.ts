import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config';
import { timingsFromConfig } from '../../src/orders/timings';
import { defaultOrderTimings } from '../../contract/order';

describe('timingsFromConfig', () => {
  it('with the default configuration, gives the spec timings and each type its deadline', () => {
    const config = loadConfig({});
    for (const type of ['mobile_topup', 'internet_topup', 'gift_card'] as const) {
      assert.deepEqual(timingsFromConfig(config, type), defaultOrderTimings[type]);
    }
  });

  it('follows the configuration', () => {
    const config = loadConfig({
      POLL_FIRST_CHECK_MS: '1000',
      POLL_HANDLING_CHECK_MS: '2000',
      POLL_MAX_INTERVAL_MS: '3000',
      ORDER_DEADLINE_GIFT_CARD_MS: '4000',
      REVIEW_RECHECK_INTERVAL_MS: '5000',
      ORDER_ACTIVITY_TIMEOUT_MS: '6000',
      PROVIDER_SETTLE_MS: '7000',
      REVIEW_WATCH_MS: '0',
      REVIEW_WATCH_FIRST_CHECK_MS: '8000',
      ORDER_MAX_HOLD_MS: '9000',
      ORDER_QUEUED_RECHECK_MS: '10000',
      ORDER_QUEUED_DEADLINE_MS: '11000',
      POLL_INTERVAL_MS: '0',
      POLL_PACE_GIFT_CARD_MS: '12000',
      POLL_HEARTBEAT_TIMEOUT_MS: '13000',
    });
    assert.deepEqual(timingsFromConfig(config, 'gift_card'), {
      firstCheckMs: 1_000,
      handlingCheckMs: 2_000,
      maxIntervalMs: 3_000,
      pollIntervalMs: 0,
      pollPaceMs: 12_000,
      pollHeartbeatTimeoutMs: 13_000,
      deadlineMs: 4_000,
      reviewRecheckMs: 5_000,
      reviewWatchMs: 0,
      reviewWatchFirstCheckMs: 8_000,
      activityTimeoutMs: 6_000,
      settleMs: 7_000,
      maxHoldMs: 9_000,
      queuedRecheckMs: 10_000,
      queuedDeadlineMs: 11_000,
    });
  });

  it("does not follow the API's provider HTTP timeouts: each call ends within its activity attempt instead", () => {
    const slowProvider = loadConfig({
      PROVIDER_HEADERS_TIMEOUT_MS: '120000',
      PROVIDER_BODY_TIMEOUT_MS: '120000',
    });
    assert.deepEqual(
      timingsFromConfig(slowProvider, 'mobile_topup'),
      timingsFromConfig(loadConfig({}), 'mobile_topup'),
    );
  });
});
