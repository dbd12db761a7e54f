/**
 * Unit tests of the provider client: HTTP is answered by undici's MockAgent (no network), plus a
 * few cases that need a real socket (a local node:http server), because MockAgent cannot produce
 * a body that stalls after the headers or show that bodies are drained.
 */
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { type MockAgent, type Dispatcher } from 'undici';
import { loadConfig, ConfigError } from '../../src/config';
import {
  createProviderClientFromConfig,
  createProviderPool,
  DEFAULT_RETRY_AFTER_MS,
  parseRetryAfter,
  ProviderClient,
  ProviderError,
} from '../../src/provider';
import type { ProviderFailureKind } from '../../contract/provider';
import { mockedProvider } from '../helpers/mocked-provider';

const ORIGIN = 'http://provider.test';
const API_KEY = 'sk_live_THIS-MUST-NEVER-LEAK_5f2a';
const PHONE = '0555123456';

/** Every ProviderError any test sees, checked at the end for the API key. */
const seenErrors: ProviderError[] = [];

function ok(data: unknown) {
  return { success: true, data, meta: { timestamp: '2025-01-01T00:00:00.000Z' }, requestId: 'req-1' };
}
function fail(code: string, message: string) {
  return { success: false, error: { code, message }, meta: { timestamp: '2025-01-01T00:00:00.000Z' } };
}

/** Runs `fn`, asserts it throws a ProviderError, records it for the leak check and returns it. */
async function providerError(fn: () => Promise<unknown>): Promise<ProviderError> {
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof ProviderError, `expected a ProviderError, got ${inspect(err)}`);
    seenErrors.push(err);
    return err;
  }
  assert.fail('expected the call to throw');
}

function headerOf(opts: { headers?: unknown }, name: string): string | undefined {
  const headers = opts.headers as Record<string, string> | undefined;
  return headers?.[name];
}

describe('ProviderClient with a mocked provider', () => {
  let agent: MockAgent;
  let client: ProviderClient;
  let provider: ReturnType<MockAgent['get']>;

  let mocked: ReturnType<typeof mockedProvider>;

  beforeEach(() => {
    ({ agent, client, pool: provider } = mocked = mockedProvider(ORIGIN, API_KEY));
  });
  afterEach(() => mocked.close());

  describe('every method parses a success', () => {
    it('validateKey: GET /v3/validate with the key in X-Access-Token returns the key info', async () => {
      let token: string | undefined;
      provider.intercept({ path: '/v3/validate', method: 'GET' }).reply(200, (opts) => {
        token = headerOf(opts, 'x-access-token');
        return ok({
          username: '+213555000000',
          apiKey: { type: 'SANDBOX', scope: 'READ-WRITE', isEnabled: true },
        });
      });

      const info = await client.validateKey();

      assert.equal(token, API_KEY);
      assert.deepEqual(info, {
        username: '+213555000000',
        apiKey: { type: 'SANDBOX', scope: 'READ-WRITE', isEnabled: true },
      });
    });

    it('sendMobileTopup: POSTs the JSON body with content-type and returns the ids', async () => {
      const body = { plan_code: 'PREPAID_DJEZZY', MSSIDN: PHONE, amount: 500, ref: 'order-1' };
      let seen: { method: string; contentType?: string; token?: string; body: unknown } | undefined;
      provider.intercept({ path: '/v3/mobile/send', method: 'POST' }).reply(200, (opts) => {
        seen = {
          method: opts.method,
          contentType: headerOf(opts, 'content-type'),
          token: headerOf(opts, 'x-access-token'),
          body: JSON.parse(String(opts.body)),
        };
        return ok({ topupId: '0123456789abcdef01234567', topupRef: 'order-1' });
      });

      const result = await client.sendMobileTopup(body);

      assert.deepEqual(result, { topupId: '0123456789abcdef01234567', topupRef: 'order-1' });
      assert.deepEqual(seen, { method: 'POST', contentType: 'application/json', token: API_KEY, body });
    });

    it('checkMobileTopup: encodes the ref in the path and returns the check (with sandbox extras)', async () => {
      provider.intercept({ path: '/v3/mobile/check-ref/a%2Fb%20c%3F', method: 'GET' }).reply(
        200,
        ok({
          status: 'REFUNDED',
          MSSIDN: PHONE,
          topup_amount: 500,
          message: 'plan mismatch',
          suggested_plans: [{ plan_code: 'PREPAID_OOREDOO', amount: 500 }],
        }),
      );

      const check = await client.checkMobileTopup('a/b c?');

      assert.equal(check.status, 'REFUNDED');
      assert.equal(check.topup_amount, 500);
      assert.deepEqual(check.suggested_plans, [{ plan_code: 'PREPAID_OOREDOO', amount: 500 }]);
    });

    it('sendInternetTopup: POSTs the body and returns the ids', async () => {
      const body = { type: 'ADSL' as const, number: '0231234567', value: 1000, ref: 'net-1' };
      let sent: unknown;
      provider.intercept({ path: '/v3/internet/send', method: 'POST' }).reply(200, (opts) => {
        sent = JSON.parse(String(opts.body));
        return ok({ topupId: 'abc', topupRef: 'net-1' });
      });

      assert.deepEqual(await client.sendInternetTopup(body), { topupId: 'abc', topupRef: 'net-1' });
      assert.deepEqual(sent, body);
    });

    it('checkInternetTopup: returns card code and transaction number when FULFILLED', async () => {
      provider
        .intercept({ path: '/v3/internet/check-ref/net-1', method: 'GET' })
        .reply(200, ok({ status: 'FULFILLED', card_code: '123456789012', num_trans: 'T-1' }));

      assert.deepEqual(await client.checkInternetTopup('net-1'), {
        status: 'FULFILLED',
        card_code: '123456789012',
        num_trans: 'T-1',
      });
    });

    it('getGiftCardCatalog: returns the categories and their products', async () => {
      const catalog = {
        categories: [
          { title: 'Stores', products: [{ id: 'GOOGLE_PLAY', title: 'Google Play', enabled: true }] },
        ],
      };
      provider.intercept({ path: '/v3/gift-cards/catalog', method: 'GET' }).reply(200, ok(catalog));

      assert.deepEqual(await client.getGiftCardCatalog(), catalog);
    });

    it('placeGiftCardOrder: POSTs the body and returns the order id', async () => {
      const body = { productId: 'GOOGLE_PLAY', typeId: 'GOOGLE_PLAY_1000', quantity: 2 };
      let sent: unknown;
      provider.intercept({ path: '/v3/gift-cards/placeOrder', method: 'POST' }).reply(200, (opts) => {
        sent = JSON.parse(String(opts.body));
        return ok({ orderId: 'ord-1' });
      });

      assert.deepEqual(await client.placeGiftCardOrder(body), { orderId: 'ord-1' });
      assert.deepEqual(sent, body);
    });

    it('checkGiftCardOrder: encodes the order id and returns the cards', async () => {
      provider
        .intercept({ path: '/v3/gift-cards/checkOrder/ord%231', method: 'GET' })
        .reply(200, ok({ status: 'FULFILLED', cards: [{ value: 'CODE-1', serial: 'S-1' }] }));

      assert.deepEqual(await client.checkGiftCardOrder('ord#1'), {
        status: 'FULFILLED',
        cards: [{ value: 'CODE-1', serial: 'S-1' }],
      });
    });

    it('keeps a path prefix of the base URL (a provider behind a gateway)', async () => {
      const prefixed = new ProviderClient({
        baseUrl: `${ORIGIN}/gateway/provider/`,
        apiKey: API_KEY,
        dispatcher: agent,
        headersTimeoutMs: 1_000,
        bodyTimeoutMs: 1_000,
      });
      provider
        .intercept({ path: '/gateway/provider/v3/gift-cards/checkOrder/o1', method: 'GET' })
        .reply(200, ok({ status: 'PENDING' }));

      assert.deepEqual(await prefixed.checkGiftCardOrder('o1'), { status: 'PENDING' });
    });
  });

  describe('error statuses are classified', () => {
    const cases: Array<{ status: number; code?: string; kind: ProviderFailureKind }> = [
      { status: 400, code: 'ERR_VALIDATION', kind: 'refused' },
      { status: 400, code: 'ERR_PHONE', kind: 'refused' },
      { status: 401, code: 'MISSING_ACCESS_TOKEN', kind: 'access_denied' },
      { status: 401, code: 'INVALID_ACCESS_TOKEN', kind: 'access_denied' },
      { status: 401, code: 'ERR_AUTH', kind: 'access_denied' },
      { status: 403, code: 'IP_BLOCKED', kind: 'access_denied' },
      { status: 429, code: 'IP_BLOCKED', kind: 'access_denied' },
      { status: 403, code: 'FORBIDDEN', kind: 'access_denied' },
      { status: 403, code: 'DUPLICATED_REF', kind: 'duplicate_ref' },
      { status: 400, code: 'DUPLICATED_REF', kind: 'duplicate_ref' },
      { status: 409, code: 'DUPLICATED_REF', kind: 'duplicate_ref' },
      { status: 403, code: 'INSUFFICIENT_BALANCE', kind: 'insufficient_balance' },
      { status: 402, code: 'NO_BALANCE', kind: 'insufficient_balance' },
      { status: 409, code: 'CONFLICT', kind: 'refused' },
      { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', kind: 'refused' },
      { status: 422, code: 'UNPROCESSABLE', kind: 'refused' },
      { status: 404, code: 'NOT_FOUND', kind: 'not_found' },
      { status: 429, code: 'RATE_LIMITED', kind: 'rate_limited' },
      { status: 500, code: 'INTERNAL_ERROR', kind: 'outcome_unknown' },
      { status: 502, code: 'BAD_GATEWAY', kind: 'outcome_unknown' },
      { status: 503, code: 'UNAVAILABLE', kind: 'outcome_unknown' },
      { status: 504, code: 'GATEWAY_TIMEOUT', kind: 'outcome_unknown' },
    ];
    for (const { status, code, kind } of cases) {
      it(`a send answered ${status} ${code} is '${kind}' with status, code and the provider message`, async () => {
        provider
          .intercept({ path: '/v3/mobile/send', method: 'POST' })
          .reply(status, fail(code ?? 'X', `provider says ${status}`));

        const err = await providerError(() =>
          client.sendMobileTopup({ plan_code: 'PREPAID_X', MSSIDN: PHONE, amount: 100, ref: 'r1' }),
        );

        assert.equal(err.kind, kind);
        assert.equal(err.operation, 'sendMobileTopup');
        assert.equal(err.status, status);
        assert.equal(err.code, code);
        assert.match(
          err.message,
          new RegExp(`^sendMobileTopup: HTTP ${status} ${code}: provider says ${status}`),
        );
        // The request body (a phone number) never reaches the message.
        assert.ok(!err.message.includes(PHONE));
      });
    }

    it('a provider message that echoes a phone number or card code has the digits masked', async () => {
      provider
        .intercept({ path: '/v3/mobile/send', method: 'POST' })
        .reply(400, fail('VALIDATION_ERROR', `MSSIDN ${PHONE} invalid; card 1234-5678-9012 blocked`));
      const err = await providerError(() =>
        client.sendMobileTopup({ plan_code: 'PREPAID_X', MSSIDN: PHONE, amount: 100, ref: 'r1' }),
      );
      assert.match(err.message, /MSSIDN \[digits\] invalid; card \[digits\] blocked/);
    });

    it('tolerates an error body that is not JSON (a proxy HTML page): 502 is outcome_unknown, no code', async () => {
      provider
        .intercept({ path: '/v3/gift-cards/catalog', method: 'GET' })
        .reply(502, '<html><body>Bad Gateway</body></html>', { headers: { 'content-type': 'text/html' } });

      const err = await providerError(() => client.getGiftCardCatalog());

      assert.equal(err.kind, 'outcome_unknown');
      assert.equal(err.status, 502);
      assert.equal(err.code, undefined);
      assert.equal(err.message, 'getGiftCardCatalog: HTTP 502');
    });

    it('tolerates an empty 404 body', async () => {
      provider.intercept({ path: '/v3/mobile/check-ref/nope', method: 'GET' }).reply(404, '');

      const err = await providerError(() => client.checkMobileTopup('nope'));

      assert.equal(err.kind, 'not_found');
      assert.equal(err.operation, 'checkMobileTopup');
    });

    it('an unfollowed redirect is outcome_unknown (never "not sent")', async () => {
      provider.intercept({ path: '/v3/gift-cards/placeOrder', method: 'POST' }).reply(307, '');

      const err = await providerError(() =>
        client.placeGiftCardOrder({ productId: 'P', typeId: 'T', quantity: 1 }),
      );

      assert.equal(err.kind, 'outcome_unknown');
      assert.equal(err.status, 307);
    });

    it('a long, multi-line provider message is flattened and cut short', async () => {
      provider
        .intercept({ path: '/v3/validate', method: 'GET' })
        .reply(400, fail('VALIDATION_ERROR', `line one\nline two ${'x'.repeat(500)}`));

      const err = await providerError(() => client.validateKey());

      assert.ok(!err.message.includes('\n'));
      assert.ok(err.message.length < 260, `message too long: ${err.message.length}`);
      assert.match(err.message, /line one line two x+…$/);
    });
  });

  describe('429 and Retry-After', () => {
    it('Retry-After in seconds becomes retryAfterMs', async () => {
      provider
        .intercept({ path: '/v3/mobile/send', method: 'POST' })
        .reply(429, fail('RATE_LIMITED', 'slow down'), { headers: { 'retry-after': '3' } });

      const err = await providerError(() =>
        client.sendMobileTopup({ plan_code: 'PREPAID_X', MSSIDN: PHONE, amount: 100, ref: 'r1' }),
      );

      assert.equal(err.kind, 'rate_limited');
      assert.equal(err.retryAfterMs, 3_000);
      assert.match(err.message, /retry after 3000 ms/);
    });

    it('Retry-After as an HTTP date becomes the time until that date', async () => {
      const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
      provider
        .intercept({ path: '/v3/validate', method: 'GET' })
        .reply(429, 'Too Many Requests', { headers: { 'retry-after': inTenSeconds } });

      const err = await providerError(() => client.validateKey());

      assert.equal(err.kind, 'rate_limited');
      assert.ok(err.retryAfterMs !== undefined && err.retryAfterMs > 7_000 && err.retryAfterMs <= 10_000);
    });

    it('without Retry-After the default applies', async () => {
      provider.intercept({ path: '/v3/validate', method: 'GET' }).reply(429, fail('RATE_LIMITED', 'no'));

      const err = await providerError(() => client.validateKey());

      assert.equal(err.retryAfterMs, DEFAULT_RETRY_AFTER_MS);
    });

    it('parseRetryAfter: seconds, fractions, dates, past dates, garbage, repeated headers', () => {
      const now = Date.parse('2025-01-01T00:00:00Z');
      assert.equal(parseRetryAfter('0', now), 0);
      assert.equal(parseRetryAfter(' 120 ', now), 120_000);
      assert.equal(parseRetryAfter('1.5', now), 1_500);
      assert.equal(parseRetryAfter('Wed, 01 Jan 2025 00:00:30 GMT', now), 30_000);
      assert.equal(parseRetryAfter('Tue, 31 Dec 2024 23:59:00 GMT', now), 0);
      assert.equal(parseRetryAfter(undefined, now), DEFAULT_RETRY_AFTER_MS);
      assert.equal(parseRetryAfter('', now), DEFAULT_RETRY_AFTER_MS);
      assert.equal(parseRetryAfter('soon', now), DEFAULT_RETRY_AFTER_MS);
      assert.equal(parseRetryAfter('-5', now), DEFAULT_RETRY_AFTER_MS);
      assert.equal(parseRetryAfter('Wednesday, 01-Jan-25 00:00:05 GMT', now), 5_000); // RFC 850
      assert.equal(parseRetryAfter(['2', '9'], now), 2_000);
    });
  });

  describe('transport errors are classified on err.code', () => {
    const cases: Array<[string | undefined, ProviderFailureKind]> = [
      ['ECONNREFUSED', 'not_reached'],
      ['ENOTFOUND', 'not_reached'],
      ['EAI_AGAIN', 'not_reached'],
      ['UND_ERR_CONNECT_TIMEOUT', 'not_reached'],
      // On an established socket these may come after the request was written: only "maybe sent".
      ['EHOSTUNREACH', 'outcome_unknown'],
      ['ENETUNREACH', 'outcome_unknown'],
      ['UND_ERR_HEADERS_TIMEOUT', 'outcome_unknown'],
      ['UND_ERR_BODY_TIMEOUT', 'outcome_unknown'],
      ['UND_ERR_SOCKET', 'outcome_unknown'],
      ['ECONNRESET', 'outcome_unknown'],
      ['EPIPE', 'outcome_unknown'],
      ['UND_ERR_ABORTED', 'outcome_unknown'],
      ['ETIMEDOUT', 'outcome_unknown'],
      [undefined, 'outcome_unknown'],
    ];
    for (const [code, kind] of cases) {
      it(`${code ?? 'an error without a code'} → ${kind}`, async () => {
        const cause = Object.assign(new Error(`simulated ${code ?? 'failure'}`), code ? { code } : {});
        provider.intercept({ path: '/v3/mobile/send', method: 'POST' }).replyWithError(cause);

        const err = await providerError(() =>
          client.sendMobileTopup({ plan_code: 'PREPAID_X', MSSIDN: PHONE, amount: 100, ref: 'r1' }),
        );

        assert.equal(err.kind, kind);
        assert.equal(err.code, code ?? 'UNKNOWN');
        assert.equal(err.status, undefined);
        assert.equal(err.cause, cause);
        assert.match(err.message, new RegExp(`^sendMobileTopup: .*\\(${code ?? 'UNKNOWN'}\\)`));
      });
    }

    for (const code of ['EHOSTUNREACH', 'ENETUNREACH']) {
      it(`${code} while connecting (syscall connect) → not_reached`, async () => {
        const cause = Object.assign(new Error(`connect ${code}`), { code, syscall: 'connect' });
        provider.intercept({ path: '/v3/mobile/send', method: 'POST' }).replyWithError(cause);
        const err = await providerError(() =>
          client.sendMobileTopup({ plan_code: 'PREPAID_X', MSSIDN: PHONE, amount: 100, ref: 'r1' }),
        );
        assert.equal(err.kind, 'not_reached');
      });
    }

    it('an AggregateError (happy-eyeballs connect) is not_reached only if every address refused', async () => {
      const refused = (address: string) =>
        Object.assign(new Error(`refused ${address}`), { code: 'ECONNREFUSED' });
      const reset = Object.assign(new Error('reset'), { code: 'ECONNRESET' });
      provider
        .intercept({ path: '/v3/validate', method: 'GET' })
        .replyWithError(new AggregateError([refused('::1'), refused('127.0.0.1')]));
      provider
        .intercept({ path: '/v3/validate', method: 'GET' })
        .replyWithError(new AggregateError([refused('::1'), reset]));

      assert.equal((await providerError(() => client.validateKey())).kind, 'not_reached');
      assert.equal((await providerError(() => client.validateKey())).kind, 'outcome_unknown');
    });
  });

  describe('an unexpected 2xx is outcome_unknown INVALID_RESPONSE, not a crash later', () => {
    const cases: Array<[string, string | object]> = [
      ['a body that is not JSON', 'OK'],
      ['an empty body', ''],
      ['data missing a field', ok({ topupId: 'abc' })],
      ['data of the wrong type', ok({ topupId: 1, topupRef: 'r1' })],
      ['no envelope at all', { topupId: 'abc', topupRef: 'r1' }],
    ];
    for (const [name, body] of cases) {
      it(`a send answered 200 with ${name}`, async () => {
        provider.intercept({ path: '/v3/mobile/send', method: 'POST' }).reply(200, body);

        const err = await providerError(() =>
          client.sendMobileTopup({ plan_code: 'PREPAID_X', MSSIDN: PHONE, amount: 100, ref: 'r1' }),
        );

        assert.equal(err.kind, 'outcome_unknown');
        assert.equal(err.code, 'INVALID_RESPONSE');
        assert.equal(err.status, 200);
        assert.match(err.message, /^sendMobileTopup: HTTP 200 with an unexpected response \(.+\)$/);
      });
    }

    it('a send answered 200 with success:false is classified by its code: an undocumented one is outcome_unknown', async () => {
      provider
        .intercept({ path: '/v3/mobile/send', method: 'POST' })
        .reply(200, fail('INTERNAL_ERROR', 'oops'));
      const err = await providerError(() =>
        client.sendMobileTopup({ plan_code: 'PREPAID_X', MSSIDN: PHONE, amount: 100, ref: 'r1' }),
      );
      assert.deepEqual([err.kind, err.code, err.status], ['outcome_unknown', 'INTERNAL_ERROR', 200]);
    });

    it('a send answered 200 with success:false DUPLICATED_REF is duplicate_ref all the same', async () => {
      provider
        .intercept({ path: '/v3/mobile/send', method: 'POST' })
        .reply(200, fail('DUPLICATED_REF', 'used'));
      const err = await providerError(() =>
        client.sendMobileTopup({ plan_code: 'PREPAID_X', MSSIDN: PHONE, amount: 100, ref: 'r1' }),
      );
      assert.equal(err.kind, 'duplicate_ref');
    });

    it('a status nobody documented is an answer (for the lifecycle to send to review), not a parse error', async () => {
      provider
        .intercept({ path: '/v3/mobile/check-ref/r1', method: 'GET' })
        .reply(200, ok({ status: 'DONE', MSSIDN: PHONE, topup_amount: 100 }));

      assert.equal((await client.checkMobileTopup('r1')).status, 'DONE');
    });
  });

  describe('the API key stays secret', () => {
    it('is redacted when the provider echoes it in an error message', async () => {
      provider
        .intercept({ path: '/v3/validate', method: 'GET' })
        .reply(401, fail('INVALID_ACCESS_TOKEN', `unknown key ${API_KEY}`));

      const err = await providerError(() => client.validateKey());

      assert.equal(err.kind, 'access_denied');
      assert.equal(err.message, 'validateKey: HTTP 401 INVALID_ACCESS_TOKEN: unknown key [redacted]');
    });

    it('does not show in an inspected or serialized client', () => {
      assert.ok(!inspect(client, { depth: 10, showHidden: true }).includes(API_KEY));
      assert.ok(!JSON.stringify(client).includes(API_KEY));
    });

    it('never appears in any error thrown by these tests (message, stack, JSON, inspect)', () => {
      assert.ok(seenErrors.length > 40, `expected many errors to check, saw ${seenErrors.length}`);
      for (const err of seenErrors) {
        for (const text of [err.message, err.stack ?? '', JSON.stringify(err), inspect(err, { depth: 10 })]) {
          assert.ok(!text.includes(API_KEY), `API key leaked: ${err.message}`);
          assert.ok(!text.includes(PHONE), `phone number leaked: ${err.message}`);
        }
      }
    });
  });
});

describe('ProviderClient over real sockets (local node:http server)', () => {
  let server: Server;
  let baseUrl: string;
  let handler: (req: IncomingMessage, res: ServerResponse) => void;
  const pools: Dispatcher[] = [];

  beforeEach(async () => {
    server = createServer((req, res) => handler(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.destroy()));
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  function clientFor(
    options: { connections?: number; headersTimeoutMs?: number; bodyTimeoutMs?: number } = {},
  ) {
    const pool = createProviderPool({
      baseUrl,
      connectTimeoutMs: 1_000,
      connections: options.connections ?? 1,
    });
    pools.push(pool);
    return new ProviderClient({
      baseUrl,
      apiKey: API_KEY,
      dispatcher: pool,
      headersTimeoutMs: options.headersTimeoutMs ?? 2_000,
      bodyTimeoutMs: options.bodyTimeoutMs ?? 2_000,
    });
  }

  it('a call stuck in the pool queue behind a slow one gives up at its deadline, unsent (not_reached), never going out late', async () => {
    let arrivals = 0;
    handler = (_req, res) => {
      arrivals += 1;
      // Headers at once, then a byte every 200 ms for 6 s: the body timeout (idle time) never fires.
      res.writeHead(200, { 'content-type': 'application/json' });
      const drip = setInterval(() => res.write(' '), 200);
      setTimeout(() => {
        clearInterval(drip);
        res.end(JSON.stringify(ok({ categories: [] })));
      }, 6_000);
    };
    // Two clients on one single-connection pool: a patient one holds the socket, an impatient one queues.
    const patient = clientFor({ connections: 1, headersTimeoutMs: 5_000, bodyTimeoutMs: 5_000 });
    const impatient = new ProviderClient({
      baseUrl,
      apiKey: API_KEY,
      dispatcher: pools[pools.length - 1]!,
      headersTimeoutMs: 500,
      bodyTimeoutMs: 500,
    });
    const slow = patient.getGiftCardCatalog().catch((err: unknown) => err);
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    const queued = await providerError(() => impatient.getGiftCardCatalog());

    // Never handed to the socket: certainly not sent, so safe to send again.
    assert.equal(queued.kind, 'not_reached');
    assert.equal(queued.code, 'CALL_NOT_SENT');
    assert.match(queued.message, /never left this process \(CALL_DEADLINE_EXCEEDED\)/);
    assert.ok(Date.now() - started < 3_000, 'gave up at its 1 s deadline, not after the slow call');
    await slow;
    assert.equal(arrivals, 1, 'the queued call never reached the provider');
  });

  it('a call written to the socket whose answer never comes ends at its deadline as outcome_unknown (it may have been acted on)', async () => {
    let arrivals = 0;
    handler = () => {
      arrivals += 1; // never answers
    };
    const client = clientFor({ headersTimeoutMs: 5_000, bodyTimeoutMs: 5_000 });
    const err = await providerError(() =>
      client.placeGiftCardOrder(
        { productId: 'P', typeId: 'T', quantity: 1 },
        { signal: AbortSignal.timeout(300) },
      ),
    );

    assert.equal(arrivals, 1, 'the request reached the server');
    assert.equal(err.kind, 'outcome_unknown');
    assert.equal(err.code, 'CALL_DEADLINE_EXCEEDED');
  });

  it('drains error bodies: on one connection, many error answers do not stall the next request', async () => {
    let calls = 0;
    handler = (_req, res) => {
      calls += 1;
      const body =
        calls <= 5
          ? JSON.stringify(fail('INTERNAL_ERROR', 'x'.repeat(50_000)))
          : JSON.stringify(ok({ categories: [] }));
      res.writeHead(calls <= 5 ? 500 : 200, { 'content-type': 'application/json' }).end(body);
    };
    const client = clientFor({ connections: 1, headersTimeoutMs: 1_000 });

    for (let i = 0; i < 5; i++) {
      assert.equal((await providerError(() => client.getGiftCardCatalog())).kind, 'outcome_unknown');
    }
    assert.deepEqual(await client.getGiftCardCatalog(), { categories: [] });
  });

  it('a body that stalls after the headers is outcome_unknown (UND_ERR_BODY_TIMEOUT) with the status', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"success":true,'); // ... and never the rest
    };
    const client = clientFor({ bodyTimeoutMs: 200 });

    const err = await providerError(() =>
      client.sendMobileTopup({ plan_code: 'PREPAID_X', MSSIDN: PHONE, amount: 100, ref: 'r1' }),
    );

    assert.equal(err.kind, 'outcome_unknown');
    assert.equal(err.code, 'UND_ERR_BODY_TIMEOUT');
    assert.equal(err.status, 200);
  });

  it("a caller's signal ends a call in flight long before the client's own timeouts: the server sees the connection close", async () => {
    let closedAfterMs: number | undefined;
    handler = (req) => {
      const arrived = Date.now();
      req.socket.once('close', () => (closedAfterMs = Date.now() - arrived));
    };
    const client = clientFor({ headersTimeoutMs: 10_000, bodyTimeoutMs: 10_000 });

    const err = await providerError(() =>
      client.sendMobileTopup(
        { plan_code: 'PREPAID_X', MSSIDN: PHONE, amount: 100, ref: 'r-signal' },
        { signal: AbortSignal.timeout(300) },
      ),
    );

    assert.equal(err.kind, 'outcome_unknown');
    assert.equal(err.code, 'CALL_DEADLINE_EXCEEDED');
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(closedAfterMs !== undefined && closedAfterMs < 2_000, `closed after ${closedAfterMs} ms`);
  });

  it('a call cancelled by its caller (a cancelled activity) is outcome_unknown CALL_CANCELLED', async () => {
    handler = () => {
      /* never answer */
    };
    const client = clientFor();
    const controller = new AbortController();
    setTimeout(
      () => controller.abort(Object.assign(new Error('WORKER_SHUTDOWN'), { name: 'CancelledFailure' })),
      100,
    );

    const err = await providerError(() => client.validateKey({ signal: controller.signal }));

    assert.equal(err.kind, 'outcome_unknown');
    assert.equal(err.code, 'CALL_CANCELLED');
  });

  it("a call whose caller's signal has already fired is not_reached CALL_NOT_STARTED and never leaves", async () => {
    let arrivals = 0;
    handler = (_req, res) => {
      arrivals += 1;
      res.end();
    };
    const client = clientFor();

    const err = await providerError(() =>
      client.sendMobileTopup(
        { plan_code: 'PREPAID_X', MSSIDN: PHONE, amount: 100, ref: 'r-late' },
        { signal: AbortSignal.abort(new DOMException('no time left', 'TimeoutError')) },
      ),
    );

    assert.equal(err.kind, 'not_reached');
    assert.equal(err.code, 'CALL_NOT_STARTED');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(arrivals, 0);
  });

  it('headers that never come are outcome_unknown (UND_ERR_HEADERS_TIMEOUT)', async () => {
    handler = () => {
      /* accept the request, never answer */
    };
    const client = clientFor({ headersTimeoutMs: 200 });

    const err = await providerError(() =>
      client.placeGiftCardOrder({ productId: 'P', typeId: 'T', quantity: 1 }),
    );

    assert.equal(err.kind, 'outcome_unknown');
    assert.equal(err.code, 'UND_ERR_HEADERS_TIMEOUT');
  });

  it('a connection closed before any answer is outcome_unknown', async () => {
    handler = (req) => req.socket.destroy();
    const client = clientFor();

    const err = await providerError(() =>
      client.sendMobileTopup({ plan_code: 'PREPAID_X', MSSIDN: PHONE, amount: 100, ref: 'r1' }),
    );

    assert.equal(err.kind, 'outcome_unknown');
    assert.ok(err.code === 'UND_ERR_SOCKET' || err.code === 'ECONNRESET', String(err.code));
  });

  it('a closed port is not_reached (ECONNREFUSED)', async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    server = createServer(); // so afterEach has something to close
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = clientFor();

    const err = await providerError(() => client.validateKey());

    assert.equal(err.kind, 'not_reached');
    assert.equal(err.code, 'ECONNREFUSED');
  });

  it('a request undici rejects before sending (an API key with a newline) is not_reached, key not shown', async () => {
    const pool = createProviderPool({ baseUrl, connectTimeoutMs: 1_000, connections: 1 });
    pools.push(pool);
    const brokenKey = `${API_KEY}\nX-Injected: 1`;
    const client = new ProviderClient({
      baseUrl,
      apiKey: brokenKey,
      dispatcher: pool,
      headersTimeoutMs: 1_000,
      bodyTimeoutMs: 1_000,
    });

    const err = await providerError(() => client.validateKey());

    assert.equal(err.kind, 'not_reached');
    assert.equal(err.code, 'UND_ERR_INVALID_ARG');
    assert.ok(!inspect(err, { depth: 10 }).includes(API_KEY));
  });

  it('a request on a pool that is closing is not_reached (UND_ERR_CLOSED): it was never dispatched', async () => {
    handler = (_req, res) => res.writeHead(200).end(JSON.stringify(ok({ categories: [] })));
    const pool = createProviderPool({ baseUrl, connectTimeoutMs: 1_000, connections: 1 });
    const client = new ProviderClient({
      baseUrl,
      apiKey: API_KEY,
      dispatcher: pool,
      headersTimeoutMs: 1_000,
      bodyTimeoutMs: 1_000,
    });
    const closing = pool.close();

    const err = await providerError(() => client.getGiftCardCatalog());

    assert.equal(err.kind, 'not_reached');
    assert.equal(err.code, 'UND_ERR_CLOSED');
    await closing;
  });

  it('none of these errors, inspected with their causes, shows the API key', () => {
    for (const err of seenErrors) assert.ok(!inspect(err, { depth: 10 }).includes(API_KEY));
  });
});

describe('createProviderClientFromConfig', () => {
  it('refuses to start without PROVIDER_API_KEY, naming the variable', () => {
    assert.throws(
      () => createProviderClientFromConfig(loadConfig({})),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, /PROVIDER_API_KEY/);
        return true;
      },
    );
  });

  it('builds a client on a pool for the configured origin, and close() releases it', async () => {
    const built = createProviderClientFromConfig(
      loadConfig({ PROVIDER_API_KEY: API_KEY, PROVIDER_BASE_URL: 'http://127.0.0.1:1' }),
    );
    try {
      assert.ok(built.client instanceof ProviderClient);
      // Port 1 is closed: the request goes through the pool and is classified.
      const err = await providerError(() => built.client.validateKey());
      assert.equal(err.kind, 'not_reached');
    } finally {
      await built.close();
    }
    assert.equal(built.pool.closed, true);
    await built.close(); // a second close (signal handler + finally) is harmless
  });
});
