/**
 * The provider client against the real sandbox over HTTP: every method end to end, and every
 * failure class produced for real (by the sandbox's own answers or its fault injection), ending
 * with the case never-send-twice exists for: the provider committed but the answer was lost.
 */
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { inspect } from 'node:util';
import { request, type Pool } from 'undici';
import { startSandbox } from '../../src/sandbox/server';
import { createProviderPool, ProviderClient, ProviderError, type MobileSendBody } from '../../src/provider';
import type { ProviderFailureKind } from '../../contract/provider';

const ADMIN_TOKEN = 't';
const SANDBOX_KEY = 'sandbox-key';
/** timeScale 0.01: the spec's 5 s PENDING and 15 s HANDLING become 50 ms and 150 ms. */
const TIME_SCALE = 0.01;

type Sandbox = Awaited<ReturnType<typeof startSandbox>>;

const thrown: ProviderError[] = [];

/** Asserts that `fn` throws a ProviderError of `kind`, records it for the leak check, returns it. */
async function expectFailure(kind: ProviderFailureKind, fn: () => Promise<unknown>): Promise<ProviderError> {
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof ProviderError, `expected a ProviderError, got ${inspect(err)}`);
    thrown.push(err);
    assert.equal(err.kind, kind, `expected ${kind}, got ${err.kind}: ${err.message}`);
    return err;
  }
  assert.fail(`expected a '${kind}' failure, but the call succeeded`);
}

/** Polls `fn` until `done` holds, for the simulated PENDING → HANDLING → FULFILLED timeline. */
async function eventually<T>(
  fn: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function uniqueRef(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

function mobile(ref: string, MSSIDN = '0555123456'): MobileSendBody {
  return { plan_code: 'PREPAID_DJEZZY', MSSIDN, amount: 500, ref };
}

/** A port nothing listens on: bind an ephemeral port, then release it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('ProviderClient against the sandbox', { timeout: 60_000 }, () => {
  let sandbox: Sandbox;
  let pool: Pool;
  let client: ProviderClient;
  const extraPools: Pool[] = [];

  function clientWith(apiKey: string, options: { headersTimeoutMs?: number; baseUrl?: string } = {}) {
    const baseUrl = options.baseUrl ?? sandbox.url;
    const own = createProviderPool({ baseUrl, connectTimeoutMs: 1_000, connections: 2 });
    extraPools.push(own);
    return new ProviderClient({
      baseUrl,
      apiKey,
      dispatcher: own,
      headersTimeoutMs: options.headersTimeoutMs ?? 5_000,
      bodyTimeoutMs: 5_000,
    });
  }

  async function admin<T = unknown>(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    body?: unknown,
  ): Promise<T> {
    const res = await request(new URL(path, sandbox.url), {
      method,
      headers: {
        'x-admin-token': ADMIN_TOKEN,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    assert.ok(res.statusCode < 300, `admin ${method} ${path} answered ${res.statusCode}: ${text}`);
    // Admin answers use the /v3 envelope too; the payload is in `data`.
    return (JSON.parse(text) as { data: T }).data;
  }

  /** The sandbox's record of a ref; accepted counts sends that committed, attempts every send. */
  async function sends(ref: string) {
    const record = await admin<{ ref: string; accepted: number; attempts: number }>(
      'GET',
      `/admin/sends/${encodeURIComponent(ref)}`,
    );
    return { accepted: record.accepted, attempts: record.attempts };
  }

  before(async () => {
    sandbox = await startSandbox({ port: 0, timeScale: TIME_SCALE, adminToken: ADMIN_TOKEN });
    pool = createProviderPool({ baseUrl: sandbox.url, connectTimeoutMs: 1_000, connections: 4 });
    client = new ProviderClient({
      baseUrl: sandbox.url,
      apiKey: SANDBOX_KEY,
      dispatcher: pool,
      headersTimeoutMs: 5_000,
      bodyTimeoutMs: 5_000,
    });
  });
  beforeEach(async () => {
    await admin('POST', '/admin/reset');
  });
  afterEach(async () => {
    await admin('DELETE', '/admin/faults');
    // destroy, not close: a pool may hold a request the sandbox was told to hang on.
    await Promise.all(extraPools.splice(0).map((p) => p.destroy()));
  });
  after(async () => {
    await pool.destroy();
    await sandbox.close();
  });

  describe('every method end to end', () => {
    it('validateKey: the sandbox key validates as an enabled SANDBOX key', async () => {
      const info = await client.validateKey();
      assert.equal(info.apiKey.type, 'SANDBOX');
      assert.equal(info.apiKey.isEnabled, true);
      assert.equal(typeof info.username, 'string');
    });

    it('validateKey: the production key validates as PRODUCTION', async () => {
      const info = await clientWith('production-key').validateKey();
      assert.equal(info.apiKey.type, 'PRODUCTION');
    });

    it('a mobile top-up is sent, then checked by ref through PENDING/HANDLING to FULFILLED', async () => {
      const ref = uniqueRef('mob');

      const sent = await client.sendMobileTopup(mobile(ref));
      assert.equal(sent.topupRef, ref);
      assert.match(sent.topupId, /^[0-9a-f]{24}$/);

      const first = await client.checkMobileTopup(ref);
      assert.ok(['PENDING', 'HANDLING', 'FULFILLED'].includes(first.status), first.status);
      const final = await eventually(
        () => client.checkMobileTopup(ref),
        (c) => c.status === 'FULFILLED',
      );
      assert.equal(final.status, 'FULFILLED');
      assert.equal(final.MSSIDN, '0555123456');
      assert.equal(final.topup_amount, 500);
    });

    it('the scripted numbers: refunded with a message, plan mismatch with suggestions, unknown error', async () => {
      const refunded = uniqueRef('refund');
      const mismatch = uniqueRef('mismatch');
      const unknown = uniqueRef('unknown');
      await client.sendMobileTopup(mobile(refunded, '0600000001'));
      await client.sendMobileTopup(mobile(mismatch, '0600000002'));
      await client.sendMobileTopup(mobile(unknown, '0600000003'));

      const r = await client.checkMobileTopup(refunded);
      assert.equal(r.status, 'REFUNDED');
      assert.equal(typeof r.refund_message, 'string');
      assert.equal(r.balance_amount, 0, 'nothing debited after the refund');
      const m = await client.checkMobileTopup(mismatch);
      assert.equal(m.status, 'REFUNDED');
      assert.equal(m.suggested_offers?.[0]?.plan_code, 'FACTURE_DJEZZY');
      assert.equal((await client.checkMobileTopup(unknown)).status, 'UNKNOWN_ERROR');
    });

    it('an internet top-up is sent and reaches FULFILLED with a card code and transaction number', async () => {
      const ref = uniqueRef('net');

      const sent = await client.sendInternetTopup({ type: 'ADSL', number: '023123456', value: 1000, ref });
      assert.equal(sent.topupRef, ref);
      const final = await eventually(
        () => client.checkInternetTopup(ref),
        (c) => c.status === 'FULFILLED',
      );
      assert.equal(final.status, 'FULFILLED');
      assert.match(final.card_code ?? '', /^\d+$/);
      assert.equal(typeof final.num_trans, 'string');
    });

    it('gift cards: the catalog lists GOOGLE_PLAY_1000; an order for 2 is FULFILLED with 2 cards', async () => {
      const catalog = await client.getGiftCardCatalog();
      assert.ok(catalog.categories.some((c) => c.products.some((p) => p.id === 'GOOGLE_PLAY')));
      const product = await client.checkGiftCardProduct('GOOGLE_PLAY');
      assert.ok(product.types.some((t) => t.id === 'GOOGLE_PLAY_1000' && t.quantity > 0 && t.price > 0));

      const { orderId } = await client.placeGiftCardOrder({
        productId: 'GOOGLE_PLAY',
        typeId: 'GOOGLE_PLAY_1000',
        quantity: 2,
      });
      assert.ok(orderId);
      const final = await eventually(
        () => client.checkGiftCardOrder(orderId),
        (c) => c.status === 'FULFILLED',
      );
      assert.equal(final.status, 'FULFILLED');
      assert.equal(final.cards?.length, 2);
    });
  });

  describe('every failure class, for real', () => {
    it('refused: a bad body is a 400 with the provider code, and nothing was accepted', async () => {
      const ref = uniqueRef('bad');
      const invalid = { ...mobile(ref), MSSIDN: 'not-a-number' };

      const err = await expectFailure('refused', () => client.sendMobileTopup(invalid));

      assert.equal(err.status, 400);
      assert.equal(err.code, 'ERR_VALIDATION');
      assert.equal(err.operation, 'sendMobileTopup');
      await expectFailure('not_found', () => client.checkMobileTopup(ref));
    });

    it('access_denied: the production key on a send is a 403 (not the order’s fault)', async () => {
      const err = await expectFailure('access_denied', () =>
        clientWith('production-key').sendMobileTopup(mobile(uniqueRef('prod'))),
      );
      assert.equal(err.status, 403);
      assert.equal(err.code, 'FORBIDDEN');
    });

    it('access_denied: a disabled key (which still validates, as not enabled) is a 403 on a send; an unknown key a 401 INVALID_ACCESS_TOKEN', async () => {
      const disabled = clientWith('disabled-key');
      assert.equal((await disabled.validateKey()).apiKey.isEnabled, false);
      const forbidden = await expectFailure('access_denied', () =>
        disabled.sendMobileTopup(mobile(uniqueRef('off'))),
      );
      assert.equal(forbidden.status, 403);
      const unknown = await expectFailure('access_denied', () => clientWith('no-such-key').validateKey());
      assert.deepEqual([unknown.status, unknown.code], [401, 'INVALID_ACCESS_TOKEN']);
    });

    it('not_found: an unknown ref or order', async () => {
      const err = await expectFailure('not_found', () => client.checkMobileTopup(uniqueRef('never-sent')));
      assert.equal(err.status, 404);
      await expectFailure('not_found', () => client.checkInternetTopup(uniqueRef('never-sent')));
      await expectFailure('not_found', () => client.checkGiftCardOrder('no-such-order'));
    });

    it('duplicate_ref: a second send of the same ref is a 403 DUPLICATED_REF and only the first was accepted', async () => {
      const ref = uniqueRef('dup');
      await client.sendMobileTopup(mobile(ref));

      const err = await expectFailure('duplicate_ref', () => client.sendMobileTopup(mobile(ref)));

      assert.deepEqual([err.status, err.code], [403, 'DUPLICATED_REF']);
      assert.deepEqual(await sends(ref), { accepted: 1, attempts: 2 });
    });

    it('rate_limited: a 429 carries retryAfterMs from Retry-After', async () => {
      await admin('POST', '/admin/faults', {
        kind: 'rate_limit',
        routes: ['giftcards.catalog'],
        retryAfterSeconds: 2,
        times: 1,
      });

      const err = await expectFailure('rate_limited', () => client.getGiftCardCatalog());

      assert.equal(err.status, 429);
      assert.equal(err.retryAfterMs, 2_000);
      // The fault was for one request only; the next one is answered.
      assert.ok((await client.getGiftCardCatalog()).categories.length > 0);
    });

    it('outcome_unknown: a 503 on a send; here it did not commit, so check-ref finds nothing', async () => {
      await admin('POST', '/admin/faults', { kind: 'error', routes: ['mobile.send'], status: 503, times: 1 });
      const ref = uniqueRef('e503');

      const err = await expectFailure('outcome_unknown', () => client.sendMobileTopup(mobile(ref)));

      assert.equal(err.status, 503);
      await expectFailure('not_found', () => client.checkMobileTopup(ref));
    });

    it('outcome_unknown: a 500 after commit; check-ref finds the top-up', async () => {
      await admin('POST', '/admin/faults', {
        kind: 'error',
        routes: ['internet.send'],
        status: 500,
        afterCommit: true,
        times: 1,
      });
      const ref = uniqueRef('e500');

      const err = await expectFailure('outcome_unknown', () =>
        client.sendInternetTopup({ type: '4G', number: '213661234567', value: 500, ref }),
      );

      assert.equal(err.status, 500);
      assert.ok(await client.checkInternetTopup(ref));
    });

    it('outcome_unknown: a hang runs into the headers timeout', async () => {
      await admin('POST', '/admin/faults', { kind: 'hang', routes: ['giftcards.placeOrder'], times: 1 });
      const impatient = clientWith(SANDBOX_KEY, { headersTimeoutMs: 300 });

      const err = await expectFailure('outcome_unknown', () =>
        impatient.placeGiftCardOrder({ productId: 'GOOGLE_PLAY', typeId: 'GOOGLE_PLAY_1000', quantity: 1 }),
      );

      assert.equal(err.code, 'UND_ERR_HEADERS_TIMEOUT');
      assert.equal(err.operation, 'placeGiftCardOrder');
    });

    it('not_reached: nothing listens on the port (connection refused)', async () => {
      const nowhere = clientWith(SANDBOX_KEY, { baseUrl: `http://127.0.0.1:${await closedPort()}` });

      const err = await expectFailure('not_reached', () =>
        nowhere.sendMobileTopup(mobile(uniqueRef('nowhere'))),
      );

      assert.equal(err.code, 'ECONNREFUSED');
    });

    it('when the provider commits a send but the answer is lost, the send is outcome_unknown, check-ref finds it, and it was accepted once', async () => {
      await admin('POST', '/admin/faults', { kind: 'drop_after_commit', routes: ['mobile.send'], times: 1 });
      const ref = uniqueRef('lost');

      const err = await expectFailure('outcome_unknown', () => client.sendMobileTopup(mobile(ref)));
      assert.equal(err.status, undefined, 'no answer arrived');

      // What the workflow does next (design.md "Never send twice"): look the ref up before resending.
      const check = await client.checkMobileTopup(ref);
      assert.ok(['PENDING', 'HANDLING', 'FULFILLED'].includes(check.status), check.status);
      assert.deepEqual(await sends(ref), { accepted: 1, attempts: 1 });
    });
  });

  it('no error thrown against the sandbox shows an API key, in its message, stack, JSON or inspection', () => {
    assert.ok(thrown.length >= 12, `expected the failure tests to have run, saw ${thrown.length} errors`);
    for (const err of thrown) {
      for (const text of [err.message, err.stack ?? '', JSON.stringify(err), inspect(err, { depth: 10 })]) {
        for (const key of [SANDBOX_KEY, 'production-key', 'disabled-key', 'no-such-key']) {
          assert.ok(!text.includes(key), `${key} leaked in: ${err.message}`);
        }
      }
    }
  });
});
