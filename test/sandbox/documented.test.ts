/**
 * The sandbox as the provider documents itself (shared/spec/provider-v3-documented.md): the
 * account's balance debited by sends and credited by refunds, the ledger, ping, plans, check-id,
 * lists, internet products and check-number, the categories catalog with stock, the gift-card
 * test types. Over real HTTP, through our own client where it has a method, so every answer is
 * parsed by the schemas the worker uses.
 */
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isProviderError, type ProviderClient, type ProviderError } from '../../src/provider';
import { startTestSandbox, testProvider, type TestSandbox } from '../helpers/orders';

const ADMIN = { 'x-admin-token': 'test-admin-token', 'content-type': 'application/json' };

describe('the sandbox speaks the documented v3', () => {
  let sandbox: TestSandbox;
  let provider: { client: ProviderClient; close(): Promise<void> };
  let client: ProviderClient;
  let n = 0;
  const ref = () => `doc-${process.pid}-${++n}`;
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${sandbox.url}${path}`, {
      method,
      headers: ADMIN,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    assert.ok(res.ok, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
    return ((await res.json()) as { data: unknown }).data;
  };
  const failure = async (call: () => Promise<unknown>): Promise<ProviderError> => {
    try {
      await call();
    } catch (err) {
      if (isProviderError(err)) return err;
      throw err;
    }
    assert.fail('expected a provider failure');
  };
  const until = async <T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> => {
    for (let i = 0; i < 100; i++) {
      const value = await read();
      if (done(value)) return value;
      await new Promise((r) => setTimeout(r, 50));
    }
    return read();
  };

  before(async () => {
    sandbox = await startTestSandbox();
    provider = testProvider(sandbox.url);
    client = provider.client;
  });
  beforeEach(() => admin('POST', '/admin/reset'));
  after(async () => {
    await provider.close();
    await sandbox.close();
  });

  it('a send debits the balance (amount × the plan’s cost), a scripted refund credits it back, and the ledger shows both with running balances', async () => {
    await admin('PATCH', '/admin/settings', { balance: 10_000 });
    await client.sendMobileTopup({
      plan_code: 'PREPAID_DJEZZY',
      MSSIDN: '0555123456',
      amount: 1_000,
      ref: ref(),
    });
    assert.equal((await client.getBalance()).balance, 9_020);
    await client.sendMobileTopup({
      plan_code: 'PREPAID_DJEZZY',
      MSSIDN: '0600000001',
      amount: 500,
      ref: ref(),
    });
    assert.equal((await client.getBalance()).balance, 9_020, 'the refunded top-up costs nothing');

    const { items, pagination } = await client.listTransactions({ pageSize: 2 });
    assert.deepEqual(pagination, { page: 1, pageSize: 2, totalPages: 3, totalResults: 5 });
    assert.deepEqual(
      items.map((t) => [t.type, t.amount, t.oldBalance, t.newBalance]),
      [
        ['REFUND-FLEXY', 490, 8_530, 9_020],
        ['FLEXY', 490, 9_020, 8_530],
      ],
    );
    const all = await client.listTransactions({ pageSize: 100 });
    assert.deepEqual(
      all.items.map((t) => t.type),
      ['REFUND-FLEXY', 'FLEXY', 'FLEXY', 'WITHDRAW', 'DEPOSIT'],
    );
  });

  it('a send the balance cannot cover is 403 INSUFFICIENT_BALANCE with required and available, and nothing is committed', async () => {
    await admin('PATCH', '/admin/settings', { balance: 100 });
    const sent = ref();
    const err = await failure(() =>
      client.sendMobileTopup({ plan_code: 'PREPAID_DJEZZY', MSSIDN: '0555123456', amount: 500, ref: sent }),
    );
    assert.equal(err.kind, 'insufficient_balance');
    assert.equal(err.status, 403);
    assert.equal(err.code, 'INSUFFICIENT_BALANCE');
    assert.deepEqual(err.balance, { required: 490, available: 100 });
    assert.equal((await failure(() => client.checkMobileTopup(sent))).kind, 'not_found');
    assert.equal((await client.getBalance()).balance, 100);

    // Topped up: the same ref goes through.
    await admin('PATCH', '/admin/settings', { balance: 1_000 });
    await client.sendMobileTopup({
      plan_code: 'PREPAID_DJEZZY',
      MSSIDN: '0555123456',
      amount: 500,
      ref: sent,
    });
  });

  it('a reused ref is 403 DUPLICATED_REF, which the client reads as "the provider already holds it"', async () => {
    const used = ref();
    const body = { plan_code: 'PREPAID_DJEZZY', MSSIDN: '0555123456', amount: 500, ref: used };
    await client.sendMobileTopup(body);
    const err = await failure(() => client.sendMobileTopup(body));
    assert.deepEqual([err.kind, err.status, err.code], ['duplicate_ref', 403, 'DUPLICATED_REF']);
  });

  it('check-id answers what check-ref answers, under the send’s topupId as _id', async () => {
    const sent = ref();
    const { topupId } = await client.sendMobileTopup({
      plan_code: 'PREPAID_MOBILIS',
      MSSIDN: '0661234567',
      amount: 200,
      ref: sent,
    });
    const byRef = await client.checkMobileTopup(sent);
    const byId = await client.checkMobileTopupById(topupId);
    assert.equal(byRef._id, topupId);
    assert.deepEqual({ ...byId, status: byRef.status }, byRef);
    const list = await client.listMobileTopups();
    assert.equal(list.items[0]?._id, topupId);
  });

  it('plans: dynamic ones with bounds, fixed ones with an amount; out of bounds, unknown or disabled is ERR_VALIDATION naming the field', async () => {
    const plans = await client.getMobilePlans();
    assert.ok(
      plans.dynamicPlans.some(
        (p) => p.code === 'PREPAID_MOBILIS' && p.min_amount === 40 && p.max_amount === 3_999,
      ),
    );
    assert.ok(plans.fixedPlans.some((p) => p.code === 'PIXX_500' && p.amount === 500));

    const refused = async (body: Record<string, unknown>, field: string) => {
      const res = await fetch(`${sandbox.url}/v3/mobile/send`, {
        method: 'POST',
        headers: { 'x-access-token': 'sandbox-key', 'content-type': 'application/json' },
        body: JSON.stringify({ MSSIDN: '0555123456', ref: ref(), ...body }),
      });
      const json = (await res.json()) as { error: { code: string; details: { field: string } } };
      assert.equal(res.status, 400);
      assert.equal(json.error.code, 'ERR_VALIDATION');
      assert.equal(json.error.details.field, field);
    };
    await refused({ plan_code: 'PREPAID_MOBILIS', amount: 4_000 }, 'body/amount');
    await refused({ plan_code: 'PREPAID_MOBILIS' }, 'body/amount');
    await refused({ plan_code: 'NO_SUCH_PLAN', amount: 100 }, 'body/plan_code');
    await refused({ plan_code: 'PREPAID_DJEZZY', amount: 500, MSSIDN: '0455123456' }, 'body/MSSIDN');
    await admin('PATCH', '/admin/plans/PREPAID_OOREDOO', { isEnabled: false });
    await refused({ plan_code: 'PREPAID_OOREDOO', amount: 500 }, 'body/plan_code');

    // A fixed plan ignores any amount and credits its own.
    const fixed = ref();
    await client.sendMobileTopup({ plan_code: 'PIXX_500', MSSIDN: '0661234567', ref: fixed });
    assert.equal((await client.checkMobileTopup(fixed)).topup_amount, 500);
  });

  it('ping reports each operator, settable through the admin surface', async () => {
    assert.deepEqual(await client.ping(), {
      api: 'ok',
      operators: { mobilis: 'up', ooredoo: 'up', djezzy: 'up', mobilisFixedPlans: 'up' },
    });
    await admin('PATCH', '/admin/operators', { djezzy: 'down' });
    assert.equal((await client.ping()).operators.djezzy, 'down');
    // The provider's own API reporting itself broken (health-check: `api: "ok" | "error"`).
    await admin('PATCH', '/admin/settings', { api: 'error' });
    assert.equal((await client.ping()).api, 'error');
  });

  it('an address outside the key’s IP whitelist is refused with 403 on every route, read by the client as access_denied (never an order’s fault); an empty whitelist allows all', async () => {
    const mobile = { plan_code: 'PREPAID_DJEZZY', MSSIDN: '0772123456', amount: 500, ref: ref() };
    await admin('PATCH', '/admin/settings', { allowedIps: ['192.0.2.1'] });
    for (const call of [
      () => client.sendMobileTopup(mobile),
      () => client.checkMobileTopup(mobile.ref),
      () => client.validateKey(),
      () => client.ping(),
    ]) {
      const err = await failure(call);
      assert.deepEqual([err.kind, err.status], ['access_denied', 403]);
    }
    assert.equal((await sandbox.sendsOf(mobile.ref)).accepted, 0, 'nothing sent');
    // Our own address (IPv4 or its IPv6-mapped form) in the whitelist: allowed, and validate shows it.
    await admin('PATCH', '/admin/settings', { allowedIps: ['127.0.0.1', '::1'] });
    assert.deepEqual((await client.validateKey()).apiKey.allowedips, ['127.0.0.1', '::1']);
    await client.sendMobileTopup(mobile);
    await admin('PATCH', '/admin/settings', { allowedIps: [] });
    assert.deepEqual((await client.validateKey()).apiKey.allowedips, []);
  });

  it('a READ-ONLY key validates with its scope, reads, and its sends are 403 (access_denied, nothing sent)', async () => {
    await admin('PATCH', '/admin/settings', { scope: 'READ-ONLY' });
    assert.equal((await client.validateKey()).apiKey.scope, 'READ-ONLY');
    await client.getBalance();
    const mobile = { plan_code: 'PREPAID_DJEZZY', MSSIDN: '0772123456', amount: 500, ref: ref() };
    const sent = await failure(() => client.sendMobileTopup(mobile));
    assert.deepEqual([sent.kind, sent.status, sent.code], ['access_denied', 403, 'READ_ONLY_KEY']);
    const placed = await failure(() =>
      client.placeGiftCardOrder({ productId: 'GOOGLE_PLAY', typeId: 'GOOGLE_PLAY_1000', quantity: 1 }),
    );
    assert.equal(placed.kind, 'access_denied');
    assert.equal((await sandbox.sendsOf(mobile.ref)).attempts, 0, 'nothing sent');
  });

  it('internet: products per type, check-number (4G answers 4GLTE, a bad number ERR_PHONE), an unavailable value is refused, QUEUED through an outcome change', async () => {
    const adsl = await client.getInternetProducts('ADSL');
    assert.equal('type' in adsl ? adsl.type : undefined, 'ADSL');
    assert.ok(adsl.products.some((p) => p.value === 1_000 && p.available));
    assert.equal((await client.checkInternetNumber('4G', '213472731602')).type, '4GLTE');
    const bad = await failure(() => client.checkInternetNumber('4G', '021123456'));
    assert.deepEqual([bad.kind, bad.code], ['refused', 'ERR_PHONE']);

    await admin('PATCH', '/admin/internet-products/4G/1000', { available: false });
    const out = await failure(() =>
      client.sendInternetTopup({ type: '4G', number: '213472731602', value: 1_000, ref: ref() }),
    );
    assert.deepEqual([out.kind, out.code], ['refused', 'OUT_OF_STOCK']);

    const queued = ref();
    const { topupId } = await client.sendInternetTopup({
      type: '4G',
      number: '213472731602',
      value: 500,
      ref: queued,
    });
    await sandbox.changeTopup(queued, { status: 'QUEUED' });
    const check = await client.checkInternetTopupById(topupId);
    assert.deepEqual(
      [check.status, check._id, check.topup_amount, check.number],
      ['QUEUED', topupId, 500, '213472731602'],
    );
    assert.equal((await client.listInternetTopups()).items[0]?._id, topupId);
  });

  it('gift cards: stock and price from checkProduct; an order debits price × quantity, takes stock, and one beyond stock is refused', async () => {
    await admin('PATCH', '/admin/gift-cards/GOOGLE_PLAY/types/GOOGLE_PLAY_500', { price: 600, quantity: 3 });
    await admin('PATCH', '/admin/settings', { balance: 5_000 });
    const { orderId } = await client.placeGiftCardOrder({
      productId: 'GOOGLE_PLAY',
      typeId: 'GOOGLE_PLAY_500',
      quantity: 2,
    });
    assert.equal((await client.getBalance()).balance, 3_800);
    const type = (await client.checkGiftCardProduct('GOOGLE_PLAY')).types.find(
      (t) => t.id === 'GOOGLE_PLAY_500',
    );
    assert.deepEqual([type?.price, type?.quantity], [600, 1]);
    const out = await failure(() =>
      client.placeGiftCardOrder({ productId: 'GOOGLE_PLAY', typeId: 'GOOGLE_PLAY_500', quantity: 2 }),
    );
    assert.deepEqual([out.kind, out.code], ['refused', 'OUT_OF_STOCK']);

    const done = await until(
      () => client.checkGiftCardOrder(orderId),
      (c) => c.status !== 'HANDLING',
    );
    assert.equal(done.status, 'FULFILLED');
    assert.deepEqual(
      [done.fulfilled_quantity, done.fulfilled_amount, done.price_per_card, done.cards?.length],
      [2, 1_200, 600, 2],
    );
    assert.equal((await client.listGiftCardOrders()).items[0]?._id, orderId);
  });

  it('TEST_PARTIAL ends PARTIALLY_FILLED with half the cards and the rest refunded; TEST_REFUND ends REFUNDED and credits all', async () => {
    await admin('PATCH', '/admin/settings', { balance: 1_000 });
    const partial = await client.placeGiftCardOrder({
      productId: 'STEAM',
      typeId: 'TEST_PARTIAL',
      quantity: 4,
    });
    const refunded = await client.placeGiftCardOrder({
      productId: 'STEAM',
      typeId: 'TEST_REFUND',
      quantity: 2,
    });
    assert.equal((await client.getBalance()).balance, 400);

    const p = await until(
      () => client.checkGiftCardOrder(partial.orderId),
      (c) => c.status !== 'HANDLING',
    );
    assert.deepEqual(
      [p.status, p.quantity, p.fulfilled_quantity, p.cards?.length],
      ['PARTIALLY_FILLED', 4, 2, 2],
    );
    const r = await until(
      () => client.checkGiftCardOrder(refunded.orderId),
      (c) => c.status !== 'HANDLING',
    );
    assert.deepEqual([r.status, r.fulfilled_quantity, r.cards], ['REFUNDED', 0, undefined]);
    assert.equal((await client.getBalance()).balance, 800);
  });

  it('a bad key is 401 INVALID_ACCESS_TOKEN (attemptsLeft), read by the client as access_denied; the fifth blocks the address', async () => {
    const bad = testProvider(sandbox.url, 'not-a-key');
    try {
      for (let i = 0; i < 4; i++) {
        const err = await failure(() => bad.client.getBalance());
        assert.deepEqual([err.kind, err.status, err.code], ['access_denied', 401, 'INVALID_ACCESS_TOKEN']);
      }
      const blocked = await failure(() => bad.client.getBalance());
      assert.deepEqual([blocked.kind, blocked.code], ['access_denied', 'IP_BLOCKED']);
      const good = await failure(() => client.getBalance());
      assert.equal(good.code, 'IP_BLOCKED', 'the address is blocked, whatever the key');
      assert.ok((good.retryAfterMs ?? 0) > 14 * 60_000);
    } finally {
      await bad.close();
    }
  });
});
