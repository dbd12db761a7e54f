/**
 * Conformance of the provider sandbox with the spec (shared/spec/provider-api-v3.md) and the design's
 * "Provider sandbox contract", over real HTTP: every /v3 endpoint, every row of spec section 3, the
 * envelope, authentication, body validation, refs, every fault knob, the admin surface and
 * behaviour under concurrent load.
 *
 * timeScale 0.01 turns the spec's 5 s PENDING and 15 s HANDLING into 50 ms and 150 ms.
 */
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import {
  Catalog,
  GiftCardOrderCheck,
  InternetCheck,
  KeyInfo,
  MobileCheck,
  PlaceOrderResult,
  ProductDetails,
  SendResult,
} from '../../src/provider/wire';
import { createSandboxApp, startSandbox } from '../../src/sandbox/server';
import { SandboxState } from '../../src/sandbox/state';

const ADMIN_TOKEN = 't';
const SANDBOX_KEY = 'sandbox-key';
const PRODUCTION_KEY = 'production-key';
const DISABLED_KEY = 'disabled-key';
// 0.05: PENDING lasts 250 ms, long enough for "right after the send" on a loaded 2-core machine
// (exact boundaries are tested with an injected clock).
const TIME_SCALE = 0.05;
/** When PENDING ends and FULFILLED begins at TIME_SCALE, in ms after the send. */
const HANDLING_FROM = 5_000 * TIME_SCALE;
const FULFILLED_FROM = 20_000 * TIME_SCALE;

type Sandbox = Awaited<ReturnType<typeof startSandbox>>;

interface Envelope {
  success: boolean;
  data: unknown;
  error?: { code: string; message: string; details?: Record<string, unknown> };
  meta: { timestamp: string };
  requestId: string;
  totalProducts?: number;
  totalCategories?: number;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Envelope;
}

interface CallOptions {
  /** The X-Access-Token; `null` sends none. Default: the sandbox key. */
  key?: string | null;
  /** Sent as JSON with Content-Type application/json. */
  json?: unknown;
  /** Sent as is (with `contentType`, if any). */
  raw?: string;
  contentType?: string;
  headers?: Record<string, string>;
  /** Client-side timeout for the response headers (hang tests). */
  headersTimeout?: number;
}

let sandbox: Sandbox;
let refCounter = 0;
/** A fresh, valid ref per call, so tests never collide. */
const newRef = (prefix = 'ref') => `${prefix}-${process.pid}-${++refCounter}`;

async function call(
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  options: CallOptions = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  const key = options.key === undefined ? SANDBOX_KEY : options.key;
  if (key !== null) headers['x-access-token'] = key;
  let body = options.raw;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] = 'application/json';
  }
  if (options.contentType !== undefined) headers['content-type'] = options.contentType;
  Object.assign(headers, options.headers);
  const res = await request(new URL(path, sandbox.url), {
    method,
    headers,
    body,
    headersTimeout: options.headersTimeout,
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: JSON.parse(text) as Envelope };
}

const admin = (method: 'GET' | 'POST' | 'DELETE', path: string, json?: unknown) =>
  call(method, path, { key: null, json, headers: { 'x-admin-token': ADMIN_TOKEN } });

const mobileBody = (ref: string, MSSIDN = '0555123456') => ({
  plan_code: 'PREPAID_DJEZZY',
  MSSIDN,
  amount: 500,
  ref,
});
const internetBody = (ref: string, type = 'ADSL', number = type === '4G' ? '213472731602' : '021123456') => ({
  type,
  number,
  value: 1000,
  ref,
});
const giftCardBody = (quantity = 1) => ({ productId: 'GOOGLE_PLAY', typeId: 'GOOGLE_PLAY_1000', quantity });

const sendMobile = (ref: string, MSSIDN?: string) =>
  call('POST', '/v3/mobile/send', { json: mobileBody(ref, MSSIDN) });
const checkMobile = async (ref: string) =>
  MobileCheck.parse((await call('GET', `/v3/mobile/check-ref/${ref}`)).body.data);

async function sendCounts(ref: string) {
  const { body } = await admin('GET', `/admin/sends/${ref}`);
  return body.data as { ref: string; accepted: number; attempts: number };
}

/** Resolves `ms` after `start` (a Date.now() value). */
const sleepUntil = (start: number, ms: number) => sleep(Math.max(0, start + ms - Date.now()));

/**
 * Checks an order right after its send, in the middle of HANDLING and twice once FULFILLED. `sentAt`
 * is Date.now() just before the send; the samples sit 60 ms inside each window (50-200 ms is HANDLING).
 */
async function alongTheTimeline<T>(sentAt: number, check: () => Promise<T>) {
  const pending = await check();
  await sleepUntil(sentAt, HANDLING_FROM + 60);
  const handling = await check();
  await sleepUntil(sentAt, FULFILLED_FROM + 60);
  const fulfilled = await check();
  return { pending, handling, fulfilled, again: await check() };
}

/** Asserts a failure envelope with `status` and `code`, and that the message mentions `field`. */
function assertFailure(answer: Answer, status: number, code: string, field?: string) {
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  assert.equal(answer.body.success, false);
  assert.equal(answer.body.error?.code, code);
  assert.equal(typeof answer.body.error?.message, 'string');
  if (field === undefined) return;
  // The field is named in the message, or (ERR_VALIDATION) in `details.field` as the docs show it.
  const message = answer.body.error?.message ?? '';
  const named = answer.body.error?.details?.field;
  assert.ok(
    new RegExp(`(^|; |/)${field}(: | )`).test(message) ||
      (typeof named === 'string' && named.endsWith(`/${field}`)),
    `${field} is not named in ${JSON.stringify(answer.body.error)}`,
  );
}

/** The undici error code a request failed with (e.g. UND_ERR_SOCKET), or 'answered'. */
async function transportFailure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'answered';
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}

describe('provider sandbox', { timeout: 60_000 }, () => {
  before(async () => {
    sandbox = await startSandbox({ port: 0, timeScale: TIME_SCALE, adminToken: ADMIN_TOKEN });
  });
  beforeEach(async () => {
    assert.equal((await admin('POST', '/admin/reset')).status, 200);
  });
  after(async () => {
    await sandbox.close();
  });

  describe('envelope (spec 2.1)', () => {
    it('a success has success:true, data, an ISO-8601 meta.timestamp and a requestId equal to X-Request-Id', async () => {
      const { status, headers, body } = await call('GET', '/v3/validate');

      assert.equal(status, 200);
      assert.equal(body.success, true);
      assert.equal(typeof body.data, 'object');
      assert.equal(new Date(body.meta.timestamp).toISOString(), body.meta.timestamp);
      assert.ok(Math.abs(Date.parse(body.meta.timestamp) - Date.now()) < 5_000);
      assert.equal(typeof body.requestId, 'string');
      assert.equal(headers['x-request-id'], body.requestId);
    });

    it('a failure has success:false, error {code, message}, no data and no meta, and a requestId equal to X-Request-Id', async () => {
      const answer = await call('GET', '/v3/mobile/check-ref/never-sent');

      assertFailure(answer, 404, 'NOT_FOUND');
      assert.match(answer.body.error?.message ?? '', /Top-up with reference 'never-sent' not found/);
      assert.equal(answer.body.meta, undefined);
      assert.equal(answer.body.data, undefined);
      assert.equal(answer.headers['x-request-id'], answer.body.requestId);
    });

    it('request ids are unique across 50 concurrent requests, successes and failures alike', async () => {
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          call('GET', '/v3/validate', { key: i % 2 ? SANDBOX_KEY : null }),
        ),
      );

      assert.equal(new Set(answers.map((a) => a.body.requestId)).size, 50);
    });
  });

  describe('authentication (spec 5)', () => {
    const everyRoute: [method: 'GET' | 'POST', path: string, json?: unknown][] = [
      ['GET', '/v3/validate'],
      ['POST', '/v3/mobile/send', mobileBody('auth-ref')],
      ['GET', '/v3/mobile/check-ref/auth-ref'],
      ['POST', '/v3/internet/send', internetBody('auth-ref')],
      ['GET', '/v3/internet/check-ref/auth-ref'],
      ['GET', '/v3/gift-cards/catalog'],
      ['POST', '/v3/gift-cards/placeOrder', giftCardBody()],
      ['GET', '/v3/gift-cards/checkOrder/000000000000000000000000'],
    ];

    it('validate with the sandbox key: SANDBOX, READ-WRITE, enabled, and a username', async () => {
      const info = KeyInfo.parse((await call('GET', '/v3/validate')).body.data);

      assert.deepEqual(info.apiKey, {
        type: 'SANDBOX',
        scope: 'READ-WRITE',
        isEnabled: true,
        allowedips: [],
      });
      assert.match(info.username, /^\+\d+$/);
    });

    it('validate with the production key answers type PRODUCTION, enabled', async () => {
      const info = KeyInfo.parse((await call('GET', '/v3/validate', { key: PRODUCTION_KEY })).body.data);

      assert.equal(info.apiKey.type, 'PRODUCTION');
      assert.equal(info.apiKey.isEnabled, true);
    });

    it('every route without X-Access-Token is 401 MISSING_ACCESS_TOKEN', async () => {
      for (const [method, path, json] of everyRoute) {
        assertFailure(await call(method, path, { key: null, json }), 401, 'MISSING_ACCESS_TOKEN');
      }
    });

    it('every route with an unknown key is 401 INVALID_ACCESS_TOKEN with attemptsLeft (a good key in between resets the count)', async () => {
      for (const [method, path, json] of everyRoute) {
        const answer = await call(method, path, { key: 'no-such-key', json });
        assertFailure(answer, 401, 'INVALID_ACCESS_TOKEN');
        assert.deepEqual(answer.body.error?.details, { attemptsLeft: 4 });
        assert.equal((await call('GET', '/v3/validate')).status, 200);
      }
    });

    it('five unknown keys in a row block the address: IP_BLOCKED for every key, until the block ends (here: a reset)', async () => {
      for (const left of [4, 3, 2, 1]) {
        const answer = await call('GET', '/v3/validate', { key: 'no-such-key' });
        assert.deepEqual(answer.body.error?.details, { attemptsLeft: left });
      }
      assertFailure(await call('GET', '/v3/validate', { key: 'no-such-key' }), 403, 'IP_BLOCKED');
      const blocked = await call('GET', '/v3/validate');
      assertFailure(blocked, 403, 'IP_BLOCKED');
      assert.ok(Number(blocked.headers['retry-after']) > 14 * 60, 'blocked for about 15 minutes');
      await admin('POST', '/admin/reset');
      assert.equal((await call('GET', '/v3/validate')).status, 200);
    });

    it('the disabled key validates with isEnabled:false, and every other route answers it 403 KEY_DISABLED', async () => {
      const [validate, ...others] = everyRoute;
      assert.ok(validate);
      const info = KeyInfo.parse((await call(validate[0], validate[1], { key: DISABLED_KEY })).body.data);
      assert.equal(info.apiKey.isEnabled, false);

      for (const [method, path, json] of others) {
        assertFailure(await call(method, path, { key: DISABLED_KEY, json }), 403, 'KEY_DISABLED');
      }
    });

    it('the production key: every send is 403 FORBIDDEN, checks find nothing (404), the catalog reads', async () => {
      const ref = newRef();
      assert.equal((await sendMobile(ref)).status, 200);
      const { orderId } = PlaceOrderResult.parse(
        (await call('POST', '/v3/gift-cards/placeOrder', { json: giftCardBody() })).body.data,
      );
      const key = PRODUCTION_KEY;
      const productionRef = newRef();

      assertFailure(
        await call('POST', '/v3/mobile/send', { key, json: mobileBody(productionRef) }),
        403,
        'FORBIDDEN',
      );
      assertFailure(
        await call('POST', '/v3/internet/send', { key, json: internetBody(newRef()) }),
        403,
        'FORBIDDEN',
      );
      assertFailure(
        await call('POST', '/v3/gift-cards/placeOrder', { key, json: giftCardBody() }),
        403,
        'FORBIDDEN',
      );
      assertFailure(await call('GET', `/v3/mobile/check-ref/${ref}`, { key }), 404, 'NOT_FOUND');
      assertFailure(await call('GET', `/v3/gift-cards/checkOrder/${orderId}`, { key }), 404, 'NOT_FOUND');
      assert.equal((await call('GET', '/v3/gift-cards/catalog', { key })).status, 200);
      assert.deepEqual(await sendCounts(productionRef), { ref: productionRef, accepted: 0, attempts: 0 });
    });
  });

  describe('mobile top-ups (spec 3, 4.2, 4.3)', () => {
    it('send answers a 24-character lowercase hex topupId and echoes the ref as topupRef', async () => {
      const ref = newRef();

      const answer = await sendMobile(ref);

      assert.equal(answer.status, 200);
      const sent = SendResult.parse(answer.body.data);
      assert.match(sent.topupId, /^[0-9a-f]{24}$/);
      assert.equal(sent.topupRef, ref);
    });

    it('a normal number is PENDING right after the send, HANDLING after 5 s×scale, FULFILLED after 20 s×scale', async () => {
      const ref = newRef();
      const sentAt = Date.now();
      const { topupId } = SendResult.parse((await sendMobile(ref)).body.data);

      const { pending, handling, fulfilled } = await alongTheTimeline(sentAt, () => checkMobile(ref));

      assert.equal(pending.status, 'PENDING');
      assert.equal(handling.status, 'HANDLING');
      assert.deepEqual(fulfilled, {
        _id: topupId,
        ref,
        status: 'FULFILLED',
        plan_code: 'PREPAID_DJEZZY',
        MSSIDN: '0555123456',
        topup_amount: 500,
        balance_amount: 490,
        created_at: fulfilled.created_at,
      });
      assert.ok(Math.abs(Date.parse(String(fulfilled.created_at)) - sentAt) < 1_000);
    });

    it('0600000001 is REFUNDED at once, with a refund_message and nothing debited', async () => {
      const ref = newRef();
      await sendMobile(ref, '0600000001');

      const check = await checkMobile(ref);

      assert.equal(check.status, 'REFUNDED');
      assert.ok(check.refund_message && check.refund_message.length > 0);
      assert.equal(check.balance_amount, 0);
      assert.equal(check.MSSIDN, '0600000001');
      assert.equal(check.topup_amount, 500);
    });

    it('0600000002 is REFUNDED at once, with a refund_message and the documented suggested_offers', async () => {
      const ref = newRef();
      await sendMobile(ref, '0600000002');

      const check = await checkMobile(ref);

      assert.equal(check.status, 'REFUNDED');
      assert.equal(typeof check.refund_message, 'string');
      assert.deepEqual(check.suggested_offers, [
        { typename: 'Facture', plan_code: 'FACTURE_DJEZZY', amount: 500 },
      ]);
      assert.equal(check.balance_amount, 0);
    });

    it('0600000003 is UNKNOWN_ERROR at once and still is after the normal timeline', async () => {
      const ref = newRef();
      const sentAt = Date.now();
      await sendMobile(ref, '0600000003');

      const samples = await alongTheTimeline(sentAt, () => checkMobile(ref));

      assert.deepEqual(
        Object.values(samples).map((check) => check.status),
        ['UNKNOWN_ERROR', 'UNKNOWN_ERROR', 'UNKNOWN_ERROR', 'UNKNOWN_ERROR'],
      );
    });

    it('with an injected clock at timeScale 1, PENDING ends exactly at 5 s and HANDLING exactly at 20 s', async () => {
      let clock = 1_000_000;
      const { app } = createSandboxApp({ timeScale: 1 }, () => clock);
      const server = await listen(createServer(app));
      try {
        const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        const headers = { 'x-access-token': SANDBOX_KEY, 'content-type': 'application/json' };
        await (
          await fetch(`${base}/v3/mobile/send`, {
            method: 'POST',
            headers,
            body: JSON.stringify(mobileBody('clock')),
          })
        ).text();
        const statusAt = async (elapsedMs: number) => {
          clock = 1_000_000 + elapsedMs;
          const res = await fetch(`${base}/v3/mobile/check-ref/clock`, { headers });
          return MobileCheck.parse(((await res.json()) as Envelope).data).status;
        };

        assert.deepEqual(
          [
            await statusAt(0),
            await statusAt(4_999),
            await statusAt(5_000),
            await statusAt(19_999),
            await statusAt(20_000),
          ],
          ['PENDING', 'PENDING', 'HANDLING', 'HANDLING', 'FULFILLED'],
        );
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    });
  });

  describe('internet top-ups (spec 4.4, 4.5)', () => {
    for (const type of ['ADSL', '4G']) {
      it(`${type}: HANDLING (no PENDING, as documented), then FULFILLED with a digits card_code and a num_trans, both stable`, async () => {
        const ref = newRef();
        const sentAt = Date.now();
        const sent = await call('POST', '/v3/internet/send', { json: internetBody(ref, type) });
        const check = async () =>
          InternetCheck.parse((await call('GET', `/v3/internet/check-ref/${ref}`)).body.data);

        const { pending, handling, fulfilled, again } = await alongTheTimeline(sentAt, check);

        assert.equal(sent.status, 200);
        assert.equal(SendResult.parse(sent.body.data).topupRef, ref);
        assert.equal(pending.status, 'HANDLING');
        assert.equal(pending.card_code, undefined);
        assert.equal(handling.status, 'HANDLING');
        assert.equal(handling.card_code, undefined);
        assert.equal(fulfilled.status, 'FULFILLED');
        assert.match(fulfilled.card_code ?? '', /^\d{16}$/);
        assert.equal(typeof fulfilled.num_trans, 'string');
        assert.equal(again.card_code, fulfilled.card_code);
        assert.equal(again.num_trans, fulfilled.num_trans);
      });
    }

    it('takes the documented line numbers: ADSL 0 and 8 digits, 4G 213 and 9 digits', async () => {
      for (const [type, number] of [
        ['ADSL', '021123456'],
        ['ADSL', '036362608'],
        ['4G', '213472731602'],
      ] as const) {
        const answer = await call('POST', '/v3/internet/send', {
          json: internetBody(newRef(), type, number),
        });
        assert.equal(answer.status, 200, `${type} ${number}: ${JSON.stringify(answer.body)}`);
      }
    });

    it('refuses a line number of the wrong form: ERR_VALIDATION when it is no line number at all, ERR_PHONE {number, type, reason} when it is not its type’s', async () => {
      for (const number of ['02112345', '02112345678', '21123456', '+21321123456', '02112345a']) {
        const answer = await call('POST', '/v3/internet/send', {
          json: internetBody(newRef(), 'ADSL', number),
        });
        assertFailure(answer, 400, 'ERR_VALIDATION', 'number');
      }
      for (const [type, number] of [
        ['ADSL', '213472731602'],
        ['4G', '021123456'],
      ] as const) {
        const answer = await call('POST', '/v3/internet/send', {
          json: internetBody(newRef(), type, number),
        });
        assertFailure(answer, 400, 'ERR_PHONE');
        assert.deepEqual(Object.keys(answer.body.error?.details ?? {}).sort(), ['number', 'reason', 'type']);
      }
    });

    it('an unknown line type is 400 naming type', async () => {
      assertFailure(
        await call('POST', '/v3/internet/send', { json: internetBody(newRef(), 'DSL') }),
        400,
        'ERR_VALIDATION',
        'type',
      );
    });
  });

  describe('gift cards (spec 4.6 - 4.8)', () => {
    it('the catalog is categories of products, totals beside data; checkProduct lists each product’s types with price and stock', async () => {
      const answer = await call('GET', '/v3/gift-cards/catalog');
      const catalog = Catalog.parse(answer.body.data);
      const products = catalog.categories.flatMap((c) => c.products);

      assert.ok(catalog.categories.length >= 2);
      assert.ok(products.length >= 3);
      assert.equal(answer.body.totalProducts, products.length);
      assert.equal(answer.body.totalCategories, catalog.categories.length);
      for (const product of products) {
        const details = ProductDetails.parse(
          (await call('GET', `/v3/gift-cards/checkProduct/${product.id}`)).body.data,
        );
        assert.equal(details.productId, product.id);
        assert.ok(details.types.length >= 2, product.id);
        assert.ok(
          details.types.some((t) => t.id === 'TEST_REFUND') &&
            details.types.some((t) => t.id === 'TEST_PARTIAL'),
        );
      }
      const googlePlay = ProductDetails.parse(
        (await call('GET', '/v3/gift-cards/checkProduct/GOOGLE_PLAY')).body.data,
      );
      const type = googlePlay.types.find((t) => t.id === 'GOOGLE_PLAY_1000');
      assert.ok(type && type.price > 0 && type.quantity > 0);
      assertFailure(await call('GET', '/v3/gift-cards/checkProduct/NOPE'), 404, 'NOT_FOUND');
    });

    it('an order for 3 follows the timeline and, FULFILLED, has 3 distinct cards of digits with serials, stable', async () => {
      const sentAt = Date.now();
      const placed = await call('POST', '/v3/gift-cards/placeOrder', { json: giftCardBody(3) });
      const { orderId } = PlaceOrderResult.parse(placed.body.data);
      const check = async () =>
        GiftCardOrderCheck.parse((await call('GET', `/v3/gift-cards/checkOrder/${orderId}`)).body.data);

      const { pending, handling, fulfilled, again } = await alongTheTimeline(sentAt, check);

      assert.equal(placed.status, 200);
      assert.equal(pending.status, 'HANDLING');
      assert.equal(pending.cards, undefined);
      assert.equal(handling.status, 'HANDLING');
      assert.equal(handling.cards, undefined);
      assert.equal(fulfilled.status, 'FULFILLED');
      assert.equal(fulfilled.cards?.length, 3);
      for (const card of fulfilled.cards ?? []) {
        assert.match(card.value, /^\d+$/);
        assert.ok(card.serial.length > 0);
      }
      assert.equal(new Set(fulfilled.cards?.map((c) => c.value)).size, 3);
      assert.deepEqual(again.cards, fulfilled.cards);
    });

    it('placeOrder refuses an unknown productId, an unknown typeId and a bad quantity with 400 naming the field', async () => {
      const place = (json: unknown) => call('POST', '/v3/gift-cards/placeOrder', { json });

      assertFailure(
        await place({ ...giftCardBody(), productId: 'NOPE' }),
        400,
        'ERR_VALIDATION',
        'productId',
      );
      assertFailure(
        await place({ ...giftCardBody(), typeId: 'PSN_10_USD' }),
        400,
        'ERR_VALIDATION',
        'typeId',
      );
      assertFailure(await place(giftCardBody(0)), 400, 'ERR_VALIDATION', 'quantity');
      assertFailure(await place(giftCardBody(1.5)), 400, 'ERR_VALIDATION', 'quantity');
      assert.equal(
        ((await admin('GET', '/admin/sends')).body.data as { giftCardOrders: { placed: number } })
          .giftCardOrders.placed,
        0,
      );
    });

    it('checkOrder of an unknown orderId is 404 NOT_FOUND', async () => {
      assertFailure(
        await call('GET', '/v3/gift-cards/checkOrder/ffffffffffffffffffffffff'),
        404,
        'NOT_FOUND',
      );
    });
  });

  describe('request validation: 4xx naming the field, never a 500', () => {
    const send = (options: CallOptions) => call('POST', '/v3/mobile/send', options);

    it('a missing field is 400 VALIDATION_ERROR naming it', async () => {
      const { amount: _omitted, ...body } = mobileBody(newRef());
      assertFailure(await send({ json: body }), 400, 'ERR_VALIDATION', 'amount');
    });

    it('a field of the wrong type is 400 naming it', async () => {
      assertFailure(
        await send({ json: { ...mobileBody(newRef()), amount: '500' } }),
        400,
        'ERR_VALIDATION',
        'amount',
      );
    });

    it('a malformed MSSIDN is 400 "MSSIDN: expected a local number…"', async () => {
      const answer = await send({ json: mobileBody(newRef(), '+213555123456') });
      assertFailure(answer, 400, 'ERR_VALIDATION', 'MSSIDN');
      assert.match(answer.body.error?.message ?? '', /MSSIDN: expected a local number/);
    });

    it('a mobile number keeps its 10 digits: a 9-digit MSSIDN is 400', async () => {
      assertFailure(await send({ json: mobileBody(newRef(), '055512345') }), 400, 'ERR_VALIDATION', 'MSSIDN');
    });

    it('an extra field is 400 naming it', async () => {
      assertFailure(
        await send({ json: { ...mobileBody(newRef()), bonus: 1 } }),
        400,
        'ERR_VALIDATION',
        'bonus',
      );
    });

    it('several bad fields are all named', async () => {
      const answer = await send({ json: { plan_code: 'X!', MSSIDN: '1', amount: -1, ref: 'a b' } });
      for (const field of ['plan_code', 'MSSIDN', 'amount', 'ref'])
        assertFailure(answer, 400, 'ERR_VALIDATION', field);
    });

    it('broken JSON is 400 VALIDATION_ERROR (and the body is not echoed)', async () => {
      const answer = await send({ raw: '{"plan_code": "PREPAID_secret', contentType: 'application/json' });
      assertFailure(answer, 400, 'ERR_VALIDATION', 'body');
      assert.doesNotMatch(answer.body.error?.message ?? '', /secret/);
    });

    it('a JSON body that is not an object, or an empty body, is 400', async () => {
      assertFailure(
        await send({ raw: '[]', contentType: 'application/json' }),
        400,
        'ERR_VALIDATION',
        'body',
      );
      assertFailure(
        await send({ raw: 'null', contentType: 'application/json' }),
        400,
        'ERR_VALIDATION',
        'body',
      );
      // An empty body reads as {} (body-parser), so every required field is named.
      assertFailure(await send({ contentType: 'application/json' }), 400, 'ERR_VALIDATION', 'plan_code');
    });

    it('a POST without Content-Type application/json is 415 UNSUPPORTED_MEDIA_TYPE', async () => {
      const json = JSON.stringify(mobileBody(newRef()));
      assertFailure(await send({ raw: json, contentType: 'text/plain' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
      assertFailure(await send({ raw: json }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    });

    it('a huge body is 413', async () => {
      const answer = await send({
        raw: JSON.stringify({ pad: 'x'.repeat(200_000) }),
        contentType: 'application/json',
      });
      assert.equal(answer.status, 413);
      assert.equal(answer.body.success, false);
    });

    it('a malformed percent-encoding or an invalid ref in the path is 400, not 500', async () => {
      assert.equal((await call('GET', '/v3/mobile/check-ref/%E0%A4%A')).status, 400);
      assertFailure(
        await call('GET', `/v3/mobile/check-ref/${'r'.repeat(65)}`),
        400,
        'ERR_VALIDATION',
        'ref',
      );
    });

    it('rejected bodies create nothing and count no attempt', async () => {
      const ref = newRef();
      await send({ json: { ...mobileBody(ref), amount: 'x' } });

      assertFailure(await call('GET', `/v3/mobile/check-ref/${ref}`), 404, 'NOT_FOUND');
      assert.deepEqual(await sendCounts(ref), { ref, accepted: 0, attempts: 0 });
    });
  });

  describe('refs and 404s', () => {
    it('a second send of the same ref is 403 DUPLICATED_REF and only the first was accepted', async () => {
      const ref = newRef();
      assert.equal((await sendMobile(ref)).status, 200);

      assertFailure(await sendMobile(ref), 403, 'DUPLICATED_REF');
      assert.deepEqual(await sendCounts(ref), { ref, accepted: 1, attempts: 2 });
    });

    it('refs are scoped per family: one ref is accepted once by mobile and once by internet', async () => {
      const ref = newRef();

      assert.equal((await sendMobile(ref)).status, 200);
      assert.equal((await call('POST', '/v3/internet/send', { json: internetBody(ref) })).status, 200);
      assertFailure(
        await call('POST', '/v3/internet/send', { json: internetBody(ref) }),
        403,
        'DUPLICATED_REF',
      );
    });

    it('an unknown ref is 404 on mobile and internet check-ref; a mobile ref is unknown to internet', async () => {
      const ref = newRef();
      await sendMobile(ref);

      assertFailure(await call('GET', `/v3/mobile/check-ref/${newRef()}`), 404, 'NOT_FOUND');
      assertFailure(await call('GET', `/v3/internet/check-ref/${ref}`), 404, 'NOT_FOUND');
    });

    it('an unknown route or method is 404 NOT_FOUND in the envelope', async () => {
      assertFailure(await call('GET', '/v3/nothing-here'), 404, 'NOT_FOUND');
      assertFailure(await call('GET', '/v3/mobile/send'), 404, 'NOT_FOUND');
      assertFailure(await call('GET', '/'), 404, 'NOT_FOUND');
    });
  });

  describe('fault injection', () => {
    afterEach(async () => {
      await admin('DELETE', '/admin/faults');
    });

    const addFault = async (spec: Record<string, unknown>) => {
      const answer = await admin('POST', '/admin/faults', spec);
      assert.equal(answer.status, 201, JSON.stringify(answer.body));
      return (answer.body.data as { id: string }).id;
    };

    it('latency delays only the routes it names, by at least latencyMs', async () => {
      await addFault({ kind: 'latency', latencyMs: 300, routes: ['validate'] });

      let start = Date.now();
      assert.equal((await call('GET', '/v3/validate')).status, 200);
      const delayed = Date.now() - start;
      start = Date.now();
      assert.equal((await call('GET', '/v3/gift-cards/catalog')).status, 200);
      const undelayed = Date.now() - start;

      assert.ok(delayed >= 290, `validate took ${delayed} ms`);
      assert.ok(undelayed < 200, `catalog took ${undelayed} ms`);
    });

    it('error answers its status (default 503) without processing the send', async () => {
      await addFault({ kind: 'error', routes: ['mobile.send'], times: 1 });
      await addFault({ kind: 'error', routes: ['internet.send'], status: 502, times: 1 });
      const ref = newRef();

      assertFailure(await sendMobile(ref), 503, 'INTERNAL_ERROR');
      assertFailure(
        await call('POST', '/v3/internet/send', { json: internetBody(ref) }),
        502,
        'INTERNAL_ERROR',
      );
      assertFailure(await call('GET', `/v3/mobile/check-ref/${ref}`), 404, 'NOT_FOUND');
      assert.deepEqual(await sendCounts(ref), { ref, accepted: 0, attempts: 0 });
    });

    it('error with afterCommit answers 500 but the send was committed', async () => {
      await addFault({ kind: 'error', routes: ['mobile.send'], status: 500, afterCommit: true, times: 1 });
      const ref = newRef();

      assertFailure(await sendMobile(ref), 500, 'INTERNAL_ERROR');
      assert.equal((await checkMobile(ref)).ref, ref);
      assert.deepEqual(await sendCounts(ref), { ref, accepted: 1, attempts: 1 });
    });

    it('rate_limit answers 429 RATE_LIMITED with Retry-After in seconds, without processing', async () => {
      await addFault({ kind: 'rate_limit', routes: ['mobile.send'], retryAfterSeconds: 7 });
      const ref = newRef();

      const answer = await sendMobile(ref);

      assertFailure(answer, 429, 'RATE_LIMITED');
      assert.equal(answer.headers['retry-after'], '7');
      assert.equal((await sendCounts(ref)).accepted, 0);
    });

    it('rate_limit defaults to Retry-After: 1', async () => {
      await addFault({ kind: 'rate_limit' });
      assert.equal((await call('GET', '/v3/validate')).headers['retry-after'], '1');
    });

    it('hang never answers (the client times out) and does not process the send', async () => {
      await addFault({ kind: 'hang', routes: ['mobile.send'], times: 1 });
      const ref = newRef();

      const outcome = await transportFailure(
        call('POST', '/v3/mobile/send', { json: mobileBody(ref), headersTimeout: 200 }),
      );

      assert.equal(outcome, 'UND_ERR_HEADERS_TIMEOUT');
      assertFailure(await call('GET', `/v3/mobile/check-ref/${ref}`), 404, 'NOT_FOUND');
    });

    it('hang with afterCommit never answers, but the send was committed', async () => {
      await addFault({ kind: 'hang', routes: ['mobile.send'], afterCommit: true, times: 1 });
      const ref = newRef();

      const outcome = await transportFailure(
        call('POST', '/v3/mobile/send', { json: mobileBody(ref), headersTimeout: 200 }),
      );

      assert.equal(outcome, 'UND_ERR_HEADERS_TIMEOUT');
      assert.equal((await checkMobile(ref)).ref, ref);
      assert.deepEqual(await sendCounts(ref), { ref, accepted: 1, attempts: 1 });
    });

    it('drop_after_commit resets the connection without an answer; the ref is then found and was accepted once', async () => {
      await addFault({ kind: 'drop_after_commit', routes: ['mobile.send'], times: 1 });
      const ref = newRef();

      const outcome = await transportFailure(sendMobile(ref));

      assert.equal(outcome, 'UND_ERR_SOCKET');
      assert.equal((await checkMobile(ref)).ref, ref);
      assert.deepEqual(await sendCounts(ref), { ref, accepted: 1, attempts: 1 });
      const report = (await admin('GET', '/admin/sends')).body.data as { refs: Record<string, unknown> };
      assert.deepEqual(report.refs[ref], { family: 'mobile', accepted: 1, attempts: 1 });
    });

    it('drop_after_commit on placeOrder places the order (the count goes up) but answers nothing', async () => {
      await addFault({ kind: 'drop_after_commit', routes: ['giftcards.placeOrder'], times: 1 });

      const outcome = await transportFailure(
        call('POST', '/v3/gift-cards/placeOrder', { json: giftCardBody() }),
      );

      assert.equal(outcome, 'UND_ERR_SOCKET');
      const report = (await admin('GET', '/admin/sends')).body.data as { giftCardOrders: { placed: number } };
      assert.equal(report.giftCardOrders.placed, 1);
    });

    it('times: n applies to exactly n requests, then the rule is gone from the list', async () => {
      await addFault({ kind: 'error', routes: ['validate'], times: 2 });

      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await call('GET', '/v3/validate')).status);

      assert.deepEqual(statuses, [503, 503, 200, 200]);
      assert.deepEqual((await admin('GET', '/admin/faults')).body.data, { faults: [] });
    });

    it('times: n holds under concurrency: 5 of 40 concurrent requests fail', async () => {
      await addFault({ kind: 'error', routes: ['validate'], times: 5 });

      const answers = await Promise.all(Array.from({ length: 40 }, () => call('GET', '/v3/validate')));

      assert.equal(answers.filter((a) => a.status === 503).length, 5);
    });

    it('probability 0 never applies; probability 0.5 applies to some but not all of 200 requests', async () => {
      const never = await addFault({ kind: 'error', routes: ['validate'], probability: 0 });
      for (let i = 0; i < 20; i++) assert.equal((await call('GET', '/v3/validate')).status, 200);
      await admin('DELETE', `/admin/faults/${never}`);

      await addFault({ kind: 'error', routes: ['validate'], probability: 0.5 });
      const answers = await Promise.all(Array.from({ length: 200 }, () => call('GET', '/v3/validate')));
      const failed = answers.filter((a) => a.status === 503).length;

      // Binomial(200, 0.5): outside 40..160 with a probability far below 1e-15.
      assert.ok(failed > 40 && failed < 160, `${failed} of 200 failed`);
    });

    it('latency applies first, then the first matching non-latency rule', async () => {
      await addFault({ kind: 'latency', latencyMs: 150, routes: ['validate'] });
      await addFault({ kind: 'rate_limit', routes: ['validate'], retryAfterSeconds: 3 });
      await addFault({ kind: 'error', routes: ['validate'] });

      const start = Date.now();
      const answer = await call('GET', '/v3/validate');

      assert.ok(Date.now() - start >= 140);
      assertFailure(answer, 429, 'RATE_LIMITED');
    });

    it('rules default to every /v3 route, and never touch the admin surface', async () => {
      await addFault({ kind: 'error', status: 504 });

      assert.equal((await call('GET', '/v3/gift-cards/catalog')).status, 504);
      assert.equal((await call('GET', `/v3/mobile/check-ref/${newRef()}`)).status, 504);
      assert.equal((await admin('GET', '/admin/sends')).status, 200);
    });

    it('fault rules are listed, deleted one by one (404 for an unknown id) and all at once', async () => {
      const first = await addFault({ kind: 'latency', latencyMs: 1 });
      const second = await addFault({ kind: 'hang', routes: ['mobile.send'] });

      const listed = (await admin('GET', '/admin/faults')).body.data as {
        faults: { id: string; kind: string }[];
      };
      assert.deepEqual(
        listed.faults.map(({ id, kind }) => ({ id, kind })),
        [
          { id: first, kind: 'latency' },
          { id: second, kind: 'hang' },
        ],
      );
      assert.equal((await admin('DELETE', `/admin/faults/${first}`)).status, 200);
      assertFailure(await admin('DELETE', `/admin/faults/${first}`), 404, 'NOT_FOUND');
      assert.equal((await admin('DELETE', '/admin/faults')).status, 200);
      assert.deepEqual((await admin('GET', '/admin/faults')).body.data, { faults: [] });
    });

    it('a bad fault rule is 400 naming the field', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ kind: 'explode' }, 'kind'],
        [{}, 'kind'],
        [{ kind: 'error', probability: 2 }, 'probability'],
        [{ kind: 'error', status: 404 }, 'status'],
        [{ kind: 'error', times: 0 }, 'times'],
        [{ kind: 'latency' }, 'latencyMs'],
        [{ kind: 'rate_limit', routes: ['mobile.sned'] }, 'routes.0'],
        [{ kind: 'rate_limit', afterCommit: true }, 'afterCommit'],
      ];
      for (const [spec, field] of cases) {
        assertFailure(await admin('POST', '/admin/faults', spec), 400, 'ERR_VALIDATION', field);
      }
      assert.deepEqual((await admin('GET', '/admin/faults')).body.data, { faults: [] });
    });
  });

  describe('admin surface', () => {
    it('without X-Admin-Token, or with a wrong one, every admin route is 403 FORBIDDEN', async () => {
      const refused: Record<string, string>[] = [{}, { 'x-admin-token': 'wrong' }];
      for (const headers of refused) {
        assertFailure(await call('GET', '/admin/sends', { key: null, headers }), 403, 'FORBIDDEN');
        assertFailure(await call('GET', '/admin/faults', { key: null, headers }), 403, 'FORBIDDEN');
        assertFailure(await call('POST', '/admin/reset', { key: null, headers }), 403, 'FORBIDDEN');
        const fault = { kind: 'error' };
        assertFailure(
          await call('POST', '/admin/faults', { key: null, headers, json: fault }),
          403,
          'FORBIDDEN',
        );
      }
      assert.deepEqual((await admin('GET', '/admin/faults')).body.data, { faults: [] });
    });

    it('a sandbox started without adminToken has no admin surface (404), whatever token is sent', async () => {
      const bare = await startSandbox({ port: 0 });
      try {
        const res = await request(`${bare.url}/admin/sends`, { headers: { 'x-admin-token': 'anything' } });
        const body = (await res.body.json()) as Envelope;
        assert.equal(res.statusCode, 404);
        assert.equal(body.error?.code, 'NOT_FOUND');
      } finally {
        await bare.close();
      }
    });

    it('/admin/sends reports each ref with family, accepted and attempts, and the gift-card orders placed', async () => {
      const mobileRef = newRef();
      const internetRef = newRef();
      await sendMobile(mobileRef);
      await sendMobile(mobileRef);
      await call('POST', '/v3/internet/send', { json: internetBody(internetRef) });
      await call('POST', '/v3/gift-cards/placeOrder', { json: giftCardBody(2) });

      const report = (await admin('GET', '/admin/sends')).body.data;

      assert.deepEqual(report, {
        refs: {
          [mobileRef]: { family: 'mobile', accepted: 1, attempts: 2 },
          [internetRef]: { family: 'internet', accepted: 1, attempts: 1 },
        },
        giftCardOrders: { placed: 1 },
      });
      assert.deepEqual(await sendCounts('never-sent'), { ref: 'never-sent', accepted: 0, attempts: 0 });
    });

    it('POST /admin/reset forgets orders, counters and faults', async () => {
      const ref = newRef();
      await sendMobile(ref);
      await admin('POST', '/admin/faults', { kind: 'latency', latencyMs: 1 });

      assert.equal((await admin('POST', '/admin/reset')).status, 200);

      assertFailure(await call('GET', `/v3/mobile/check-ref/${ref}`), 404, 'NOT_FOUND');
      assert.deepEqual((await admin('GET', '/admin/sends')).body.data, {
        refs: {},
        giftCardOrders: { placed: 0 },
      });
      assert.deepEqual((await admin('GET', '/admin/faults')).body.data, { faults: [] });
      assert.equal((await sendMobile(ref)).status, 200, 'the ref is free again');
    });
  });

  describe('under load', () => {
    it('300 concurrent sends with distinct refs are all accepted, each exactly once', async () => {
      const refs = Array.from({ length: 300 }, () => newRef('load'));

      const answers = await Promise.all(refs.map((ref) => sendMobile(ref)));

      assert.deepEqual(
        answers.filter((a) => a.status !== 200).map((a) => a.body),
        [],
      );
      const report = (await admin('GET', '/admin/sends')).body.data as {
        refs: Record<string, { accepted: number }>;
      };
      assert.ok(refs.every((ref) => report.refs[ref]?.accepted === 1));
    });

    it('20 concurrent sends of the same ref: exactly one accepted, the other 19 are 403 DUPLICATED_REF', async () => {
      const ref = newRef('race');

      const answers = await Promise.all(Array.from({ length: 20 }, () => sendMobile(ref)));

      assert.equal(answers.filter((a) => a.status === 200).length, 1);
      assert.equal(
        answers.filter((a) => a.status === 403 && a.body.error?.code === 'DUPLICATED_REF').length,
        19,
      );
      assert.deepEqual(await sendCounts(ref), { ref, accepted: 1, attempts: 20 });
    });

    it('state computed from the clock holds 10,000 orders, each read back in its own state', () => {
      let clock = 0;
      const state = new SandboxState({ timeScale: 1, now: () => clock });
      for (let i = 0; i < 10_000; i++) {
        clock = i;
        state.sendMobile(
          'owner',
          {
            plan_code: 'PREPAID_X',
            MSSIDN: '0555123456',
            amount: 100,
            ref: `r${i}`,
          },
          100,
        );
      }

      clock = 22_000;
      // r0 was created at 0 (FULFILLED from 20 000), r9999 at 9 999 (HANDLING until 29 999).
      assert.equal(state.checkMobile('owner', 'r0').status, 'FULFILLED');
      assert.equal(state.checkMobile('owner', 'r9999').status, 'HANDLING');
      assert.equal(Object.keys(state.sendReport().refs).length, 10_000);
    });
  });

  describe('lifecycle', () => {
    it('close() resolves promptly even while a hang fault holds a request open', async () => {
      const own = await startSandbox({ port: 0, adminToken: ADMIN_TOKEN });
      const addRule = await request(`${own.url}/admin/faults`, {
        method: 'POST',
        headers: { 'x-admin-token': ADMIN_TOKEN, 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'hang' }),
      });
      await addRule.body.dump();
      const hanging = transportFailure(
        request(`${own.url}/v3/validate`, { headers: { 'x-access-token': SANDBOX_KEY } }),
      );
      await sleep(50);

      const start = Date.now();
      await own.close();

      assert.ok(Date.now() - start < 1_000);
      assert.equal(await hanging, 'UND_ERR_SOCKET');
    });
  });
});

function listen(server: Server): Promise<Server> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}
