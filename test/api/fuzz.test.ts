/**
 * Hostile input, generated: fast-check throws arbitrary JSON, near-valid orders with one field
 * mutated, broken bodies, header variants and hostile paths at the real intake API (createApp on
 * a free port, a real Temporal server; no worker, because refusals must not need one).
 *
 * Every property checks the same contract: never a 5xx; every 4xx is application/problem+json
 * that names its cause (a validation problem lists each bad field); and no refused request starts
 * a workflow. The last is checked per request where a ref can be named (describe → not found)
 * and in total by counting the workflows on this file's own task queue against the 201s.
 *
 * Runs are bounded (NUM_RUNS per property) and seeded: FUZZ_SEED replays a failure, whose seed
 * and path fast-check prints.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import type { Problem } from '../../src/http/errors';
import type { ProviderPort } from '../../src/api/health';
import { apiTestConfig, TEST_API_KEY, type ApiResponse, type TestApi } from '../helpers/api';
import { canonicalJson } from '../../src/orders/order.service';
import { OrderRef, OrderRequest } from '../../contract/schemas';
import { orderWorkflowId } from '../../contract/order';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const SEED = Number(process.env.FUZZ_SEED ?? 20_251_121);
const NUM_RUNS = Number(process.env.FUZZ_RUNS ?? 200);
const fcParams = { numRuns: NUM_RUNS, seed: SEED, includeErrorInReport: true };

// A task queue no worker polls, so every workflow on it was started by a request of this file.
const taskQueue = `api-fuzz-${randomUUID()}`;
let seq = 0;
const freshRef = () => `FUZZ-${process.pid}-${++seq}`;

const provider: ProviderPort = {
  getGiftCardCatalog: async () => ({ categories: [] }),
  validateKey: async () => ({ username: 'u', apiKey: { type: 'SANDBOX', scope: 'all', isEnabled: true } }),
};

// ---- generators ----

const validOrder = (ref: string) =>
  fc.oneof(
    fc.record({
      type: fc.constant('mobile_topup'),
      ref: fc.constant(ref),
      planCode: fc.constantFrom('PREPAID_DJEZZY', 'PREPAID_MOBILIS', 'PREPAID_OOREDOO'),
      msisdn: fc.stringMatching(/^05\d{8}$/),
      amount: fc.integer({ min: 1, max: 100_000 }),
    }),
    fc.record({
      type: fc.constant('internet_topup'),
      ref: fc.constant(ref),
      lineType: fc.constant('ADSL'),
      number: fc.stringMatching(/^0\d{8}$/),
      value: fc.integer({ min: 1, max: 100_000 }),
    }),
    fc.record({
      type: fc.constant('gift_card'),
      ref: fc.constant(ref),
      productId: fc.constantFrom('GOOGLE_PLAY', 'STEAM'),
      typeId: fc.constantFrom('GOOGLE_PLAY_1000', 'STEAM_5_USD'),
      quantity: fc.integer({ min: 1, max: 100 }),
    }),
  ) as fc.Arbitrary<Record<string, unknown>>;

/** Values that break a field: wrong types, edges, huge numbers, look-alike unicode, injection. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    null,
    '',
    ' ',
    true,
    [],
    {},
    0,
    -1,
    1.5,
    -0,
    1e308,
    2 ** 53 + 2,
    Number.MAX_SAFE_INTEGER,
    100_001,
    '500',
    '٠٥٥١٢٣٤٥٦٧', // Arabic-Indic digits: \d must not match them
    '０５５１２３４５６７', // full-width digits
    '0551234567\n',
    'PREPAID_DJEZZY\u0000',
    '../../etc/passwd',
    'a/b',
    '..',
    '.',
    '-rf',
    'x'.repeat(65),
    'x'.repeat(10_000),
    '<script>alert(1)</script>',
    "' OR 1=1 --",
    '${jndi:ldap://x}',
    '__proto__',
    JSON.parse('{"__proto__":{"polluted":true}}') as unknown,
    'mobile_topup',
    'gift_card',
  ),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.double(),
  fc.integer(),
  fc.jsonValue({ maxDepth: 2 }),
);

/** Keys that must never be taken for a field, least of all for the object's prototype. */
const hostileKey = fc.oneof(
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    'valueOf',
    'type ',
    'Ref',
    '',
  ),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
);

type Mutation =
  | { kind: 'set'; field: string; value: unknown }
  | { kind: 'delete'; field: string }
  | { kind: 'add'; field: string; value: unknown };

/**
 * JSON text of `order` with one mutation. Built as text, so a `__proto__` key arrives as a plain
 * key on the wire, exactly as an attacker would send it.
 */
function mutatedJson(order: Record<string, unknown>, mutation: Mutation): string {
  const entries = Object.entries(order).filter(
    ([key]) => mutation.kind !== 'delete' || key !== mutation.field,
  );
  const pairs = entries.map(([key, value]) => {
    const v = mutation.kind === 'set' && key === mutation.field ? mutation.value : value;
    return `${JSON.stringify(key)}:${JSON.stringify(v) ?? 'null'}`;
  });
  if (mutation.kind === 'add')
    pairs.push(`${JSON.stringify(mutation.field)}:${JSON.stringify(mutation.value) ?? 'null'}`);
  return `{${pairs.join(',')}}`;
}

const nearValidOrder = fc
  .tuple(
    validOrder('REF-PLACEHOLDER'),
    fc.nat(),
    fc.constantFrom('set', 'delete', 'add'),
    hostileValue,
    hostileKey,
  )
  .map(([order, pick, kind, value, key]): { order: Record<string, unknown>; mutation: Mutation } => {
    const fields = Object.keys(order);
    const field = fields[pick % fields.length]!;
    const mutation: Mutation =
      kind === 'add'
        ? { kind, field: key, value }
        : kind === 'delete'
          ? { kind, field }
          : { kind, field, value };
    return { order, mutation };
  });

/** Raw bodies that are not (valid) JSON, or are too big, deep or oddly encoded. */
const brokenBody = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
  fc.constantFrom(
    '{',
    '{"type":"mobile_topup",',
    '\uFEFF{"type":"mobile_topup"}',
    '{"a":1}\u0000',
    'null',
    '"just a string"',
    '12345',
    '[]',
    '[{"type":"mobile_topup"}]',
    '{"type":"mobile_topup","type":"gift_card"}',
    '{"amount":1e400}',
    '{"amount":-1e-400}',
    '{"a":' + '['.repeat(5_000) + ']'.repeat(5_000) + '}',
    '{"x":"' + 'y'.repeat(20_000) + '"}',
  ),
  fc
    .uint8Array({ minLength: 1, maxLength: 8 })
    .map((bytes) => Buffer.concat([Buffer.from('{"ref":"'), Buffer.from(bytes), Buffer.from('"}')])),
);

/** Header values undici will send (no CR, LF or NUL): printable ASCII and Latin-1. */
const headerText = fc
  .string({
    unit: fc
      .oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0xa0, max: 0xff }))
      .map((c) => String.fromCharCode(c)),
    maxLength: 60,
  })
  .map((s) => s.trim());

const contentTypes = fc.oneof(
  fc.constantFrom(
    undefined,
    '',
    'application/json',
    'APPLICATION/JSON',
    'application/json; charset=utf-8',
    'application/json; charset=UTF-16',
    'application/json; charset=latin1',
    'application/json;;;',
    'application/json, text/plain',
    'application/problem+json',
    'application/merge-patch+json',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'text/plain',
    'text/json',
    '*/*',
    'json',
  ),
  headerText,
);

const validAuth = `Bearer ${TEST_API_KEY}`;
/**
 * Would the server see our key? HTTP trims a header value's surrounding whitespace (RFC 9110 5.5)
 * and auth schemes are case-insensitive (RFC 9110 11.1); the key itself must match exactly.
 */
const presentsValidKey = (authorization: string | undefined) =>
  /^Bearer (.*)$/i.exec(authorization?.trim() ?? '')?.[1] === TEST_API_KEY;
const authorizations = fc.oneof(
  fc.constantFrom(
    undefined,
    '',
    validAuth,
    'Bearer',
    'Bearer ',
    `bearer ${TEST_API_KEY}`,
    `Bearer  ${TEST_API_KEY}`,
    `Bearer ${TEST_API_KEY} `,
    `Bearer ${TEST_API_KEY}x`,
    `Basic ${Buffer.from(`${TEST_API_KEY}:`).toString('base64')}`,
    `Token ${TEST_API_KEY}`,
    `Bearer ${'k'.repeat(600)}`,
    'Bearer ünïcödé',
  ),
  headerText.map((s) => `Bearer ${s}`),
  headerText,
);

const contentEncodings = fc.constantFrom(
  undefined,
  undefined,
  undefined,
  'identity',
  'gzip',
  'deflate',
  'br',
  'compress',
  'x-custom',
);

/** Refs as they might appear in a path: unicode, dots, slashes (encoded or not), control bytes. */
const hostileRefSegment = fc.oneof(
  fc.constantFrom(
    '.',
    '..',
    '%2e',
    '%2e%2e',
    '.%2e',
    'a%2Fb',
    'a%2fb',
    '%2F',
    'a%5Cb',
    '%00',
    'a%00b',
    '%',
    '%zz',
    '%E0%A4%A',
    '%C0%AF',
    '%F0%9F%92%A9',
    'a%20b',
    '-x',
    '_x',
    'x'.repeat(65),
    'x'.repeat(64),
    'unknown-but-valid',
    'A.B_C-D',
    '~x',
    'a;b',
    'a,b',
    'a+b',
    '*',
  ),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).map(encodeURIComponent),
  fc.string({ unit: fc.constantFrom(..."abcXYZ019._-~!$&'()*+,;=:@"), minLength: 1, maxLength: 70 }),
);

// ---- the contract every answer must keep ----

function isProblem(res: ApiResponse): boolean {
  return /^application\/problem\+json/.test(String(res.headers['content-type']));
}

/** Never a 5xx; every 4xx a problem document naming its cause. Returns the problem, if any. */
function assertAnswerContract(res: ApiResponse, context: string): Problem | undefined {
  assert.ok(res.status < 500, `${context}: HTTP ${res.status} ${res.text.slice(0, 300)}`);
  if (res.status < 400) return undefined;
  assert.ok(
    isProblem(res),
    `${context}: a ${res.status} must be application/problem+json, got ${String(res.headers['content-type'])}`,
  );
  const problem = res.body as Problem;
  assert.equal(problem.status, res.status, context);
  assert.match(problem.type, /^\/problems\/[a-z-]+$/, context);
  assert.equal(typeof problem.title, 'string', context);
  assert.ok(problem.title.length > 0, context);
  assert.equal(typeof problem.detail, 'string', context);
  assert.doesNotMatch(res.text, /at .+\.(ts|js):\d+/, `${context}: no stack trace in the answer`);
  if (problem.type === '/problems/validation-error') {
    assert.ok(
      Array.isArray(problem.errors) && problem.errors.length > 0,
      `${context}: a validation problem lists its fields`,
    );
    for (const error of problem.errors) {
      // A field may be "" when the client sent a key "": that is its name.
      assert.equal(typeof error.field, 'string', `${context}: each error names a field`);
      assert.equal(typeof error.message, 'string', context);
      assert.ok(error.message.length > 0, `${context}: each error says what is wrong`);
    }
  }
  return problem;
}

function fieldsOf(problem: Problem | undefined): string[] {
  return (problem?.errors ?? []).map((e) => e.field);
}

describe('intake API under generated hostile input', () => {
  let stack: OrderStack;
  let client: Client;
  let api: TestApi;
  /** Refs of the orders a 201 created: the only workflows that may exist on the task queue. */
  const created = new Set<string>();

  before(async () => {
    // A rate limit would turn most runs into 429s and hide what the edge does with the input.
    stack = await startOrderStack({
      name: 'api-fuzz',
      sandbox: false,
      api: {
        taskQueue,
        provider,
        config: apiTestConfig({
          API_RATE_LIMIT_PER_MINUTE: '1000000',
          API_ORDERS_PER_MINUTE: '1000000',
          API_CONCURRENT_REQUESTS: '1000',
        }),
      },
    });
    client = stack.client;
    api = stack.api;
  });

  after(async () => {
    await stack?.stop();
  });

  /** A refused request with this ref must not have started its workflow (describe is strongly consistent). */
  async function assertNoWorkflow(ref: unknown, context: string): Promise<void> {
    if (typeof ref !== 'string' || !OrderRef.safeParse(ref).success || created.has(ref)) return;
    await assert.rejects(
      client.workflow.getHandle(orderWorkflowId(ref)).describe(),
      WorkflowNotFoundError,
      `${context}: a workflow exists for ${ref}`,
    );
  }

  /** Records a 201 and checks it was deserved: a valid body whose ref was new. */
  function noteCreated(res: ApiResponse, ref: unknown, context: string): void {
    if (res.status !== 201) return;
    assert.equal(typeof ref, 'string', context);
    assert.ok(!created.has(ref as string), `${context}: 201 for a ref that already had an order`);
    created.add(ref as string);
  }

  it('arbitrary JSON bodies are refused with a problem, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 4 }), async (value) => {
        const res = await api.request('POST', '/v1/orders', {
          body: JSON.stringify(value),
          headers: { 'content-type': 'application/json' },
        });
        const context = `body ${JSON.stringify(value)?.slice(0, 200)}`;
        const problem = assertAnswerContract(res, context);
        const ref = (value as { ref?: unknown } | null)?.ref;
        if (OrderRequest.safeParse(value).success) return noteCreated(res, ref, context);
        assert.ok(res.status === 400, `${context}: HTTP ${res.status}`);
        assert.ok(problem, context);
        await assertNoWorkflow(ref, context);
      }),
      fcParams,
    );
  });

  it('near-valid orders with one field mutated: 400 naming that field, or 201 only if still valid', async () => {
    await fc.assert(
      fc.asyncProperty(nearValidOrder, async ({ order, mutation }) => {
        const ref = freshRef();
        const text = mutatedJson({ ...order, ref }, mutation);
        const context = `${mutation.kind} ${JSON.stringify(mutation.field)}: ${text.slice(0, 300)}`;
        const res = await api.request('POST', '/v1/orders', {
          body: text,
          headers: { 'content-type': 'application/json' },
        });
        const problem = assertAnswerContract(res, context);
        const parsed = JSON.parse(text) as Record<string, unknown>;
        if (OrderRequest.safeParse(parsed).success) {
          // The mutation happened to be valid (say, another amount in range): an order like any other.
          assert.ok([200, 201, 409].includes(res.status), `${context}: HTTP ${res.status}`);
          return noteCreated(res, parsed.ref, context);
        }
        assert.equal(res.status, 400, `${context}: HTTP ${res.status} ${res.text.slice(0, 200)}`);
        assert.equal(problem?.type, '/problems/validation-error', context);
        // The mutated field is named, unless the mutation changed which fields exist (another type).
        const changedType =
          mutation.field === 'type' &&
          ['mobile_topup', 'internet_topup', 'gift_card'].includes(String(parsed.type));
        if (!changedType) {
          const expected = mutation.field.length > 64 ? `${mutation.field.slice(0, 64)}…` : mutation.field;
          assert.ok(
            fieldsOf(problem).some((f) => f === expected || f.startsWith(`${expected}.`)),
            `${context}: errors name ${fieldsOf(problem).join(', ')}`,
          );
        }
        await assertNoWorkflow(parsed.ref, context);
        // Prototype pollution would show up on every object in this process.
        assert.equal(
          ({} as Record<string, unknown>).polluted,
          undefined,
          `${context}: Object.prototype was polluted`,
        );
      }),
      fcParams,
    );
  });

  it('bodies that are not JSON, too big, too deep or badly encoded answer 4xx, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(brokenBody, async (body) => {
        const res = await api.request('POST', '/v1/orders', {
          body,
          headers: { 'content-type': 'application/json' },
        });
        const context = `body ${JSON.stringify(body.toString()).slice(0, 200)}`;
        assertAnswerContract(res, context);
        assert.ok(res.status >= 400, `${context}: HTTP ${res.status}`);
      }),
      fcParams,
    );
  });

  it('content types, encodings and credentials: 401 before anything else, 415 for non-JSON, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        validOrder('REF-PLACEHOLDER'),
        contentTypes,
        authorizations,
        contentEncodings,
        async (order, contentType, authorization, encoding) => {
          const ref = freshRef();
          const headers: Record<string, string> = {};
          if (contentType !== undefined) headers['content-type'] = contentType;
          if (authorization !== undefined) headers.authorization = authorization;
          if (encoding !== undefined) headers['content-encoding'] = encoding;
          const context = `content-type ${JSON.stringify(contentType)}, authorization ${JSON.stringify(authorization?.slice(0, 40))}, content-encoding ${String(encoding)}`;
          const res = await api.request('POST', '/v1/orders', {
            body: JSON.stringify({ ...order, ref }),
            headers,
            apiKey: authorization === undefined ? null : undefined,
          });
          const problem = assertAnswerContract(res, context);
          if (!presentsValidKey(authorization)) {
            assert.equal(res.status, 401, `${context}: HTTP ${res.status}`);
            assert.equal(problem?.type, '/problems/unauthorized', context);
            assert.match(String(res.headers['www-authenticate']), /^Bearer /, context);
          } else if (
            contentType === undefined ||
            contentType.split(';')[0]!.trim().toLowerCase() !== 'application/json'
          ) {
            assert.equal(res.status, 415, `${context}: HTTP ${res.status}`);
          } else if (res.status === 201) {
            noteCreated(res, ref, context);
          }
          if (res.status !== 201) await assertNoWorkflow(ref, context);
        },
      ),
      fcParams,
    );
  });

  it('hostile refs in paths answer 400 naming ref or 404, never a 5xx, and start nothing', async () => {
    const decision = JSON.stringify({ decision: 'FULFILLED', operator: 'fuzz', note: 'generated' });
    const routes = {
      view: ['GET', (ref: string) => `/v1/orders/${ref}`],
      review: ['POST', (ref: string) => `/v1/orders/${ref}/review`],
      webhooks: ['GET', (ref: string) => `/v1/orders/${ref}/webhooks`],
      redeliver: ['POST', (ref: string) => `/v1/orders/${ref}/webhooks/evt_fuzz/redeliver`],
    } as const;
    await fc.assert(
      fc.asyncProperty(hostileRefSegment, fc.constantFrom(...Object.keys(routes)), async (segment, route) => {
        const [method, pathOf] = routes[route as keyof typeof routes];
        const path = pathOf(segment);
        const res = await api.request(
          method,
          path,
          route === 'review' ? { body: decision, headers: { 'content-type': 'application/json' } } : {},
        );
        const context = `${method} ${path}`;
        const problem = assertAnswerContract(res, context);
        assert.ok(
          [400, 404].includes(res.status),
          `${context}: HTTP ${res.status} ${res.text.slice(0, 200)}`,
        );
        if (res.status === 400 && problem?.type === '/problems/validation-error') {
          assert.ok(
            fieldsOf(problem).includes('ref'),
            `${context}: errors name ${fieldsOf(problem).join(', ')}`,
          );
        }
      }),
      fcParams,
    );
  });

  it('hostile list queries answer 200, 400 or (another client) 404, never a 5xx', async () => {
    const queryValue = fc.oneof(
      hostileRefSegment,
      fc.constantFrom(
        'FULFILLED',
        'gift_card',
        '20',
        '0',
        '101',
        '-1',
        '1e3',
        'AAAA',
        'x'.repeat(5_000),
        'shop',
        'acme',
        encodeURIComponent("acme' OR OrderClient IS NOT NULL"),
      ),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(
          fc.constantFrom(
            'status',
            'type',
            'client',
            'pageSize',
            'pageToken',
            'foo',
            'status[]',
            '__proto__',
          ),
          queryValue,
          { maxKeys: 3 },
        ),
        async (params) => {
          const query = Object.entries(params)
            .map(([key, value]) => `${encodeURIComponent(key)}=${value}`)
            .join('&');
          const res = await api.request('GET', `/v1/orders?${query}`);
          const context = `GET /v1/orders?${query.slice(0, 200)}`;
          const problem = assertAnswerContract(res, context);
          assert.ok(
            [200, 400, 404].includes(res.status),
            `${context}: HTTP ${res.status} ${res.text.slice(0, 200)}`,
          );
          if (res.status === 404) assert.equal(problem?.type, '/problems/client-not-found', context);
          if (res.status === 200) {
            // Whatever the query said, the caller (shop) is shown its own orders only.
            const { orders } = res.body as { orders: { client?: string }[] };
            for (const order of orders) assert.equal(order.client, 'shop', context);
          }
        },
      ),
      fcParams,
    );
  });

  it('batches of generated items: never a 5xx; one answer per item, in order, each what single submissions one after the other would get', async () => {
    // Items name one of three refs by placeholder; each run swaps in fresh refs (shrinking replays runs).
    const placeholders = ['REF-A', 'REF-B', 'REF-C'];
    const item = fc.oneof(
      {
        weight: 4,
        arbitrary: fc
          .tuple(validOrder('X'), fc.constantFrom(...placeholders))
          .map(([o, ref]) => ({ ...o, ref }) as unknown),
      },
      {
        weight: 3,
        arbitrary: fc
          .tuple(nearValidOrder, fc.constantFrom(...placeholders))
          .map(
            ([{ order, mutation }, ref]) => JSON.parse(mutatedJson({ ...order, ref }, mutation)) as unknown,
          ),
      },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    );
    const batchOf = fc
      .tuple(fc.array(item, { minLength: 1, maxLength: 8 }), fc.nat())
      // Now and then an exact repeat of an item of the same batch.
      .map(([items, pick]) => (pick % 4 === 0 ? [...items, items[pick % items.length]] : items));
    await fc.assert(
      fc.asyncProperty(batchOf, async (generated) => {
        const fresh = new Map(placeholders.map((p) => [p, freshRef()]));
        const items = generated.map((i) => {
          const ref = (i as { ref?: unknown } | null)?.ref;
          return typeof ref === 'string' && fresh.has(ref) ? { ...(i as object), ref: fresh.get(ref) } : i;
        });
        const text = `{"orders":[${items.map((i) => JSON.stringify(i) ?? 'null').join(',')}]}`;
        const res = await api.request<{ results: { status: number; body: unknown; location?: string }[] }>(
          'POST',
          '/v1/orders/batch',
          { body: text, headers: { 'content-type': 'application/json' } },
        );
        const context = `batch ${text.slice(0, 300)}`;
        assertAnswerContract(res, context);
        assert.equal(res.status, 200, `${context}: HTTP ${res.status} ${res.text.slice(0, 200)}`);
        assert.equal(res.body.results.length, items.length, context);
        const first = new Map<string, string>();
        const existedBefore = new Set([...created]);
        const refused: [unknown, string][] = [];
        for (const [index, result] of res.body.results.entries()) {
          const parsed = OrderRequest.safeParse(items[index]);
          const where = `${context} item ${index}`;
          assert.ok(result.status < 500, `${where}: ${result.status}`);
          if (!parsed.success) {
            assert.equal(result.status, 400, where);
            assert.ok(((result.body as Problem).errors ?? []).length > 0, `${where}: names its fields`);
            refused.push([(items[index] as { ref?: unknown } | null)?.ref, where]);
            continue;
          }
          const body = canonicalJson(parsed.data);
          const seen = first.get(parsed.data.ref);
          if (seen === undefined) first.set(parsed.data.ref, body);
          if (seen === undefined && existedBefore.has(parsed.data.ref)) {
            // A mutation picked a valid ref an earlier run already used: that order's body is not known here.
            assert.ok([200, 409].includes(result.status), `${where}: ${result.status}`);
            continue;
          }
          const expected = seen === undefined ? 201 : seen === body ? 200 : 409;
          assert.equal(result.status, expected, where);
          if (result.status === 201) {
            assert.equal(result.location, `/v1/orders/${parsed.data.ref}`, where);
            noteCreated({ status: 201 } as ApiResponse, parsed.data.ref, where);
          }
        }
        // After the whole batch: a valid item may have created the ref an invalid one also named.
        for (const [ref, where] of refused) await assertNoWorkflow(ref, where);
      }),
      { ...fcParams, numRuns: Math.min(NUM_RUNS, 60) },
    );
  });

  it('no refused request started a workflow: the task queue holds exactly the orders answered 201', async () => {
    // Visibility trails the workflows a little; an extra workflow would show up within this wait.
    const query = `TaskQueue = '${taskQueue}'`;
    let count = -1;
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(250)) {
      count = (await client.workflow.count(query)).count;
      if (count >= created.size) break;
    }
    await sleep(1_000);
    count = (await client.workflow.count(query)).count;
    assert.equal(
      count,
      created.size,
      `${count} workflows on ${taskQueue} for ${created.size} orders answered 201`,
    );
  });
});
