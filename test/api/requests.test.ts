/**
 * The intake API at its edge: bad requests of every kind, authentication, rate limiting, request
 * IDs, logging and readiness. Real HTTP against createApp, a real Temporal server; no worker is
 * needed, because none of these requests may start a workflow (each case checks that none did).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { ConfigError } from '../../src/config';
import { createServer } from 'node:http';
import { createApp } from '../../src/api/app';
import { applyServerTimeouts } from '../../src/api/server';
import type { Problem } from '../../src/http/errors';
import {
  apiTestConfig,
  capturingLogger,
  OTHER_TEST_API_KEY,
  startTestApi,
  TEST_API_KEY,
  testClients,
  type ApiResponse,
  type TestApi,
} from '../helpers/api';
import type { ProviderPort } from '../../src/api/health';
import { keyDigest } from '../../src/clients/keys';
import type { Catalog, KeyInfo } from '../../src/provider/wire';
import { orderWorkflowId } from '../../contract/order';
import pino from 'pino';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const catalog: Catalog = {
  categories: [{ title: 'Cards', products: [{ id: 'P1', title: 'Product', enabled: true }] }],
};
const keyInfo: KeyInfo = { username: 'u', apiKey: { type: 'SANDBOX', scope: 'all', isEnabled: true } };

/** A provider that counts calls and can be told to fail. */
function stubProvider() {
  const state = { catalogCalls: 0, failing: false };
  const provider: ProviderPort = {
    getGiftCardCatalog: async () => {
      state.catalogCalls++;
      if (state.failing) throw new Error('provider down');
      return catalog;
    },
    validateKey: async () => {
      if (state.failing) throw new Error('provider down');
      return keyInfo;
    },
  };
  return { provider, state };
}

// A task queue no worker polls: nothing started here may ever run.
const taskQueue = `api-requests-${process.pid}`;
let seq = 0;
const uniqueRef = (label: string) => `REQ-${label}-${process.pid}-${++seq}`;

const mobile = (ref: string) => ({
  type: 'mobile_topup',
  ref,
  planCode: 'PREPAID_DJEZZY',
  msisdn: '0551234567',
  amount: 500,
});
const internet = (ref: string) => ({
  type: 'internet_topup',
  ref,
  lineType: 'ADSL',
  number: '023123456',
  value: 1000,
});
const giftCard = (ref: string) => ({ type: 'gift_card', ref, productId: 'P1', typeId: 'T1', quantity: 1 });

function assertProblem(res: ApiResponse, status: number, type: string): Problem {
  assert.equal(res.status, status, res.text);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  const problem = res.body as Problem;
  assert.equal(problem.status, status);
  assert.equal(problem.type, `/problems/${type}`);
  assert.equal(typeof problem.title, 'string');
  assert.equal(typeof problem.detail, 'string');
  assert.ok(res.headers['x-request-id'], 'X-Request-Id header');
  assert.equal(problem.requestId, res.headers['x-request-id']);
  assert.doesNotMatch(res.text, /at .+\.(ts|js):\d+/, 'no stack trace');
  return problem;
}

function fields(problem: Problem): string[] {
  return (problem.errors ?? []).map((e) => e.field).sort();
}

describe('intake API: requests at the edge', () => {
  let stack: OrderStack;
  let client: Client;
  let api: TestApi;
  const stub = stubProvider();
  const logs = capturingLogger();

  before(async () => {
    stack = await startOrderStack({
      name: 'api-requests',
      sandbox: false,
      api: { taskQueue, provider: stub.provider, logger: logs.logger },
    });
    client = stack.client;
    api = stack.api;
  });
  after(async () => {
    await stack?.stop();
  });

  async function assertNoWorkflow(ref: string) {
    await assert.rejects(
      client.workflow.getHandle(orderWorkflowId(ref)).describe(),
      WorkflowNotFoundError,
      `no workflow may exist for ${JSON.stringify(ref)}`,
    );
  }

  describe('POST /v1/orders with a bad body answers 400 naming every bad field and starts nothing', () => {
    const cases: { name: string; body: (ref: string) => unknown; fields: string[] }[] = [
      { name: 'a missing msisdn', body: (r) => ({ ...mobile(r), msisdn: undefined }), fields: ['msisdn'] },
      {
        name: 'missing planCode (amount may be absent: a fixed plan has its own)',
        body: (r) => ({ ...mobile(r), planCode: undefined, amount: undefined }),
        fields: ['planCode'],
      },
      {
        name: 'a missing quantity',
        body: (r) => ({ ...giftCard(r), quantity: undefined }),
        fields: ['quantity'],
      },
      { name: 'an extra field', body: (r) => ({ ...mobile(r), note: 'hi' }), fields: ['note'] },
      { name: 'two extra fields', body: (r) => ({ ...internet(r), a: 1, b: 2 }), fields: ['a', 'b'] },
      {
        name: 'an amount given as a string',
        body: (r) => ({ ...mobile(r), amount: '500' }),
        fields: ['amount'],
      },
      {
        name: 'a msisdn given as a number',
        body: (r) => ({ ...mobile(r), msisdn: 551234567 }),
        fields: ['msisdn'],
      },
      {
        name: 'a fractional quantity',
        body: (r) => ({ ...giftCard(r), quantity: 1.5 }),
        fields: ['quantity'],
      },
      { name: 'a negative amount', body: (r) => ({ ...mobile(r), amount: -5 }), fields: ['amount'] },
      { name: 'a zero value', body: (r) => ({ ...internet(r), value: 0 }), fields: ['value'] },
      { name: 'a huge amount', body: (r) => ({ ...mobile(r), amount: 1e12 }), fields: ['amount'] },
      { name: 'a huge quantity', body: (r) => ({ ...giftCard(r), quantity: 10_000 }), fields: ['quantity'] },
      { name: 'a fractional amount', body: (r) => ({ ...mobile(r), amount: 10.5 }), fields: ['amount'] },
      {
        name: 'an international msisdn',
        body: (r) => ({ ...mobile(r), msisdn: '+213551234567' }),
        fields: ['msisdn'],
      },
      { name: 'a short msisdn', body: (r) => ({ ...mobile(r), msisdn: '05512345' }), fields: ['msisdn'] },
      {
        name: 'a 9-digit msisdn (mobile numbers have 10)',
        body: (r) => ({ ...mobile(r), msisdn: '055123456' }),
        fields: ['msisdn'],
      },
      {
        name: 'an 8-digit line number',
        body: (r) => ({ ...internet(r), number: '02112345' }),
        fields: ['number'],
      },
      {
        name: 'an 11-digit line number',
        body: (r) => ({ ...internet(r), number: '02112345678' }),
        fields: ['number'],
      },
      {
        name: 'a line number with letters',
        body: (r) => ({ ...internet(r), number: '02312345ab' }),
        fields: ['number'],
      },
      {
        name: 'a bad plan code',
        body: (r) => ({ ...mobile(r), planCode: 'post paid!' }),
        fields: ['planCode'],
      },
      {
        name: 'an unknown line type',
        body: (r) => ({ ...internet(r), lineType: 'FIBER' }),
        fields: ['lineType'],
      },
      { name: 'an unknown type', body: (r) => ({ ...mobile(r), type: 'crypto' }), fields: ['type'] },
      { name: 'no type', body: (r) => ({ ...mobile(r), type: undefined }), fields: ['type'] },
      { name: 'a null ref', body: (r) => ({ ...mobile(r), ref: null, note: r }), fields: ['note', 'ref'] },
      {
        name: 'every field of a mobile top-up wrong at once',
        body: (r) => ({ type: 'mobile_topup', ref: '', planCode: 7, msisdn: 'x', amount: -1, extra: r }),
        fields: ['amount', 'extra', 'msisdn', 'planCode', 'ref'],
      },
      { name: 'an array body', body: () => [1, 2], fields: ['(body)'] },
    ];
    for (const c of cases) {
      it(`${c.name} → 400 naming ${c.fields.join(', ')}`, async () => {
        const ref = uniqueRef('bad');
        const res = await api.request('POST', '/v1/orders', { body: c.body(ref) });
        const problem = assertProblem(res, 400, 'validation-error');
        assert.deepEqual(fields(problem), c.fields);
        for (const e of problem.errors ?? []) assert.ok(e.message.length > 0);
        await assertNoWorkflow(ref);
      });
    }

    const hostileRefs: [string, string][] = [
      ['path traversal', '../../etc/passwd'],
      ['a dot-dot segment', '..'],
      ['a leading dash', '-rf'],
      ['unicode', 'commande-été'],
      ['a right-to-left override', 'abc\u202Edef'],
      ['a null byte', 'abc\u0000def'],
      ['too long (65 characters)', 'A'.repeat(65)],
      ['empty', ''],
      ['SQL-ish', "1' OR '1'='1"],
      ['SQL comment', 'x;DROP TABLE orders;--'],
      ['a slash', 'a/b'],
      ['a space', 'a b'],
    ];
    for (const [name, ref] of hostileRefs) {
      it(`a hostile ref in the body (${name}) → 400 naming ref`, async () => {
        const res = await api.request('POST', '/v1/orders', { body: mobile(ref) });
        assert.deepEqual(fields(assertProblem(res, 400, 'validation-error')), ['ref']);
        await assertNoWorkflow(ref);
      });
    }
  });

  describe('POST /v1/orders that cannot be read answers 4xx problem+json and starts nothing', () => {
    it('an oversized body → 413', async () => {
      const ref = uniqueRef('big');
      const res = await api.request('POST', '/v1/orders', {
        body: { ...mobile(ref), pad: 'x'.repeat(20_000) },
      });
      assertProblem(res, 413, 'payload-too-large');
      await assertNoWorkflow(ref);
    });

    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      it(`a ${contentType} body → 415`, async () => {
        const ref = uniqueRef('type');
        const res = await api.request('POST', '/v1/orders', {
          body: JSON.stringify(mobile(ref)),
          headers: { 'content-type': contentType },
        });
        assertProblem(res, 415, 'unsupported-media-type');
        await assertNoWorkflow(ref);
      });
    }

    it('a JSON body in a charset other than UTF-8 → 415', async () => {
      const ref = uniqueRef('charset');
      const res = await api.request('POST', '/v1/orders', {
        body: JSON.stringify(mobile(ref)),
        headers: { 'content-type': 'application/json; charset=latin1' },
      });
      assertProblem(res, 415, 'unsupported-media-type');
      await assertNoWorkflow(ref);
    });

    // body-parser decodes any utf-* charset it is told; RFC 8259 JSON is UTF-8 only.
    for (const [charset, encoding] of [
      ['utf-16', 'utf16le'],
      ['UTF-16LE', 'utf16le'],
      ['utf-32', 'utf8'],
    ] as const) {
      it(`a JSON body declared charset=${charset} → 415, even when it decodes`, async () => {
        const ref = uniqueRef('utf16');
        const res = await api.request('POST', '/v1/orders', {
          body: Buffer.from(JSON.stringify(mobile(ref)), encoding),
          headers: { 'content-type': `application/json; charset=${charset}` },
        });
        const problem = assertProblem(res, 415, 'unsupported-media-type');
        assert.match(problem.detail, /UTF-8/);
        await assertNoWorkflow(ref);
      });
    }

    for (const contentType of ['application/json; charset=utf-8', 'application/json; charset="UTF-8"']) {
      it(`a JSON body declared ${contentType} is accepted`, async () => {
        const res = await api.request('POST', '/v1/orders', {
          body: JSON.stringify(mobile(uniqueRef('utf8'))),
          headers: { 'content-type': contentType },
        });
        assert.equal(res.status, 201, res.text);
      });
    }

    // I-JSON (RFC 7493): a proxy or signer that keeps the first of two equal names sees another order.
    const duplicates: [string, (ref: string) => string, string][] = [
      [
        'amount and ref twice',
        (ref) =>
          `{"type":"mobile_topup","ref":"${ref}","planCode":"PREPAID_DJEZZY","msisdn":"0551234567","amount":5,"amount":7,"ref":"${ref}-y"}`,
        'amount',
      ],
      [
        'a name repeated through an escape',
        (ref) =>
          `{"type":"mobile_topup","ref":"${ref}","planCode":"PREPAID_DJEZZY","msisdn":"0551234567","amount":5,"\u0061mount":7}`,
        'amount',
      ],
      [
        'a nested duplicate',
        (ref) =>
          `{"type":"gift_card","ref":"${ref}","productId":"P1","typeId":"T1","quantity":1,"extra":{"a":1,"a":2}}`,
        'extra.a',
      ],
    ];
    for (const [name, body, field] of duplicates) {
      it(`duplicate member names (${name}) → 400 naming ${field}`, async () => {
        const ref = uniqueRef('dup');
        const res = await api.request('POST', '/v1/orders', {
          body: body(ref),
          headers: { 'content-type': 'application/json' },
        });
        assert.deepEqual(fields(assertProblem(res, 400, 'validation-error')), [field]);
        await assertNoWorkflow(ref);
      });
    }

    it('the same name in two different objects is no duplicate', async () => {
      const ref = uniqueRef('nodup');
      const res = await api.request('POST', '/v1/orders/batch', {
        body: `{"orders":[${JSON.stringify(mobile(ref))},${JSON.stringify(mobile(`${ref}-2`))}]}`,
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 200, res.text);
    });

    it('a body without a content type → 415', async () => {
      const ref = uniqueRef('notype');
      const res = await api.request('POST', '/v1/orders', { body: Buffer.from(JSON.stringify(mobile(ref))) });
      assertProblem(res, 415, 'unsupported-media-type');
      await assertNoWorkflow(ref);
    });

    it('broken JSON → 400 malformed-request', async () => {
      const ref = uniqueRef('broken');
      const res = await api.request('POST', '/v1/orders', {
        body: `{"type":"mobile_topup","ref":"${ref}",`,
        headers: { 'content-type': 'application/json' },
      });
      assertProblem(res, 400, 'malformed-request');
      await assertNoWorkflow(ref);
    });

    it('a JSON null → 400', async () => {
      const res = await api.request('POST', '/v1/orders', {
        body: 'null',
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 400);
    });

    it('an empty JSON body → 400 naming the body', async () => {
      const res = await api.request('POST', '/v1/orders', {
        headers: { 'content-type': 'application/json' },
      });
      assert.deepEqual(fields(assertProblem(res, 400, 'validation-error')), ['(body)']);
    });

    it('a __proto__ key → 400 naming it as an unknown field, and nothing is polluted', async () => {
      const ref = uniqueRef('proto');
      const res = await api.request('POST', '/v1/orders', {
        body: `{"type":"mobile_topup","ref":"${ref}","planCode":"PREPAID_DJEZZY","msisdn":"0551234567","amount":5,"__proto__":{"polluted":true}}`,
        headers: { 'content-type': 'application/json' },
      });
      assert.deepEqual(fields(assertProblem(res, 400, 'validation-error')), ['__proto__']);
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      await assertNoWorkflow(ref);
    });
  });

  describe('hostile refs in the path answer 400 naming ref', () => {
    const paths: [string, string][] = [
      ['encoded path traversal', '/v1/orders/..%2F..%2Fetc%2Fpasswd'],
      ['a dot-dot segment', '/v1/orders/..'],
      ['an encoded dot-dot', '/v1/orders/%2E%2E'],
      ['unicode', '/v1/orders/%C3%A9t%C3%A9'],
      ['too long', `/v1/orders/${'A'.repeat(65)}`],
      ['SQL-ish', "/v1/orders/1'%20OR%20'1'%3D'1"],
      ['a null byte', '/v1/orders/abc%00def'],
      ['an encoded slash', '/v1/orders/a%2Fb'],
    ];
    for (const [name, path] of paths) {
      it(`GET with ${name} → 400 naming ref`, async () => {
        const res = await api.request('GET', path);
        assert.deepEqual(fields(assertProblem(res, 400, 'validation-error')), ['ref']);
      });
    }

    it('GET with broken %-encoding → 400', async () => {
      assertProblem(await api.request('GET', '/v1/orders/%E0%A4%A'), 400, 'malformed-request');
    });

    it('POST review with a hostile ref and a bad body → 400 naming ref and every bad body field', async () => {
      const res = await api.request('POST', '/v1/orders/..%2Fx/review', {
        body: { decision: 'MAYBE', x: 1 },
      });
      assert.deepEqual(fields(assertProblem(res, 400, 'validation-error')), ['decision', 'note', 'ref', 'x']);
    });
  });

  describe('reading orders', () => {
    it('GET an unknown ref → 404 order-not-found', async () => {
      assertProblem(await api.request('GET', `/v1/orders/${uniqueRef('none')}`), 404, 'order-not-found');
    });

    it('POST review on an unknown ref → 404 order-not-found', async () => {
      const res = await api.request('POST', `/v1/orders/${uniqueRef('none')}/review`, {
        body: { decision: 'FULFILLED', operator: 'op', note: 'n' },
      });
      assertProblem(res, 404, 'order-not-found');
    });

    const badQueries: [string, string[]][] = [
      ['status=BOGUS', ['status']],
      ['type=crypto', ['type']],
      ['pageSize=0', ['pageSize']],
      ['pageSize=1000', ['pageSize']],
      ['pageSize=abc', ['pageSize']],
      ['status=FULFILLED&status=FAILED', ['status']],
      ['pageToken=!!!', ['pageToken']],
      ['foo=1', ['foo']],
      ['status=BOGUS&pageSize=-1&bar=2', ['bar', 'pageSize', 'status']],
    ];
    for (const [query, expected] of badQueries) {
      it(`GET /v1/orders?${query} → 400 naming ${expected.join(', ')}`, async () => {
        const res = await api.request('GET', `/v1/orders?${query}`);
        assert.deepEqual(fields(assertProblem(res, 400, 'validation-error')), expected);
      });
    }

    it('GET /v1/orders with a well-formed but foreign page token → 400 naming pageToken', async () => {
      const token = Buffer.from('not a temporal token').toString('base64url');
      const res = await api.request('GET', `/v1/orders?pageToken=${token}`);
      assert.deepEqual(fields(assertProblem(res, 400, 'validation-error')), ['pageToken']);
    });
  });

  describe('authentication', () => {
    it('no Authorization header → 401 with a Bearer challenge', async () => {
      const res = await api.request('GET', '/v1/orders', { apiKey: null });
      assertProblem(res, 401, 'unauthorized');
      assert.match(String(res.headers['www-authenticate']), /^Bearer /);
    });

    it('a wrong key → 401 invalid_token', async () => {
      const res = await api.request('GET', '/v1/orders', { apiKey: 'not-a-key' });
      assertProblem(res, 401, 'unauthorized');
      assert.match(String(res.headers['www-authenticate']), /invalid_token/);
    });

    it('a configured key with a suffix → 401', async () => {
      assertProblem(
        await api.request('GET', '/v1/orders', { apiKey: `${OTHER_TEST_API_KEY}x` }),
        401,
        'unauthorized',
      );
    });

    it('a Basic scheme → 401', async () => {
      const res = await api.request('GET', '/v1/orders', {
        apiKey: null,
        headers: { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` },
      });
      assertProblem(res, 401, 'unauthorized');
    });

    it('the right key → 200, and so does the client’s second key', async () => {
      assert.equal((await api.request('GET', '/v1/orders?pageSize=1')).status, 200);
      assert.equal(
        (await api.request('GET', '/v1/orders?pageSize=1', { apiKey: OTHER_TEST_API_KEY })).status,
        200,
      );
    });

    it('without a key, a POST is refused before its body is read (401, not 413 or 400)', async () => {
      const ref = uniqueRef('noauth');
      const res = await api.request('POST', '/v1/orders', {
        apiKey: null,
        body: { ...mobile(ref), pad: 'x'.repeat(20_000) },
      });
      assertProblem(res, 401, 'unauthorized');
      await assertNoWorkflow(ref);
    });

    it('without a key, an unknown /v1 route → 401 (routes are not revealed)', async () => {
      assertProblem(await api.request('GET', '/v1/secret', { apiKey: null }), 401, 'unauthorized');
    });

    for (const path of ['/healthz', '/openapi.json']) {
      it(`${path} is public → 200 without a key`, async () => {
        assert.equal((await api.request('GET', path, { apiKey: null })).status, 200);
      });
    }

    it('the app refuses to start with neither API_CLIENTS_FILE nor API_KEYS, or with both', () => {
      const start = (env: Record<string, string>) => () =>
        createApp({
          client,
          taskQueue,
          provider: stub.provider,
          config: apiTestConfig(env),
          logger: pino({ level: 'silent' }),
        });
      assert.throws(
        start({ API_CLIENTS_FILE: '' }),
        (err: unknown) =>
          err instanceof ConfigError &&
          /API_CLIENTS_FILE: required/.test(err.message) &&
          /API_KEYS/.test(err.message),
      );
      assert.throws(
        start({ API_KEYS: 'some-key' }),
        (err: unknown) =>
          err instanceof ConfigError && /API_CLIENTS_FILE, API_KEYS: set one, not both/.test(err.message),
      );
      assert.throws(
        start({ API_CLIENTS_FILE: '/nonexistent/clients.yaml' }),
        (err: unknown) =>
          err instanceof ConfigError &&
          /API_CLIENTS_FILE: cannot read \/nonexistent\/clients.yaml \(ENOENT\)/.test(err.message),
      );
    });
  });

  describe('unknown routes and methods', () => {
    it('an unknown path → 404 problem+json', async () => {
      assertProblem(await api.request('GET', '/nope', { apiKey: null }), 404, 'not-found');
    });
    it('an unknown /v1 path with a key → 404 problem+json', async () => {
      assertProblem(await api.request('GET', '/v1/nope'), 404, 'not-found');
    });
    it('a method a documented path does not have → 405 problem+json with Allow', async () => {
      const deleted = await api.request('DELETE', '/v1/orders/ABC');
      assertProblem(deleted, 405, 'method-not-allowed');
      assert.equal(deleted.headers.allow, 'GET, HEAD');
      const put = await api.request('PUT', '/v1/orders');
      assertProblem(put, 405, 'method-not-allowed');
      assert.equal(put.headers.allow, 'POST, GET, HEAD');
    });
    it('a blank operator or note in a review → 400 naming the field as blank', async () => {
      const answer = await api.request('POST', '/v1/orders/ABC/review', {
        body: { decision: 'FULFILLED', operator: '   ', note: 'ok' },
      });
      assertProblem(answer, 400, 'validation-error');
      assert.match(answer.text, /operator/);
      assert.match(answer.text, /must not be blank/);
    });
  });

  describe('request IDs and logs', () => {
    it('a safe X-Request-Id is echoed; an unsafe one is replaced by a generated one', async () => {
      const kept = await api.request('GET', '/healthz', { headers: { 'x-request-id': 'trace-abc.123' } });
      assert.equal(kept.headers['x-request-id'], 'trace-abc.123');
      const replaced = await api.request('GET', '/healthz', {
        headers: { 'x-request-id': `a"b${'x'.repeat(200)}` },
      });
      assert.match(String(replaced.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    });

    it('every request logs one line with request ID, method, route, status and duration — and no key or personal data', async () => {
      const requestId = `log-check-${process.pid}`;
      const ref = uniqueRef('log');
      await api.request('POST', '/v1/orders', {
        body: { ...mobile(ref), msisdn: '0551234567', extra: true },
        headers: { 'x-request-id': requestId },
      });
      await new Promise((r) => setTimeout(r, 50));
      const mine = logs.lines.filter((l) => l.requestId === requestId);
      const requestLines = mine.filter((l) => l.res !== undefined);
      assert.equal(requestLines.length, 1, JSON.stringify(mine));
      const line = requestLines[0]!;
      assert.deepEqual(line.req, { method: 'POST', path: '/v1/orders' });
      assert.deepEqual(line.res, { statusCode: 400 });
      assert.equal(line.route, '/v1/orders');
      assert.equal(typeof line.durationMs, 'number');
      assert.equal(line.client, 'shop', 'the authenticated client');
      assert.equal(line.keyId, 'k1', 'which of its keys (an id, not the key)');
      const hashes = [TEST_API_KEY, OTHER_TEST_API_KEY].map((key) => keyDigest(key).toString('hex'));
      for (const raw of logs.raw) {
        assert.doesNotMatch(raw, /0551234567/, 'no phone number in the logs');
        assert.ok(!raw.includes('test-api-key'), 'no API key in the logs');
        assert.doesNotMatch(raw, /Bearer [^<]/, 'no Authorization header value in the logs');
        for (const hash of hashes) assert.ok(!raw.includes(hash), 'no key hash in the logs');
      }
      for (const l of logs.lines) assert.ok(l.requestId, `every line has a request ID: ${JSON.stringify(l)}`);
    });
  });

  describe('the gift-card catalog', () => {
    it('is served from the provider and cached: two reads, one provider call', async () => {
      const before = stub.state.catalogCalls;
      const [a, b] = await Promise.all([
        api.request('GET', '/v1/gift-cards/catalog'),
        api.request('GET', '/v1/gift-cards/catalog'),
      ]);
      assert.equal(a.status, 200);
      // This stub provider tells no product's types (no checkProduct): the products come without.
      const view = {
        categories: catalog.categories.map((c) => ({
          ...c,
          products: c.products.map((p) => ({ ...p, types: [] })),
        })),
      };
      assert.deepEqual(a.body, view);
      assert.deepEqual(b.body, view);
      assert.equal((await api.request('GET', '/v1/gift-cards/catalog')).status, 200);
      assert.equal(stub.state.catalogCalls - before, 1);
    });
  });

  describe('readiness', () => {
    it('with Temporal and the provider up but no worker polling the task queue → 503 naming the worker', async () => {
      // Orders would be accepted and sit: not ready (test/api/readiness.test.ts has the ready case).
      const res = await api.request('GET', '/readyz', { apiKey: null });
      const problem = assertProblem(res, 503, 'temporarily-unavailable');
      assert.match(problem.detail, new RegExp(`no worker polls task queue ${taskQueue}`));
      assert.doesNotMatch(problem.detail, /provider|search attributes|namespace/);
    });

    it('with the provider down → 503 problem naming the provider, with Retry-After; the catalog → 502', async () => {
      const down = stubProvider();
      down.state.failing = true;
      const other = await startTestApi({ client, taskQueue, provider: down.provider });
      try {
        const res = await other.request('GET', '/readyz', { apiKey: null });
        assert.match(assertProblem(res, 503, 'temporarily-unavailable').detail, /provider/);
        assert.ok(res.headers['retry-after']);
        const catalogRes = await other.request('GET', '/v1/gift-cards/catalog');
        const problem = assertProblem(catalogRes, 502, 'provider-unavailable');
        assert.doesNotMatch(problem.detail, /provider down/, 'internal error messages stay internal');
      } finally {
        await other.close();
      }
    });

    it('with Temporal unreachable → 503 on /readyz and on order routes, never a 500', async () => {
      const deadConnection = Connection.lazy({ address: '127.0.0.1:1' });
      const deadClient = new Client({ connection: deadConnection });
      const other = await startTestApi({
        client: deadClient,
        taskQueue,
        provider: stub.provider,
        config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '500', API_READINESS_TIMEOUT_MS: '500' }),
      });
      try {
        const ready = await other.request('GET', '/readyz', { apiKey: null });
        assert.match(assertProblem(ready, 503, 'temporarily-unavailable').detail, /Temporal/);
        const res = await other.request('POST', '/v1/orders', { body: mobile(uniqueRef('dead')) });
        assertProblem(res, 503, 'temporarily-unavailable');
        assert.ok(res.headers['retry-after']);
        assertProblem(await other.request('GET', '/v1/orders/ABC'), 503, 'temporarily-unavailable');
      } finally {
        await other.close();
        await deadConnection.close();
      }
    });
  });

  describe('timeouts', () => {
    it('a request still running after API_REQUEST_TIMEOUT_MS → 503 problem with Retry-After, not a hung client', async () => {
      const slow: ProviderPort = {
        ...stub.provider,
        getGiftCardCatalog: () => new Promise((resolve) => setTimeout(() => resolve(catalog), 1_500)),
      };
      const impatient = await startTestApi({
        client,
        taskQueue,
        provider: slow,
        config: apiTestConfig({ API_REQUEST_TIMEOUT_MS: '300' }),
      });
      try {
        const started = Date.now();
        const res = await impatient.request('GET', '/v1/gift-cards/catalog');
        assertProblem(res, 503, 'temporarily-unavailable');
        assert.ok(res.headers['retry-after']);
        assert.ok(Date.now() - started < 1_200, 'answered at the deadline');
      } finally {
        await impatient.close();
      }
    });

    it('the server applies the request, headers and keep-alive timeouts (headers capped at the request timeout)', () => {
      const server = createServer();
      applyServerTimeouts(server, {
        API_REQUEST_TIMEOUT_MS: 8_000,
        API_HEADERS_TIMEOUT_MS: 10_000,
        API_KEEP_ALIVE_TIMEOUT_MS: 4_000,
      });
      assert.equal(server.requestTimeout, 8_000);
      assert.equal(server.headersTimeout, 8_000);
      assert.equal(server.keepAliveTimeout, 4_000);
    });
  });

  describe('rate limiting', () => {
    it('past API_RATE_LIMIT_PER_MINUTE a client gets 429 with Retry-After, whichever of its keys it uses; another client has its own budget', async () => {
      const limited = await startTestApi({
        client,
        taskQueue,
        provider: stub.provider,
        config: apiTestConfig({ API_RATE_LIMIT_PER_MINUTE: '3' }),
      });
      try {
        for (const apiKey of [TEST_API_KEY, OTHER_TEST_API_KEY, TEST_API_KEY])
          assert.equal((await limited.request('GET', '/v1/gift-cards/catalog', { apiKey })).status, 200);
        const res = await limited.request('GET', '/v1/gift-cards/catalog');
        assertProblem(res, 429, 'rate-limited');
        assert.match(String(res.headers['retry-after']), /^\d+$/);
        // The client's second key (a rotation) is the same client: no fresh budget.
        assertProblem(
          await limited.request('GET', '/v1/gift-cards/catalog', { apiKey: OTHER_TEST_API_KEY }),
          429,
          'rate-limited',
        );
        const other = await limited.request('GET', '/v1/gift-cards/catalog', {
          apiKey: testClients.acme.key,
        });
        assert.equal(other.status, 200);
      } finally {
        await limited.close();
      }
    });

    it('callers without a valid key are limited by IP (guessing keys is throttled too)', async () => {
      const limited = await startTestApi({
        client,
        taskQueue,
        provider: stub.provider,
        config: apiTestConfig({ API_RATE_LIMIT_PER_MINUTE: '2' }),
      });
      try {
        for (let i = 0; i < 2; i++)
          assert.equal((await limited.request('GET', '/v1/orders', { apiKey: 'guess' })).status, 401);
        assertProblem(await limited.request('GET', '/v1/orders', { apiKey: 'guess' }), 429, 'rate-limited');
      } finally {
        await limited.close();
      }
    });
  });
});
