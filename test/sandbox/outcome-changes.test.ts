/**
 * The sandbox's "outcomes that change later" (docs/sandbox.md "Outcomes that change later"): an admin makes a
 * top-up (by ref) or a gift-card order (by orderId) change status after it was FULFILLED or while
 * it is HANDLING, at once or after a delay. Over real HTTP, with an injected clock so every
 * boundary is exact.
 */
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import {
  GiftCardOrderCheck,
  InternetCheck,
  MobileCheck,
  type PlaceOrderResult,
} from '../../src/provider/wire';
import { createSandboxApp } from '../../src/sandbox/server';

const ADMIN_TOKEN = 'admin';
const SANDBOX_KEY = 'sandbox-key';
/** Spec timings: HANDLING from 5 s, FULFILLED from 20 s after the send. */
const FULFILLED_FROM = 20_000;

interface Answer<T = unknown> {
  status: number;
  data: T;
  error?: { code: string; message: string };
}

describe('sandbox: outcomes that change later', () => {
  const start = 1_000_000;
  let clock = start;
  let server: Server;
  let base: string;
  let refCounter = 0;
  const newRef = () => `change-${process.pid}-${++refCounter}`;

  before(async () => {
    const { app } = createSandboxApp({ timeScale: 1, adminToken: ADMIN_TOKEN }, () => clock);
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  beforeEach(async () => {
    clock = start;
    assert.equal((await admin('POST', '/admin/reset')).status, 200);
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  async function call<T>(
    method: string,
    path: string,
    headers: Record<string, string>,
    json?: unknown,
  ): Promise<Answer<T>> {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { ...headers, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    const body = (await res.json()) as { data: T; error?: { code: string; message: string } };
    return { status: res.status, data: body.data, error: body.error };
  }
  const v3 = <T>(method: string, path: string, json?: unknown) =>
    call<T>(method, `/v3${path}`, { 'x-access-token': SANDBOX_KEY }, json);
  const admin = <T>(method: string, path: string, json?: unknown) =>
    call<T>(method, path, { 'x-admin-token': ADMIN_TOKEN }, json);

  async function mobileAt(ref: string, elapsedMs: number): Promise<MobileCheck> {
    clock = start + elapsedMs;
    return MobileCheck.parse((await v3('GET', `/mobile/check-ref/${ref}`)).data);
  }
  async function sendMobile(msisdn = '0555123456'): Promise<string> {
    const ref = newRef();
    const sent = await v3('POST', '/mobile/send', {
      plan_code: 'PREPAID_DJEZZY',
      MSSIDN: msisdn,
      amount: 500,
      ref,
    });
    assert.equal(sent.status, 200);
    return ref;
  }

  it('a FULFILLED mobile top-up reversed later: FULFILLED until the change is due, then REFUNDED with a message', async () => {
    const ref = await sendMobile();
    clock = start + FULFILLED_FROM;
    const scheduled = await admin<{ id: string; status: string; from: string }>(
      'POST',
      `/admin/topups/${ref}/outcome`,
      { status: 'REFUNDED', afterMs: 60_000 },
    );
    assert.equal(scheduled.status, 201);
    assert.equal(scheduled.data.from, new Date(start + FULFILLED_FROM + 60_000).toISOString());

    assert.equal((await mobileAt(ref, FULFILLED_FROM + 59_999)).status, 'FULFILLED');
    const reversed = await mobileAt(ref, FULFILLED_FROM + 60_000);
    assert.equal(reversed.status, 'REFUNDED');
    assert.ok(reversed.refund_message, 'a reversed top-up carries a refund_message');
    assert.equal(reversed.MSSIDN, '0555123456', 'the top-up itself is unchanged');
  });

  it('a top-up held in HANDLING past the normal timeline, then FULFILLED at a given time', async () => {
    const ref = await sendMobile();
    clock = start + 6_000;
    await admin('POST', `/admin/topups/${ref}/outcome`, { status: 'HANDLING' });
    await admin('POST', `/admin/topups/${ref}/outcome`, { status: 'FULFILLED', afterMs: 3_600_000 });

    assert.equal((await mobileAt(ref, FULFILLED_FROM + 1)).status, 'HANDLING');
    assert.equal((await mobileAt(ref, 6_000 + 3_599_999)).status, 'HANDLING');
    assert.equal((await mobileAt(ref, 6_000 + 3_600_000)).status, 'FULFILLED');
  });

  it('a change named before its ref is sent applies from the send on; until then the ref is unknown (404)', async () => {
    const ref = newRef();
    await admin('POST', `/admin/topups/${ref}/outcome`, { status: 'HANDLING' });
    assert.equal((await v3('GET', `/mobile/check-ref/${ref}`)).status, 404);

    await v3('POST', '/mobile/send', { plan_code: 'PREPAID_DJEZZY', MSSIDN: '0555123456', amount: 500, ref });
    assert.equal((await mobileAt(ref, 0)).status, 'HANDLING');
    assert.equal((await mobileAt(ref, FULFILLED_FROM * 10)).status, 'HANDLING');
  });

  it('a scripted outcome can change too: the UNKNOWN_ERROR number becomes REFUNDED with the message given', async () => {
    const ref = await sendMobile('0600000003');
    await admin('POST', `/admin/topups/${ref}/outcome`, {
      status: 'REFUNDED',
      refund_message: 'reversed by hand',
    });
    const check = await mobileAt(ref, 1);
    assert.equal(check.status, 'REFUNDED');
    assert.equal(check.refund_message, 'reversed by hand');
  });

  it('an internet top-up: its card code shows only while the changed status is FULFILLED', async () => {
    const ref = newRef();
    await v3('POST', '/internet/send', { type: 'ADSL', number: '023123456', value: 1000, ref });
    await admin('POST', `/admin/topups/${ref}/outcome`, { status: 'HANDLING' });
    await admin('POST', `/admin/topups/${ref}/outcome`, { status: 'FULFILLED', afterMs: 100_000 });
    await admin('POST', `/admin/topups/${ref}/outcome`, { status: 'REFUNDED', afterMs: 200_000 });
    const at = async (elapsedMs: number) => {
      clock = start + elapsedMs;
      return InternetCheck.parse((await v3('GET', `/internet/check-ref/${ref}`)).data);
    };

    const held = await at(FULFILLED_FROM);
    assert.equal(held.status, 'HANDLING');
    assert.equal(held.card_code, undefined);
    const fulfilled = await at(100_000);
    assert.equal(fulfilled.status, 'FULFILLED');
    assert.match(fulfilled.card_code ?? '', /^\d+$/);
    const refunded = await at(200_000);
    assert.equal(refunded.status, 'REFUNDED');
    assert.equal(refunded.card_code, undefined);
  });

  it('a gift-card order, found by its orderId in the admin list, reversed after FULFILLED loses its cards', async () => {
    const placed = await v3<PlaceOrderResult>('POST', '/gift-cards/placeOrder', {
      productId: 'GOOGLE_PLAY',
      typeId: 'GOOGLE_PLAY_1000',
      quantity: 2,
    });
    const { orderId } = placed.data;
    const listed = await admin<{ orders: { orderId: string; quantity: number; placedAt: string }[] }>(
      'GET',
      '/admin/gift-card-orders',
    );
    assert.deepEqual(
      listed.data.orders.map(({ orderId: id, quantity, placedAt }) => ({ id, quantity, placedAt })),
      [{ id: orderId, quantity: 2, placedAt: new Date(start).toISOString() }],
    );
    await admin('POST', `/admin/gift-card-orders/${orderId}/outcome`, {
      status: 'REFUNDED',
      afterMs: 30_000,
    });
    const at = async (elapsedMs: number) => {
      clock = start + elapsedMs;
      return GiftCardOrderCheck.parse((await v3('GET', `/gift-cards/checkOrder/${orderId}`)).data);
    };

    assert.equal((await at(FULFILLED_FROM)).cards?.length, 2);
    const reversed = await at(30_000);
    assert.equal(reversed.status, 'REFUNDED');
    assert.equal(reversed.cards, undefined);
  });

  it('changes are listed, refused for an unknown order (404) or a bad body (400 naming the field), and forgotten on reset', async () => {
    const ref = await sendMobile();
    await admin('POST', `/admin/topups/${ref}/outcome`, { status: 'REFUNDED', afterMs: 5 });
    const listed = await admin<{ changes: { target: unknown; status: string }[] }>(
      'GET',
      '/admin/outcome-changes',
    );
    assert.deepEqual(
      listed.data.changes.map(({ target, status }) => ({ target, status })),
      [{ target: { ref }, status: 'REFUNDED' }],
    );

    const unknownOrder = await admin('POST', '/admin/gift-card-orders/nope/outcome', { status: 'REFUNDED' });
    assert.equal(unknownOrder.status, 404);
    const bad = await admin('POST', `/admin/topups/${ref}/outcome`, { status: 'DONE', afterMs: -1 });
    assert.equal(bad.status, 400);
    assert.match(bad.error?.message ?? '', /status: .*; afterMs: /);
    const noToken = await call('POST', `/admin/topups/${ref}/outcome`, {}, { status: 'REFUNDED' });
    assert.equal(noToken.status, 403);

    await admin('POST', '/admin/reset');
    assert.deepEqual((await admin('GET', '/admin/outcome-changes')).data, { changes: [] });
  });
});
