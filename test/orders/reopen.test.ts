/**
 * The reopening's input (src/orders/reopen.ts `reopenedInput`), as each caller builds it: the sweep
 * (`resumed`, the closed run's continuation carried on) and the reconciliation (`reconciled`, the
 * continuation over, webhook events numbered after the view's timeline). Compared as JSON, so the
 * fields' order counts too: the new run's first argument is the same as before the two callers
 * shared the function.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { reopenedInput } from '../../src/orders/reopen';
import { defaultOrderTimings, type OrderInput, type OrderView } from '../../contract/order';

const request = { type: 'mobile_topup', ref: 'r-1', phone: '0550000000', amount: 100 } as const;
const view = {
  ref: 'r-1',
  type: 'mobile_topup',
  status: 'NEEDS_REVIEW',
  request,
  timeline: [
    { status: 'ACCEPTED', at: '2026-01-01T00:00:00.000Z' },
    { status: 'PROCESSING', at: '2026-01-01T00:00:01.000Z' },
  ],
} as unknown as OrderView;
const older = { ...view, status: 'PROCESSING' } as OrderView;
const input = {
  request,
  clientId: 'c',
  resumed: { closedAs: 'FAILED', at: '2025-12-31T00:00:00.000Z' },
  continued: { view: older, deadlineAt: 1, nextCheckMs: 5, eventSequence: 7, webhookDurable: 'all' },
  reconciled: { date: '2025-12-30', providerStatus: 'REFUNDED', evidence: 'before' },
  webhooks: true,
} as unknown as OrderInput;
const deadlineMs = defaultOrderTimings.mobile_topup.deadlineMs;

/** Date.now() held still while `run` runs. */
function at<T>(now: number, run: () => T): T {
  const real = Date.now;
  Date.now = () => now;
  try {
    return run();
  } finally {
    Date.now = real;
  }
}

describe('reopenedInput', () => {
  it('for the sweep: resumed in place, the continuation carried on with the view, no dispute', () => {
    const resumed = { closedAs: 'TERMINATED', at: '2026-01-02T00:00:00.000Z' };
    const got = at(1_000, () => reopenedInput(input, view, { resumed }, 'carried'));
    assert.equal(
      JSON.stringify(got),
      JSON.stringify({
        request,
        clientId: 'c',
        resumed,
        webhooks: true,
        continued: {
          view,
          deadlineAt: 1_000 + deadlineMs,
          nextCheckMs: 0,
          eventSequence: 7,
          webhookDurable: 'all',
        },
      }),
    );
  });

  it('for the sweep without a view: no continuation at all', () => {
    const resumed = { closedAs: 'TERMINATED', at: '2026-01-02T00:00:00.000Z' };
    const got = reopenedInput(input, undefined, { resumed }, 'carried');
    assert.equal(JSON.stringify(got), JSON.stringify({ request, clientId: 'c', resumed, webhooks: true }));
  });

  it('for the reconciliation: reconciled in place, not resumed, only the last view goes on', () => {
    const reconciled = { date: '2026-01-01', providerStatus: 'FULFILLED', evidence: 'now' } as const;
    const got = at(2_000, () => reopenedInput(input, view, { reconciled }, 'closed'));
    assert.equal(
      JSON.stringify(got),
      JSON.stringify({
        request,
        clientId: 'c',
        reconciled,
        webhooks: true,
        continued: { view, deadlineAt: 2_000 + deadlineMs, nextCheckMs: 0, eventSequence: 2 },
      }),
    );
  });

  it('leaves the closed run’s input as it was', () => {
    const before = JSON.stringify(input);
    reopenedInput(input, view, { resumed: { closedAs: 'FAILED', at: 'x' } }, 'carried');
    reopenedInput(
      input,
      view,
      { reconciled: { date: 'd', providerStatus: 'REFUNDED', evidence: 'e' } },
      'closed',
    );
    assert.equal(JSON.stringify(input), before);
  });
});
