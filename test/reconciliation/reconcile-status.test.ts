/**
 * The nightly reconciliation's verdict on one re-checked order: the provider's final status
 * against ours. Partial fills count as the watch counts them, and a status an operator forced past
 * is not reopened again.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mismatchOf } from '../../src/reconciliation/matching';
import { reconcileStatus } from '../../src/reconciliation/reopening';
import type { OrderView } from '../../contract/order';

const order = (status: OrderView['status'], review?: OrderView['review']) => ({ status, review });

describe('reconciliation verdict (reconcileStatus)', () => {
  it('agrees when the provider reports our final status', () => {
    assert.equal(reconcileStatus(order('FULFILLED'), 'FULFILLED').kind, 'agreed');
    assert.equal(reconcileStatus(order('REFUNDED'), 'REFUNDED').kind, 'agreed');
    assert.equal(reconcileStatus(order('FAILED'), 'REFUNDED').kind, 'agreed');
    assert.equal(reconcileStatus(order('CANCELLED'), 'REFUNDED').kind, 'agreed');
    assert.equal(reconcileStatus(order('PARTIALLY_FULFILLED'), 'PARTIALLY_FILLED').kind, 'agreed');
  });

  it('disputes the other final status, partial fills included: money the back office was told wrong', () => {
    const cases: [OrderView['status'], string][] = [
      ['FULFILLED', 'REFUNDED'],
      ['REFUNDED', 'FULFILLED'],
      ['FAILED', 'FULFILLED'],
      // Cancelled before anything was sent, yet the provider delivered: money lost.
      ['CANCELLED', 'FULFILLED'],
      ['FULFILLED', 'PARTIALLY_FILLED'],
      ['REFUNDED', 'PARTIALLY_FILLED'],
      ['FAILED', 'PARTIALLY_FILLED'],
      ['PARTIALLY_FULFILLED', 'REFUNDED'],
    ];
    for (const [ours, provider] of cases) {
      assert.deepEqual(
        reconcileStatus(order(ours), provider),
        { kind: 'contradicted', providerStatus: provider },
        `${ours} against ${provider}`,
      );
    }
  });

  it('lets an operator’s forced decision stand against the answer it was forced past, not against a new one', () => {
    const forced = (providerStatus: string): OrderView['review'] => ({
      reason: 'stuck',
      since: '2026-11-26T10:00:00.000Z',
      resolution: {
        decision: 'FULFILLED',
        operator: 'op',
        note: 'support confirmed',
        at: '2026-11-26T11:00:00.000Z',
        provider: { status: providerStatus, answer: `provider status ${providerStatus}` },
        forcedPast: `the provider reports ${providerStatus}`,
      },
    });
    assert.equal(reconcileStatus(order('FULFILLED', forced('REFUNDED')), 'REFUNDED').kind, 'overridden');
    assert.equal(
      reconcileStatus(order('FULFILLED', forced('UNKNOWN_ERROR')), 'REFUNDED').kind,
      'contradicted',
    );
  });

  it('leaves open provider statuses and open orders alone', () => {
    assert.equal(reconcileStatus(order('FULFILLED'), 'PENDING').kind, 'not-final');
    assert.equal(reconcileStatus(order('FULFILLED'), 'UNKNOWN_ERROR').kind, 'not-final');
    assert.equal(reconcileStatus(order('NEEDS_REVIEW'), 'FULFILLED').kind, 'not-final');
  });

  it('matches a cancelled order as a refunded one: a debit never refunded is a mismatch', () => {
    const debit = { id: 'd', type: 'FLEXY', amount: 500, time: '2026-11-26T10:00:00.000Z', objid: 't' };
    const refund = { ...debit, id: 'r', type: 'REFUND-FLEXY' };
    assert.equal(mismatchOf('CANCELLED', { debits: [debit], refunds: [] }), 'debit-without-refund');
    assert.equal(mismatchOf('CANCELLED', { debits: [debit], refunds: [refund] }), undefined);
    assert.equal(mismatchOf('CANCELLED', { debits: [], refunds: [] }), undefined);
  });
});
