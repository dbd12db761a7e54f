/**
 * Reading the provider's `created_at` for the ownership check (src/orders/lifecycle/adapters/other-topup.workflow.ts):
 * the same instant on every worker whatever its time zone, and no verdict where the check must
 * not judge (no `created_at`, an unreadable one, one within the clock-skew allowance), and the
 * verdict past it. A pure module, tested alone; what an order does with the verdict is tested
 * against the sandbox in test/orders/send-path.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  CREATED_AT_SKEW_ALLOWANCE_MS,
  madeBeforeTheOrder,
  providerTime,
} from '../../src/orders/lifecycle/adapters/other-topup.workflow';

describe("the provider's created_at", () => {
  const instant = Date.UTC(2026, 7, 29, 9, 15, 0);

  it('reads ISO 8601 with Z, an offset with or without a colon, a space for T, and fractions', () => {
    assert.equal(providerTime('2026-08-29T09:15:00.000Z'), instant);
    assert.equal(providerTime('2026-08-29T09:15:00Z'), instant);
    assert.equal(providerTime('2026-08-29T10:15:00+01:00'), instant);
    assert.equal(providerTime('2026-08-29T10:15:00+0100'), instant);
    assert.equal(providerTime('2026-08-29 09:15:00.123456Z'), instant + 123);
    assert.equal(providerTime('2026-08-29T09:15Z'), instant);
  });

  it('reads a time without an offset as UTC, never as the worker’s local time', () => {
    // A worker far from UTC: on a UTC machine a reading in local time would pass unnoticed.
    const zone = process.env.TZ;
    process.env.TZ = 'Pacific/Kiritimati';
    try {
      assert.notEqual(new Date(instant).getHours(), 9, 'the zone took effect');
      assert.equal(providerTime('2026-08-29T09:15:00'), instant);
      assert.equal(providerTime('2026-08-29 09:15:00'), instant);
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  it('reads nothing else: absent, a bare date, epoch numbers, other orders of fields, impossible dates', () => {
    for (const value of [
      undefined,
      '',
      '2026-08-29',
      '1788000000',
      '29/08/2026 09:15',
      '2026-13-45T99:99:00Z',
    ])
      assert.equal(providerTime(value), undefined, String(value));
  });

  it('gives no verdict without a readable created_at, or within the clock-skew allowance', () => {
    const acceptedAt = new Date(instant).toISOString();
    const before = (ms: number) => ({ created_at: new Date(instant - ms).toISOString() });
    assert.equal(madeBeforeTheOrder({}, acceptedAt, undefined), undefined);
    assert.equal(madeBeforeTheOrder({ created_at: 'yesterday' }, acceptedAt, undefined), undefined);
    assert.equal(madeBeforeTheOrder(before(CREATED_AT_SKEW_ALLOWANCE_MS), acceptedAt, undefined), undefined);
    assert.equal(
      madeBeforeTheOrder(before(-60_000), acceptedAt, undefined),
      undefined,
      'made after the acceptance',
    );
    assert.equal(
      madeBeforeTheOrder({ ...before(90 * 24 * 3_600_000), _id: 'ours' }, acceptedAt, 'ours'),
      undefined,
      'the top-up our own send got back is ours, whatever the clocks say',
    );
  });

  it("judges a top-up made more than the allowance before the acceptance an older order's", () => {
    const acceptedAt = new Date(instant).toISOString();
    const made = new Date(instant - CREATED_AT_SKEW_ALLOWANCE_MS - 3_600_000).toISOString();
    assert.match(
      madeBeforeTheOrder({ created_at: made }, acceptedAt, undefined) ?? '',
      /13 h before the order/,
    );
    const old = new Date(instant - 90 * 24 * 3_600_000).toISOString();
    assert.match(
      madeBeforeTheOrder({ created_at: old, _id: 'theirs' }, acceptedAt, 'ours') ?? '',
      /90 days before the order was accepted/,
    );
  });
});
