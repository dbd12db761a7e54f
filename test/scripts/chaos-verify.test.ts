/**
 * The chaos verdict's account checks, on made-up input (the run itself is chaos.test.ts): the
 * money check finds an order reported FAILED or REFUNDED that the provider's records show
 * delivered, held orders are counted by reason, and an order failed for the account's trouble, or
 * held and never let go, is a problem.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { OrderView } from '../../src/orders/order.service';
import type { OrderRequest } from '../../contract/schemas';
import { orderWorkflowId } from '../../contract/order';
import { LEGACY_CLIENT_ID } from '../../src/clients/model';
import { providerRefFor } from '../../src/orders/provider-ref';
import type { ProviderRecords } from '../../scripts/chaos/provider-records';
import { newRecord, type OrderRecord } from '../../scripts/chaos/submit';
import { verify } from '../../scripts/chaos/verify';

const mobile = (ref: string): OrderRequest => ({
  type: 'mobile_topup',
  ref,
  planCode: 'PREPAID_DJEZZY',
  msisdn: '0551234567',
  amount: 500,
});
const giftCard = (ref: string): OrderRequest => ({
  type: 'gift_card',
  ref,
  productId: 'GOOGLE_PLAY',
  typeId: 'GOOGLE_PLAY_500',
  quantity: 1,
});

/** An accepted order whose view ends `status`, with `view` on top. */
function order(
  request: OrderRequest,
  status: OrderView['status'],
  view: Partial<OrderView> = {},
): OrderRecord {
  const record = newRecord({
    request,
    expected: { status: 'FULFILLED' },
    atMs: 0,
    control: false,
    race: false,
  });
  record.accepted = true;
  record.status = 201;
  record.view = {
    ref: request.ref,
    type: request.type,
    status,
    request,
    timeline: [],
    ...(status === 'FULFILLED' &&
      request.type === 'mobile_topup' && { result: { msisdn: request.msisdn, amount: request.amount } }),
    ...view,
  } as OrderView;
  return record;
}

async function verdictOf(records: OrderRecord[], provider: ProviderRecords) {
  const sends = Object.fromEntries(
    provider.topups.map((t) => [t.ref, { family: t.family, accepted: 1, attempts: 1 }]),
  );
  return verify({
    records,
    sends: { refs: sends, giftCardOrders: { placed: provider.giftCardOrders.length } },
    provider,
    workflowCount: records.length,
    intakeStats: { retried: {}, internalErrors: 0 },
    // Each gift card's placement is its own (the sandbox's truth, gift-card-truth.ts).
    placements: records.flatMap((r) =>
      r.planned.request.type === 'gift_card' && r.view?.providerReference
        ? [
            {
              orderId: r.view.providerReference,
              productId: r.planned.request.productId,
              typeId: r.planned.request.typeId,
              quantity: r.planned.request.quantity,
              placedAt: new Date(0).toISOString(),
              clientRef: orderWorkflowId(r.planned.request.ref),
            },
          ]
        : [],
    ),
    troubleOf: () => Promise.resolve('an activity failed'),
  });
}

const sentAs = (ref: string, status: string) => ({
  family: 'mobile' as const,
  ref: providerRefFor(LEGACY_CLIENT_ID, ref),
  status,
});

describe('chaos verdict: the money check', () => {
  it('passes when what the provider fulfilled is reported FULFILLED', async () => {
    const verdict = await verdictOf([order(mobile('m-1'), 'FULFILLED')], {
      topups: [sentAs('m-1', 'FULFILLED')],
      giftCardOrders: [],
    });
    assert.deepEqual(verdict.problems, []);
    assert.deepEqual(verdict.money, { providerFulfilled: 1, reportedFailedOrRefunded: 0 });
  });

  it('names a top-up reported REFUNDED or FAILED that the provider fulfilled', async () => {
    const verdict = await verdictOf(
      [
        order(mobile('m-refunded'), 'REFUNDED', { result: { refundMessage: 'reversed' } }),
        order(mobile('m-failed'), 'FAILED', { failure: { code: 'REJECTED', message: 'no' } }),
      ],
      { topups: [sentAs('m-refunded', 'FULFILLED'), sentAs('m-failed', 'FULFILLED')], giftCardOrders: [] },
    );
    assert.equal(verdict.money.reportedFailedOrRefunded, 2);
    assert.ok(
      verdict.problems.includes(
        "m-refunded: MONEY — reported REFUNDED, but the provider's records show the mobile top-up FULFILLED",
      ),
      verdict.problems.join('\n'),
    );
    assert.ok(verdict.problems.some((p) => p.startsWith('m-failed: MONEY — reported FAILED')));
  });

  it('names a gift card reported FAILED whose provider order delivered cards', async () => {
    const verdict = await verdictOf(
      [
        order(giftCard('g-1'), 'FAILED', {
          providerReference: 'order-1',
          failure: { code: 'X', message: 'x' },
        }),
      ],
      { topups: [], giftCardOrders: [{ orderId: 'order-1', status: 'PARTIALLY_FILLED' }] },
    );
    assert.ok(
      verdict.problems.includes(
        "g-1: MONEY — reported FAILED, but the provider's records show gift-card order order-1 PARTIALLY_FILLED",
      ),
      verdict.problems.join('\n'),
    );
  });

  it('leaves alone a refund the provider made itself', async () => {
    const verdict = await verdictOf(
      [order(mobile('m-1'), 'REFUNDED', { result: { refundMessage: 'reversed' } })],
      { topups: [sentAs('m-1', 'REFUNDED')], giftCardOrders: [] },
    );
    assert.equal(verdict.money.reportedFailedOrRefunded, 0);
    assert.ok(!verdict.problems.some((p) => p.includes('MONEY')));
  });
});

describe('chaos verdict: held orders', () => {
  const heldFor = (reason: 'balance' | 'operator') => ({
    hold: { reason, since: '2026-01-01T00:00:00Z', until: '2026-01-01T00:01:00Z' },
  });

  it('counts orders held for the balance and for an operator, one held for both in both', async () => {
    const both = order(mobile('m-3'), 'FULFILLED', {
      ...heldFor('operator'),
      timeline: [
        {
          at: '2026-01-01T00:00:00Z',
          status: 'HELD',
          event:
            "Held, nothing sent: the account's balance does not cover the order; sent once the account can take it",
        },
        {
          at: '2026-01-01T00:00:05Z',
          status: 'HELD',
          event: 'Still held: the provider reports operator djezzy down; nothing was sent',
        },
      ],
    });
    const verdict = await verdictOf(
      [
        order(mobile('m-1'), 'FULFILLED', heldFor('balance')),
        order(mobile('m-2'), 'FULFILLED', heldFor('operator')),
        both,
        order(mobile('m-4'), 'FULFILLED'),
      ],
      { topups: ['m-1', 'm-2', 'm-3', 'm-4'].map((ref) => sentAs(ref, 'FULFILLED')), giftCardOrders: [] },
    );
    assert.deepEqual(verdict.problems, []);
    assert.deepEqual(verdict.held, { orders: 3, balance: 2, operator: 2 });
  });

  it('fails an order held and never let go, and one failed for the balance instead of held', async () => {
    const verdict = await verdictOf(
      [
        order(mobile('m-1'), 'FAILED', {
          ...heldFor('balance'),
          failure: { code: 'NOT_SENT', message: 'held' },
        }),
        order(mobile('m-2'), 'FAILED', { failure: { code: 'INSUFFICIENT_BALANCE', message: 'short' } }),
      ],
      { topups: [], giftCardOrders: [] },
    );
    assert.ok(verdict.problems.some((p) => p.startsWith('m-1 (mobile_topup): FAILED NOT_SENT')));
    assert.ok(verdict.problems.some((p) => p.startsWith('m-2 (mobile_topup): FAILED INSUFFICIENT_BALANCE')));
  });
});
