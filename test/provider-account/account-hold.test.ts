/**
 * Orders on hold (issue 25, docs/operators.md "Orders on hold"), end to end: orders submitted
 * through the API, run by the real workflows and the account workflow on a real Temporal server,
 * against the sandbox over HTTP whose balance and operators are set through its admin surface;
 * events delivered to a real receiver. Tests share the sandbox's account, so they run in order.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxAdmin } from '../../src/sandbox/admin-client';
import type { RunningReceiver } from '../../src/webhooks/receiver';
import type { OrderTimings } from '../../contract/order';
import {
  giftCardRequest,
  internetRequest,
  mobileRequest,
  scaledTimings,
  testProvider,
  refsPrefixed,
} from '../helpers/orders';
import { clientOrders, eventually, scrapeAccountGauges } from '../helpers/webhooks';
import type { OrderStack } from '../helpers/stack';
import { startHookedClient, type HookedClientStack } from '../helpers/hooked-client';

const KEY = 'test-key-held';
const newRef = refsPrefixed('HOLD');
/** The account workflow reads the balance and /v3/ping this often. */
const ACCOUNT_CHECK_MS = 500;

interface Ready {
  account?: {
    held?: { balance: number; operator: number; byOperator?: Record<string, number> };
    operators?: Record<string, string>;
  };
}

describe('orders on hold while the provider account cannot take them', { timeout: 300_000 }, () => {
  let stack: OrderStack<'orders'>;
  let receiver: RunningReceiver;
  let hooked: HookedClientStack;
  let admin: SandboxAdmin;
  let timings: Partial<OrderTimings> = {};
  let provider: ReturnType<typeof testProvider>;

  before(async () => {
    ({ stack, receiver, admin } = hooked = await startHookedClient({
      name: 'held',
      id: 'held',
      key: KEY,
      account: { checkMs: ACCOUNT_CHECK_MS },
      timingsFor: () => scaledTimings(timings),
    }));
    provider = testProvider(stack.sandbox.url);
  });
  afterEach(async () => {
    timings = {};
    await admin.settings({ balance: 1_000_000 });
    await admin.operators({ mobilis: 'up', djezzy: 'up', ooredoo: 'up', mobilisFixedPlans: 'up' });
  });
  after(async () => {
    await provider?.close();
    await hooked?.stop();
  });

  const { call, viewOf, until, eventsOf } = clientOrders(
    () => stack,
    KEY,
    () => receiver,
  );
  const scrape = () => scrapeAccountGauges(stack, provider.client);
  async function submit(ref: string, request: object = mobileRequest(ref)): Promise<void> {
    const res = await call('POST', '/v1/orders', request);
    assert.equal(res.status, 201, res.text);
  }

  it('with the balance at 0 orders are HELD (view, list filter, order.held), not FAILED; topped up, they are sent once each, in acceptance order', async () => {
    await admin.settings({ balance: 0 });
    const [first, second] = [newRef('first'), newRef('second')];
    await submit(first);
    await submit(second);

    const held = await until(first, (v) => v.status === 'HELD', 'HELD');
    assert.equal(held.hold?.reason, 'balance');
    assert.ok(held.hold.until > held.hold.since);
    await until(second, (v) => v.status === 'HELD', 'HELD');
    // The list reads visibility, which may lag the status the view already shows.
    const listed = await eventually(
      () => call<{ orders: { ref: string }[] }>('GET', '/v1/orders?status=HELD'),
      (res) => res.status !== 200 || res.body.orders.length >= 2,
      'both held orders listed',
    );
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.body.orders.map((o) => o.ref).sort(), [first, second].sort());
    await eventually(
      () => eventsOf(first),
      (e) => e.includes('order.held'),
      'order.held delivered',
    );
    // /readyz and the metrics say so; the API stays ready (it keeps taking orders).
    const ready = await eventually(
      () => stack.api.request<Ready>('GET', '/readyz', { apiKey: null }),
      (r) => r.body?.account?.held?.balance === 2,
      '/readyz shows two orders held for the balance',
    );
    assert.equal(ready.status, 200);
    await eventually(
      scrape,
      (text) => /topup_orders_held\{reason="balance"\} 2/.test(text),
      'topup_orders_held{reason="balance"} 2',
    );

    // Enough for the first order only (500 DZD at the sandbox's price): the second waits its turn.
    await admin.settings({ balance: 600 });
    const done = await until(first, (v) => v.status === 'FULFILLED', 'FULFILLED');
    assert.ok(done.hold?.resumedAt, 'the view keeps the hold it came out of');
    await sleep(3 * ACCOUNT_CHECK_MS);
    assert.equal((await viewOf(second)).status, 'HELD', 'the second still waits');

    await admin.settings({ balance: 10_000 });
    await until(second, (v) => v.status === 'FULFILLED', 'FULFILLED');
    for (const ref of [first, second]) {
      const { providerRef } = await viewOf(ref);
      assert.equal((await stack.sandbox.sendsOf(providerRef!)).accepted, 1, `${ref} sent once`);
    }
    assert.deepEqual(
      (
        await eventually(
          () => eventsOf(first),
          (e) => e.includes('order.fulfilled'),
          'events',
        )
      ).slice(0, 2),
      ['order.held', 'order.submitted'],
    );
  });

  it('an order for an operator /v3/ping reports down is HELD (reason operator), never sent while down; /readyz and the metrics show the operator; up again, it is sent once', async () => {
    await admin.operators({ djezzy: 'down' });
    // The gate's /v3/ping reading may be this old (PROVIDER_ACCOUNT_CHECK_MS): the previous test's
    // sends read it a moment ago, with djezzy up.
    await sleep(2 * ACCOUNT_CHECK_MS);
    const ref = newRef('djezzy-down');
    await submit(ref);
    const held = await until(ref, (v) => v.status === 'HELD', 'HELD');
    assert.deepEqual([held.hold?.reason, held.hold?.operator], ['operator', 'djezzy']);
    await eventually(
      () => stack.api.request<Ready>('GET', '/readyz', { apiKey: null }),
      (r) =>
        r.body?.account?.operators?.djezzy === 'down' &&
        r.body.account.held?.operator === 1 &&
        r.body.account.held.byOperator?.djezzy === 1,
      '/readyz shows djezzy down and one order held for it',
    );
    await eventually(scrape, (t) => t.includes('topup_provider_operator_up{operator="djezzy"} 0'), 'gauge');
    await eventually(
      scrape,
      (t) => t.includes('topup_operator_orders_held{operator="djezzy"} 1'),
      'held gauge',
    );
    await sleep(3 * ACCOUNT_CHECK_MS);
    assert.equal((await stack.sandbox.sendsOf(held.providerRef!)).attempts, 0, 'nothing sent while down');

    await admin.operators({ djezzy: 'up' });
    await until(ref, (v) => v.status === 'FULFILLED', 'FULFILLED');
    assert.equal((await stack.sandbox.sendsOf(held.providerRef!)).accepted, 1);
  });

  it('an order still HELD at its maximum hold ends FAILED as NOT_SENT, nothing sent', async () => {
    timings = { maxHoldMs: 3_000 };
    await admin.settings({ balance: 0 });
    const ref = newRef('expired');
    await submit(ref);
    await until(ref, (v) => v.status === 'HELD', 'HELD');
    const view = await until(ref, (v) => v.status === 'FAILED', 'FAILED');
    assert.equal(view.failure?.code, 'NOT_SENT');
    assert.equal((await stack.sandbox.sendsOf(view.providerRef!)).accepted, 0);
    await eventually(
      () => eventsOf(ref),
      (e) => e.includes('order.failed'),
      'order.failed delivered',
    );
  });

  it('the balance gauge shows the account’s balance; internet and gift-card orders are HELD for it too, and sent once each when it covers them', async () => {
    await admin.settings({ balance: 123_456.78 });
    await eventually(scrape, (t) => t.includes('topup_provider_balance_dzd 123456.78'), 'the balance gauge');
    await admin.settings({ balance: 0 });
    await eventually(scrape, (t) => /topup_provider_balance_dzd 0\b/.test(t), 'the balance gauge at 0');

    const [internet, giftCard] = [newRef('internet'), newRef('gift')];
    await submit(internet, internetRequest(internet));
    await submit(giftCard, giftCardRequest(giftCard, 1));
    for (const ref of [internet, giftCard]) {
      const held = await until(ref, (v) => v.status === 'HELD', `${ref} HELD`);
      assert.equal(held.hold?.reason, 'balance');
    }
    const placedWhileHeld = (await stack.sandbox.report()).giftCardOrders.placed;
    await sleep(3 * ACCOUNT_CHECK_MS);
    assert.equal((await stack.sandbox.report()).giftCardOrders.placed, placedWhileHeld, 'nothing placed');

    await admin.settings({ balance: 100_000 });
    const sentInternet = await until(internet, (v) => v.status === 'FULFILLED', 'internet FULFILLED');
    assert.ok(sentInternet.result?.cardCode);
    assert.equal((await stack.sandbox.sendsOf(sentInternet.providerRef!)).accepted, 1, 'sent once');
    const placed = await until(giftCard, (v) => v.status === 'FULFILLED', 'gift card FULFILLED');
    assert.equal(placed.result?.cards?.length, 1);
    assert.equal((await stack.sandbox.report()).giftCardOrders.placed, placedWhileHeld + 1, 'placed once');
  });
});
