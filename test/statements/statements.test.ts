/**
 * GET /v1/statements on a real Temporal dev server: orders of the client `ledger` started the way
 * the intake API starts them (search attributes and the memo's figures), on a queue no worker
 * polls, completed on two days of 2004 (+ a random offset, so no other test's orders fall in the
 * range); the statement's sums are checked against figures worked out by hand.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Problem } from '../../src/http/errors';
import type { Statement } from '../../src/statements/statement.service';
import { testClients, type TestApi } from '../helpers/api';
import type { OrderStatus } from '../../contract/schemas';
import { OrderClientAttribute, type OrderRequest, type OrderSettlement } from '../../contract/order';
import {
  giftCardRequest,
  internetRequest,
  mobileRequest,
  seedVisibleOrders,
  terminateOrders,
} from '../helpers/orders';
import { idleProvider, startOrderStack, type OrderStack } from '../helpers/stack';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const key = (client: keyof typeof testClients) => ({ apiKey: testClients[client].key });

describe('GET /v1/statements', () => {
  let stack: OrderStack;
  let client: Client;
  let api: TestApi;
  const run = randomUUID().slice(0, 8);
  const day1 = Date.UTC(2004, 0, 1) + Math.floor(Math.random() * 300) * DAY;
  const day2 = day1 + DAY;
  const date = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  let n = 0;
  const ref = () => `STMT-${run}-${n++}`;
  const fixedPlan = (r: string): OrderRequest => {
    const { amount: _amount, ...rest } = mobileRequest(r);
    return { ...rest, planCode: 'FIXED_PLAN' } as OrderRequest;
  };
  interface Seed {
    request: OrderRequest;
    status: OrderStatus;
    completedAt?: number;
    figures?: false;
    settlement?: OrderSettlement;
  }
  const balance = (amount: number) => ({ debit: { amount, source: 'balance_amount' as const } });
  const seeds: Seed[] = [
    {
      request: mobileRequest(ref()),
      status: 'FULFILLED',
      completedAt: day1 + HOUR,
      settlement: balance(500),
    },
    {
      request: { ...mobileRequest(ref()), amount: 1500 },
      status: 'FULFILLED',
      completedAt: day1 + 2 * HOUR,
      settlement: balance(1470),
    },
    // Settled before debits were recorded.
    { request: fixedPlan(ref()), status: 'FULFILLED', completedAt: day1 + 3 * HOUR },
    {
      request: mobileRequest(ref()),
      status: 'REFUNDED',
      completedAt: day1 + 4 * HOUR,
      settlement: balance(0),
    },
    // The internet check gives no debit: the order records none.
    { request: internetRequest(ref()), status: 'FULFILLED', completedAt: day2 + HOUR, settlement: {} },
    {
      request: giftCardRequest(ref(), 2),
      status: 'FULFILLED',
      completedAt: day2 + 2 * HOUR,
      settlement: { debit: { amount: 2000, source: 'fulfilled_amount', pricePerCard: 1000 } },
    },
    {
      request: giftCardRequest(ref(), 3),
      status: 'FULFILLED',
      completedAt: day2 + 3 * HOUR,
      settlement: { debit: { amount: 2850, source: 'price_per_card', pricePerCard: 950 } },
    },
    // Partial: one with the amounts, one whose answer gave neither amounts nor a price.
    {
      request: giftCardRequest(ref(), 4),
      status: 'PARTIALLY_FULFILLED',
      completedAt: day2 + 5 * HOUR,
      settlement: {
        debit: { amount: 1000.5, source: 'fulfilled_amount', pricePerCard: 1000.5 },
        partial: {
          quantity: 4,
          fulfilledQuantity: 1,
          refundedQuantity: 3,
          fulfilledAmount: 1000.5,
          refundedAmount: 3001.5,
        },
      },
    },
    {
      request: giftCardRequest(ref(), 3),
      status: 'PARTIALLY_FULFILLED',
      completedAt: day2 + 6 * HOUR,
      settlement: { partial: { quantity: 3, fulfilledQuantity: 2, refundedQuantity: 1 } },
    },
    { request: mobileRequest(ref()), status: 'CANCELLED', completedAt: day2 + 4 * HOUR, figures: false },
    // Open: in review, and in flight; neither has a completion.
    { request: mobileRequest(ref()), status: 'NEEDS_REVIEW' },
    { request: internetRequest(ref()), status: 'SUBMITTED' },
    // Completed the day after the range: not in it.
    { request: mobileRequest(ref()), status: 'FULFILLED', completedAt: day2 + DAY + HOUR },
  ];
  const from = new Date(day1).toISOString();
  const to = new Date(day2 + DAY - 1).toISOString();
  const range = `from=${from}&to=${to}`;

  before(async () => {
    stack = await startOrderStack({
      name: 'statements',
      sandbox: false,
      api: { taskQueue: `statements-${run}`, provider: idleProvider },
    });
    client = stack.client;
    api = stack.api;
    await seedVisibleOrders(
      client,
      seeds.map((seed) => ({
        taskQueue: `statements-${run}`,
        owner: 'ledger',
        request: seed.request,
        status: seed.status,
        acceptedAt: new Date(day1 - HOUR),
        ...(seed.completedAt ? { completedAt: new Date(seed.completedAt) } : {}),
        figures: seed.figures !== false,
        ...(seed.settlement && { settlement: seed.settlement }),
      })),
      async () =>
        (
          await client.workflow.count(
            `${OrderClientAttribute.name} = 'ledger' AND TaskQueue = 'statements-${run}'`,
          )
        ).count,
    );
  });

  after(async () => {
    await terminateOrders(
      client,
      seeds.map((s) => s.request.ref),
      'ledger',
    );
    await stack?.stop();
  });

  const expected = (): Omit<Statement, 'open'> & { open: Statement['open'] } => ({
    client: 'ledger',
    from,
    to,
    days: [
      {
        date: date(day1),
        type: 'mobile_topup',
        status: 'FULFILLED',
        orders: 3,
        amount: 2000,
        unpriced: 1,
        debited: 1970,
        debitUnrecorded: 1,
      },
      { date: date(day1), type: 'mobile_topup', status: 'REFUNDED', orders: 1, amount: 500, debited: 0 },
      {
        date: date(day2),
        type: 'gift_card',
        status: 'FULFILLED',
        orders: 2,
        cards: 5,
        products: [{ productId: 'GOOGLE_PLAY', typeId: 'GOOGLE_PLAY_1000', orders: 2, cards: 5 }],
        debited: 4850,
      },
      {
        date: date(day2),
        type: 'gift_card',
        status: 'PARTIALLY_FULFILLED',
        orders: 2,
        cards: 7,
        products: [{ productId: 'GOOGLE_PLAY', typeId: 'GOOGLE_PLAY_1000', orders: 2, cards: 7 }],
        debited: 1000.5,
        debitUnrecorded: 1,
        partial: {
          orders: 2,
          cardsOrdered: 7,
          cardsDelivered: 3,
          cardsRefunded: 4,
          deliveredAmount: 1000.5,
          refundedAmount: 3001.5,
        },
      },
      {
        date: date(day2),
        type: 'internet_topup',
        status: 'FULFILLED',
        orders: 1,
        value: 1000,
        debitUnrecorded: 1,
      },
      { date: date(day2), type: 'mobile_topup', status: 'CANCELLED', orders: 1, unknown: 1 },
    ],
    open: [
      { type: 'internet_topup', status: 'SUBMITTED', orders: 1, value: 1000 },
      { type: 'mobile_topup', status: 'NEEDS_REVIEW', orders: 1, amount: 500 },
    ],
  });

  it('the owner: per day, type and final status, orders and sums, what the provider debited, partial orders split; open orders apart; the day after the range left out', async () => {
    const res = await api.request<Statement>('GET', `/v1/statements?${range}`, key('ledger'));
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, expected());
  });

  it('another client sees its own (none of these), and naming the owner is a 404; audit:read reads it', async () => {
    const shop = await api.request<Statement>('GET', `/v1/statements?${range}`, key('shop'));
    assert.equal(shop.status, 200, shop.text);
    assert.equal(shop.body.client, 'shop');
    assert.deepEqual(shop.body.days, []);
    const named = await api.request<Problem>('GET', `/v1/statements?${range}&client=ledger`, key('shop'));
    assert.equal(named.status, 404, named.text);
    const auditor = await api.request<Statement>(
      'GET',
      `/v1/statements?${range}&client=ledger`,
      key('auditor'),
    );
    assert.equal(auditor.status, 200, auditor.text);
    assert.deepEqual(auditor.body, expected());
  });

  it('no scope 403, no key 401; a range missing, backwards or too long is a 400 naming the field', async () => {
    assert.equal((await api.request('GET', `/v1/statements?${range}`, key('writer'))).status, 403);
    assert.equal((await api.request('GET', `/v1/statements?${range}`, { apiKey: null })).status, 401);
    const cases: [string, string[]][] = [
      [`from=${from}`, ['to']],
      [`from=${to}&to=${from}`, ['to']],
      [`from=2004-01-01T00:00:00Z&to=2005-01-02T00:00:01Z`, ['to']],
      [`${range}&status=FULFILLED`, ['status']],
    ];
    for (const [query, fields] of cases) {
      const res = await api.request<Problem>('GET', `/v1/statements?${query}`, key('ledger'));
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.deepEqual(
        res.body.errors?.map((e) => e.field),
        fields,
        query,
      );
    }
  });
});
