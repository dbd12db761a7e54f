import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config';
import { timingsFromConfig } from '../../src/orders/timings';
import { defaultOrderTimings } from '../../workflows/contract';

describe('timingsFromConfig', () => {
  it('with the default configuration, gives the spec timings and each type its deadline', () => {
    const config = loadConfig({});
    for (const type of ['mobile_topup', 'internet_topup', 'gift_card'] as const) {
      const { activityTimeoutMs, ...timings } = timingsFromConfig(config, type);
      const { activityTimeoutMs: _default, ...expected } = defaultOrderTimings[type];
      assert.deepEqual(timings, expected);
      assert.ok(activityTimeoutMs > 2 * (2_000 + 10_000 + 10_000), 'an attempt outlasts two provider calls');
    }
  });

  it('follows the configuration', () => {
    const config = loadConfig({
      POLL_FIRST_CHECK_MS: '1000',
      POLL_HANDLING_CHECK_MS: '2000',
      POLL_MAX_INTERVAL_MS: '3000',
      ORDER_DEADLINE_GIFT_CARD_MS: '4000',
      REVIEW_RECHECK_INTERVAL_MS: '5000',
      REVIEW_WATCH_MS: '0',
      REVIEW_WATCH_FIRST_CHECK_MS: '6000',
      PROVIDER_CONNECT_TIMEOUT_MS: '100',
      PROVIDER_HEADERS_TIMEOUT_MS: '200',
      PROVIDER_BODY_TIMEOUT_MS: '300',
    });
    assert.deepEqual(timingsFromConfig(config, 'gift_card'), {
      firstCheckMs: 1_000,
      handlingCheckMs: 2_000,
      maxIntervalMs: 3_000,
      deadlineMs: 4_000,
      reviewRecheckMs: 5_000,
      reviewWatchMs: 0,
      reviewWatchFirstCheckMs: 6_000,
      activityTimeoutMs: 2 * 600 + 5_000,
    });
  });
});
