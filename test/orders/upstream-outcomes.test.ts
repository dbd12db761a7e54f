/**
 * The documented outcomes the lifecycle acts on (issue 25, item 3): QUEUED and PARTIALLY_FILLED,
 * end to end — orders submitted through the API, run by the real workflows on a real Temporal
 * server against the sandbox over HTTP (its documented TEST_PARTIAL type, its outcome changes for
 * QUEUED), their events delivered to a real receiver.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { providerRefFor } from '../../src/orders/provider-ref';
import { sandboxSpecialNumbers, sandboxTestTypes } from '../../src/provider/wire';
import { sandboxRefundMessages } from '../../src/sandbox/simulation';
import type { RunningReceiver } from '../../src/webhooks/receiver';
import type { Statement } from '../../src/statements/statement.service';
import { internetRequest, mobileRequest, scaledTimings, refsPrefixed } from '../helpers/orders';
import { clientOrders, eventually } from '../helpers/webhooks';
import type { OrderStack } from '../helpers/stack';
import { startHookedClient, type HookedClientStack } from '../helpers/hooked-client';

const KEY = 'test-key-upstream';
const CLIENT = 'upstream';
const newRef = refsPrefixed('UP');
/** Short for the test; hours in production (ORDER_QUEUED_RECHECK_MS). */
const QUEUED_RECHECK_MS = 2_000;

describe('QUEUED and PARTIALLY_FILLED as the provider documents them', { timeout: 300_000 }, () => {
  let stack: OrderStack<'orders'>;
  let receiver: RunningReceiver;
  let hooked: HookedClientStack;

  before(async () => {
    ({ stack, receiver } = hooked = await startHookedClient({
      name: 'upstream',
      id: CLIENT,
      key: KEY,
      scopes: ['orders:write', 'orders:read', 'audit:read', 'webhooks:read', 'webhooks:write'],
      timingsFor: () =>
        scaledTimings({ queuedRecheckMs: QUEUED_RECHECK_MS, queuedDeadlineMs: 8_000, deadlineMs: 4_000 }),
    }));
  });
  after(async () => {
    await hooked?.stop();
  });

  const { call, until, eventsOf } = clientOrders(
    () => stack,
    KEY,
    () => receiver,
  );
  async function submit(body: object): Promise<void> {
    const res = await call('POST', '/v1/orders', body);
    assert.equal(res.status, 201, res.text);
  }
  async function listed(status: string): Promise<string[]> {
    const res = await call<{ orders: { ref: string }[] }>('GET', `/v1/orders?status=${status}`);
    assert.equal(res.status, 200, res.text);
    return res.body.orders.map((o) => o.ref);
  }

  it('a gift card the provider PARTIALLY_FILLED ends PARTIALLY_FULFILLED: the delivered cards, quantities and refund, the debit, its event, the list filter, the statement', async () => {
    const ref = newRef('partial');
    const submittedAt = new Date(Date.now() - 1_000);
    await submit({
      type: 'gift_card',
      ref,
      productId: 'GOOGLE_PLAY',
      typeId: sandboxTestTypes.partial,
      quantity: 4,
    });
    const view = await until(ref, (v) => v.status === 'PARTIALLY_FULFILLED', 'PARTIALLY_FULFILLED');

    assert.equal(view.providerStatus, 'PARTIALLY_FILLED');
    assert.equal(view.result?.cards?.length, 2);
    assert.deepEqual(
      [
        view.result?.partial?.quantity,
        view.result?.partial?.fulfilledQuantity,
        view.result?.partial?.refundedQuantity,
      ],
      [4, 2, 2],
    );
    const partial = view.result?.partial;
    assert.ok(
      partial?.fulfilledAmount !== undefined && partial.refundedAmount !== undefined,
      'amounts given',
    );
    // What the provider debited, from its answer: the delivered cards' amount.
    assert.equal(view.result?.debit?.source, 'fulfilled_amount');
    assert.equal(view.result?.debit?.amount, partial.fulfilledAmount);
    assert.ok((await listed('PARTIALLY_FULFILLED')).includes(ref));
    await eventually(
      () => eventsOf(ref),
      (e) => e.includes('order.partially_fulfilled'),
      'order.partially_fulfilled delivered',
    );
    // Recorded on the order as it settled (its memo), so the statement shows it split.
    const range = `from=${submittedAt.toISOString()}&to=${new Date(Date.now() + 1_000).toISOString()}`;
    const line = await eventually(
      async () => {
        const statement = await call<Statement>('GET', `/v1/statements?${range}`);
        assert.equal(statement.status, 200, statement.text);
        return statement.body.days.find((l) => l.status === 'PARTIALLY_FULFILLED');
      },
      (l) => l?.partial !== undefined,
      'the statement shows the partial order',
    );
    assert.deepEqual(
      { debited: line?.debited, partial: line?.partial },
      {
        debited: partial.fulfilledAmount,
        partial: {
          orders: 1,
          cardsOrdered: 4,
          cardsDelivered: 2,
          cardsRefunded: 2,
          deliveredAmount: partial.fulfilledAmount,
          refundedAmount: partial.refundedAmount,
        },
      },
    );
  });

  it('a FULFILLED mobile top-up records what the provider debited with its final status (DebitAmount, no memo update), and the statement sums it', async () => {
    const ref = newRef('debit');
    const submittedAt = new Date(Date.now() - 1_000);
    await submit(mobileRequest(ref));
    const view = await until(ref, (v) => v.status === 'FULFILLED', 'FULFILLED');
    const debited = view.result?.debit?.amount;
    assert.equal(view.result?.debit?.source, 'balance_amount');
    assert.ok(debited !== undefined && debited > 0, `debit ${debited}`);
    const range = `from=${submittedAt.toISOString()}&to=${new Date(Date.now() + 1_000).toISOString()}`;
    const line = await eventually(
      async () => {
        const statement = await call<Statement>('GET', `/v1/statements?${range}`);
        assert.equal(statement.status, 200, statement.text);
        return statement.body.days.find((l) => l.type === 'mobile_topup' && l.status === 'FULFILLED');
      },
      (l) => l?.orders === 1,
      'the statement shows the fulfilled top-up',
    );
    assert.deepEqual(
      { debited: line?.debited, debitUnrecorded: line?.debitUnrecorded },
      { debited, debitUnrecorded: undefined },
    );
  });

  it('a gift card of the documented TEST_REFUND type ends REFUNDED through the lifecycle: no cards, its event', async () => {
    const ref = newRef('test-refund');
    await submit({
      type: 'gift_card',
      ref,
      productId: 'GOOGLE_PLAY',
      typeId: sandboxTestTypes.refund,
      quantity: 2,
    });
    const view = await until(ref, (v) => v.status === 'REFUNDED' || v.status === 'NEEDS_REVIEW', 'settled');
    assert.equal(view.status, 'REFUNDED', view.review?.reason);
    assert.equal(view.result?.cards, undefined);
    await eventually(
      () => eventsOf(ref),
      (e) => e.includes('order.refunded'),
      'order.refunded delivered',
    );
  });

  it('an internet top-up the provider QUEUED is QUEUED (view, event, list), re-checked at its own pace past the normal deadline, and FULFILLED when the card comes', async () => {
    const ref = newRef('queued');
    const providerRef = providerRefFor(CLIENT, ref);
    // QUEUED at once; the card is delivered 9 s later — past the order's normal 4 s deadline.
    await stack.sandbox.changeTopup(providerRef, { status: 'QUEUED' });
    await stack.sandbox.changeTopup(providerRef, { status: 'FULFILLED', afterMs: 6_000 });
    await submit(internetRequest(ref));

    const queued = await until(ref, (v) => v.status === 'QUEUED', 'QUEUED');
    assert.equal(queued.providerStatus, 'QUEUED');
    assert.ok((await listed('QUEUED')).includes(ref));
    await eventually(
      () => eventsOf(ref),
      (e) => e.includes('order.queued'),
      'order.queued delivered',
    );
    const checksWhileQueued = (await stack.sandbox.requests('internet.check')).length;

    const done = await until(ref, (v) => v.status === 'FULFILLED', 'FULFILLED', 30_000);
    assert.ok(done.result?.cardCode, 'the card code');
    // At the QUEUED pace (every 2 s here), not the polling back-off (a check per 600 ms here).
    const checks = (await stack.sandbox.requests('internet.check')).length - checksWhileQueued;
    assert.ok(checks <= 5, `${checks} checks while QUEUED`);
  });

  it('an internet top-up FULFILLED without the optional num_trans ends FULFILLED with its card code (not review)', async () => {
    const ref = newRef('no-num-trans');
    await stack.sandbox.changeTopup(providerRefFor(CLIENT, ref), {
      status: 'FULFILLED',
      without: ['num_trans'],
    });
    await submit(internetRequest(ref));
    const view = await until(ref, (v) => v.status === 'FULFILLED' || v.status === 'NEEDS_REVIEW', 'settled');
    assert.equal(view.status, 'FULFILLED', view.review?.reason);
    assert.match(view.result?.cardCode ?? '', /^\d{16}$/);
    assert.equal(view.result?.transactionNumber, undefined);
  });

  it('a top-up REFUNDED on a plan mismatch: its refund_message and suggested_offers reach the order view, the order.refunded webhook and the audit export', async () => {
    const ref = newRef('mismatch');
    await submit(mobileRequest(ref, sandboxSpecialNumbers.planMismatch));
    const view = await until(ref, (v) => v.status === 'REFUNDED', 'REFUNDED');
    const offers = [{ planCode: 'FACTURE_DJEZZY', amount: 500, typename: 'Facture' }];
    assert.equal(view.result?.refundMessage, sandboxRefundMessages.planMismatch);
    assert.deepEqual(view.result?.suggestedOffers, offers);

    const [event] = await eventually(
      () =>
        receiver.deliveries.filter((d) => d.message?.data.ref === ref && d.message.type === 'order.refunded'),
      (list) => list.length === 1,
      'order.refunded delivered',
    );
    assert.equal(event!.message!.data.result?.refundMessage, sandboxRefundMessages.planMismatch);
    assert.deepEqual(event!.message!.data.result?.suggestedOffers, offers);

    const audit = await call('GET', `/v1/orders/${ref}/audit`);
    assert.equal(audit.status, 200, audit.text);
    assert.ok(audit.text.includes(sandboxRefundMessages.planMismatch), 'the audit shows the refund_message');
    assert.ok(audit.text.includes('FACTURE_DJEZZY'), 'the audit shows the suggested offer');
  });

  it('a GETMENU_ plan: the number’s offers (suggested_offers) reach the FULFILLED order’s view, its order.fulfilled webhook and the audit', async () => {
    const ref = newRef('menu');
    await submit({ ...mobileRequest(ref), planCode: 'GETMENU_Mobilis' });
    const view = await until(ref, (v) => v.status === 'FULFILLED' || v.status === 'NEEDS_REVIEW', 'settled');
    assert.equal(view.status, 'FULFILLED', view.review?.reason);
    const offered = view.result?.suggestedOffers ?? [];
    assert.ok(
      offered.some((o) => o.planCode === 'PIXX_500' && o.amount === 500),
      JSON.stringify(offered),
    );
    assert.ok(!offered.some((o) => o.planCode.startsWith('GETMENU_')), 'not the menu itself');

    const [event] = await eventually(
      () =>
        receiver.deliveries.filter(
          (d) => d.message?.data.ref === ref && d.message.type === 'order.fulfilled',
        ),
      (list) => list.length === 1,
      'order.fulfilled delivered',
    );
    assert.deepEqual(event!.message!.data.result?.suggestedOffers, offered);
    const audit = await call('GET', `/v1/orders/${ref}/audit`);
    assert.equal(audit.status, 200, audit.text);
    assert.ok(audit.text.includes('PIXX_500'), 'the audit shows the offers');
  });

  it("a top-up in review for UNKNOWN_ERROR keeps the provider's refund_message: the view's review, its evidence, the order.needs_review webhook and the audit", async () => {
    const ref = newRef('unknown');
    await submit(mobileRequest(ref, sandboxSpecialNumbers.unknownError));
    const view = await until(ref, (v) => v.status === 'NEEDS_REVIEW', 'NEEDS_REVIEW');
    assert.equal(view.review?.refundMessage, sandboxRefundMessages.unknown);
    assert.ok(view.review?.evidence?.includes(sandboxRefundMessages.unknown), view.review?.evidence);

    const [event] = await eventually(
      () =>
        receiver.deliveries.filter(
          (d) => d.message?.data.ref === ref && d.message.type === 'order.needs_review',
        ),
      (list) => list.length === 1,
      'order.needs_review delivered',
    );
    assert.equal(event!.message!.data.review?.refundMessage, sandboxRefundMessages.unknown);

    const audit = await call('GET', `/v1/orders/${ref}/audit`);
    assert.equal(audit.status, 200, audit.text);
    assert.ok(audit.text.includes(sandboxRefundMessages.unknown), 'the audit shows the refund_message');
  });

  it('a QUEUED top-up still QUEUED at its own deadline goes to review as stuck, saying QUEUED', async () => {
    const ref = newRef('queued-stuck');
    await stack.sandbox.changeTopup(providerRefFor(CLIENT, ref), { status: 'QUEUED' });
    await submit(internetRequest(ref));
    await until(ref, (v) => v.status === 'QUEUED', 'QUEUED');
    const view = await until(ref, (v) => v.status === 'NEEDS_REVIEW', 'NEEDS_REVIEW', 30_000);
    assert.match(view.review?.reason ?? '', /QUEUED/);
  });
});
