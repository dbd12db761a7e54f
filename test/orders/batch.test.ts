/**
 * POST /v1/orders/batch against a real Temporal server (createApp on a free port; no worker, so
 * every workflow started stays as it was started, and the workflows on this file's task queue are
 * exactly the orders the batches created). A 500-item batch with invalid, repeated and conflicting
 * items is answered item by item, each answer as POST /v1/orders gives it for the same body.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import pino from 'pino';
import { submitBatch, type BatchItemResult } from '../../src/orders/batch';
import type { Problem } from '../../src/http/errors';
import type { OrderView } from '../../src/orders/order.service';
import { canonicalJson, type OrderService } from '../../src/orders/order.service';
import { apiTestConfig, testClients, type TestApi } from '../helpers/api';
import { OrderRequest } from '../../contract/schemas';
import { orderWorkflowId } from '../../contract/order';
import { idleProvider, startOrderStack, type OrderStack } from '../helpers/stack';

const taskQueue = `api-batch-${randomUUID()}`;
const run = randomUUID().slice(0, 8);
const provider = idleProvider;

type Item = Record<string, unknown>;

/** The same order with another amount, value or quantity: the same ref, another body. */
function changed(item: Item): Item {
  const field = 'amount' in item ? 'amount' : 'value' in item ? 'value' : 'quantity';
  return { ...item, [field]: 7 };
}
const ref = (label: string | number) => `B-${run}-${label}`;
function order(i: number, label: string | number = i): Item {
  switch (i % 3) {
    case 0:
      return {
        type: 'mobile_topup',
        ref: ref(label),
        planCode: 'PREPAID_DJEZZY',
        msisdn: `05${String(i).padStart(8, '0')}`,
        amount: 500,
      };
    case 1:
      // Fixed lines have 9 digits with the leading 0.
      return {
        type: 'internet_topup',
        ref: ref(label),
        lineType: 'ADSL',
        number: `021${String(i).padStart(6, '0')}`,
        value: 1000,
      };
    default:
      return {
        type: 'gift_card',
        ref: ref(label),
        productId: 'GOOGLE_PLAY',
        typeId: 'GOOGLE_PLAY_1000',
        quantity: 1,
      };
  }
}

describe('POST /v1/orders/batch', { timeout: 300_000 }, () => {
  let stack: OrderStack<never>;
  let client: Client;
  let api: TestApi;

  before(async () => {
    stack = await startOrderStack({
      name: 'api-batch',
      sandbox: false,
      api: {
        taskQueue,
        provider,
        // No worker answers the status query here: a repeat (200) waits for this deadline, then
        // answers from what Temporal itself knows — exactly as the single route does.
        config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '2000', API_BATCH_TIMEOUT_MS: '120000' }),
      },
    });
    ({ client, api } = stack);
  });
  after(() => stack?.stop());

  const batch = (orders: unknown[], apiKey?: string | null) =>
    api.request<{ results: BatchItemResult[] }>('POST', '/v1/orders/batch', { body: { orders }, apiKey });

  async function exists(orderRef: string, owner?: string): Promise<boolean> {
    try {
      await client.workflow.getHandle(orderWorkflowId(orderRef, owner)).describe();
      return true;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  it('500 orders with invalid, repeated and conflicting ones: one answer per item, in order, each as the single route would give it; exactly the right workflows', async () => {
    // Submitted alone first: a batch item for the same ref is a repeat (200) or a conflict (409).
    const before = order(900, 'before');
    assert.equal((await api.request('POST', '/v1/orders', { body: before })).status, 201);

    const items: unknown[] = [];
    for (let i = 0; items.length < 500; i++) {
      items.push(order(i));
      if (i % 50 === 7) items.push(order(i - 5)); // a repeat of an earlier item, same body
      if (i % 60 === 11) items.push(changed(order(i - 3))); // the same ref, another body
      if (i % 70 === 13) items.push({ ...order(i, `bad-${i}`), extra: true }); // an unknown field
    }
    items.length = 500;
    items[100] = null;
    items[200] = 'a string';
    items[300] = { ...order(300), ref: '../etc' };
    items[400] = before;
    items[401] = changed(before);

    // What 500 single submissions, one after the other, would answer.
    const firstBody = new Map<string, string>([[String(before.ref), canonicalJson(before)]]);
    const expected = items.map((item) => {
      const parsed = OrderRequest.safeParse(item);
      if (!parsed.success) return 400;
      const seen = firstBody.get(parsed.data.ref);
      if (seen === undefined) {
        firstBody.set(parsed.data.ref, canonicalJson(parsed.data));
        return 201;
      }
      return seen === canonicalJson(parsed.data) ? 200 : 409;
    });
    const count = (status: number) => expected.filter((s) => s === status).length;
    assert.ok(count(200) >= 5 && count(409) >= 5 && count(400) >= 8, 'the batch has every kind of item');

    const res = await batch(items);
    assert.equal(res.status, 200, res.text.slice(0, 500));
    const { results } = res.body;
    assert.equal(results.length, 500);
    assert.deepEqual(
      results.map((r) => r.status),
      expected,
    );
    assert.equal(results[400]!.status, 200);
    assert.equal(results[401]!.status, 409);

    for (const [index, result] of results.entries()) {
      const item = items[index] as Item;
      if (result.status === 201) {
        const view = result.body as OrderView;
        assert.equal('location' in result && result.location, `/v1/orders/${String(item.ref)}`);
        assert.equal(view.status, 'ACCEPTED');
        assert.deepEqual(view.request, item);
        assert.equal(view.client, 'shop');
      } else if (result.status >= 400) {
        const problem = result.body as Problem;
        assert.equal(problem.status, result.status);
        assert.equal(problem.requestId, res.headers['x-request-id']);
      }
    }
    assert.deepEqual(
      (results[300]!.body as Problem).errors?.map((e) => e.field),
      ['ref'],
    );

    // Each refusal is the single route's, word for word (but the request id).
    for (const index of [300, expected.indexOf(400), expected.indexOf(409), 401]) {
      const alone = await api.request<Problem>('POST', '/v1/orders', { body: items[index] });
      assert.equal(results[index]!.status, alone.status, `item ${index}`);
      const { requestId: _inBatch, ...inBatch } = results[index]!.body as Problem;
      const { requestId: _alone, ...single } = alone.body;
      assert.deepEqual(inBatch, single, `item ${index}`);
    }
    // A body that is not an object: 400 in the batch; alone, the JSON parser refuses it first (also 400).
    assert.equal((results[100]!.body as Problem).type, '/problems/validation-error');
    assert.equal(
      (
        await api.request('POST', '/v1/orders', {
          body: 'null',
          headers: { 'content-type': 'application/json' },
        })
      ).status,
      400,
    );
    // A repeat answers what the single route answers for the same body: the same order.
    const repeat = expected.indexOf(200);
    const alone = await api.request<OrderView>('POST', '/v1/orders', { body: items[repeat] });
    assert.equal(alone.status, 200);
    assert.deepEqual(results[repeat]!.body, alone.body);

    // Exactly the orders answered 201, and the one submitted alone: no more, no fewer.
    const query = `TaskQueue = '${taskQueue}'`;
    const wanted = count(201) + 1;
    let workflows = -1;
    for (const deadline = Date.now() + 20_000; Date.now() < deadline; await sleep(250)) {
      workflows = (await client.workflow.count(query)).count;
      if (workflows >= wanted) break;
    }
    await sleep(1_000);
    assert.equal((await client.workflow.count(query)).count, wanted);
    assert.equal(await exists(ref('bad-13')), false, 'an invalid item started nothing');
    assert.equal(await exists(String((items[0] as Item).ref)), true);
  });

  it('items with one ref are two submissions one after the other, in the batch’s order', async () => {
    const a = order(3, 'same');
    const other = { ...a, amount: 999 };
    const res = await batch([other, a, other, order(4, 'next'), a]);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(
      res.body.results.map((r) => r.status),
      [201, 409, 200, 201, 409],
    );
    assert.equal((res.body.results[0]!.body as OrderView).request.type, 'mobile_topup');
    assert.equal(((res.body.results[0]!.body as OrderView).request as { amount: number }).amount, 999);
  });

  it('the envelope is checked first: no orders, too many, not JSON, too large, unknown fields → one 4xx, nothing started', async () => {
    const cases: [unknown, number, string[]][] = [
      [{}, 400, ['orders']],
      [{ orders: [] }, 400, ['orders']],
      [{ orders: Array.from({ length: 501 }, (_, i) => order(i, `too-many-${i}`)) }, 400, ['orders']],
      [{ orders: [order(1, 'x')], extra: 1 }, 400, ['extra']],
      [{ orders: 'many' }, 400, ['orders']],
    ];
    for (const [body, status, fields] of cases) {
      const res = await api.request<Problem>('POST', '/v1/orders/batch', { body });
      assert.equal(res.status, status, res.text.slice(0, 300));
      assert.deepEqual(
        res.body.errors?.map((e) => e.field),
        fields,
      );
    }
    assert.equal(await exists(ref('too-many-0')), false);
    // A member named twice in any item refuses the whole batch (RFC 7493): nothing is started.
    const first = JSON.stringify(order(1, 'dup-first'));
    const twice = JSON.stringify(order(0, 'dup-twice')).replace('"amount":500', '"amount":5,"amount":7');
    const duplicated = await api.request<Problem>('POST', '/v1/orders/batch', {
      body: `{"orders":[${first},${twice}]}`,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(duplicated.status, 400, duplicated.text);
    assert.deepEqual(
      duplicated.body.errors?.map((e) => e.field),
      ['orders.1.amount'],
    );
    assert.equal(await exists(ref('dup-first')), false);
    assert.equal(await exists(ref('dup-twice')), false);
    assert.equal(
      (
        await api.request('POST', '/v1/orders/batch', {
          body: 'orders=1',
          headers: { 'content-type': 'text/plain' },
        })
      ).status,
      415,
    );
    const huge = { orders: [{ ...order(1, 'huge'), pad: 'x'.repeat(1_100_000) }] };
    assert.equal((await api.request('POST', '/v1/orders/batch', { body: huge })).status, 413);
    assert.equal(await exists(ref('huge')), false);
  });

  it('the owner, another client, no scope, no key: another client’s same refs are its own orders; 403 and 401 start nothing', async () => {
    const mine = order(6, 'owned');
    assert.equal((await batch([mine])).body.results[0]!.status, 201);
    // acme's ref meets shop's nowhere: its own new order, not a repeat or a conflict.
    const theirs = await batch([{ ...mine, amount: 777 }], testClients.acme.key);
    assert.equal(theirs.body.results[0]!.status, 201, theirs.text);
    assert.equal((theirs.body.results[0]!.body as OrderView).client, 'acme');
    assert.equal(await exists(String(mine.ref), 'acme'), true);

    const refused = order(7, 'refused');
    const reader = await api.request<Problem>('POST', '/v1/orders/batch', {
      body: { orders: [refused] },
      apiKey: testClients.reader.key,
    });
    assert.equal(reader.status, 403);
    assert.match(reader.body.detail, /orders:write/);
    assert.equal(
      (await api.request('POST', '/v1/orders/batch', { body: { orders: [refused] }, apiKey: null })).status,
      401,
    );
    assert.equal(await exists(String(refused.ref)), false);
    assert.equal(await exists(String(refused.ref), 'reader'), false);
  });
});

describe('submitBatch on its own (a stub OrderService)', () => {
  const caller = {
    id: 'shop',
    name: 'Shop',
    scopes: new Set(),
    operator: false,
    webhooks: [],
    keyId: 'k1',
  } as never;
  const log = pino({ level: 'silent' });

  it('keeps at most API_BATCH_CONCURRENCY submissions in flight, and runs a ref’s items one after the other', async () => {
    let inFlight = 0;
    let most = 0;
    const running = new Set<string>();
    const orders = {
      async submit(_caller: unknown, request: { ref: string }) {
        assert.ok(!running.has(request.ref), `two submissions of ${request.ref} at once`);
        running.add(request.ref);
        most = Math.max(most, ++inFlight);
        await sleep(5);
        inFlight--;
        running.delete(request.ref);
        return { created: true, view: { ref: request.ref } };
      },
    } as unknown as OrderService;
    const items = Array.from({ length: 60 }, (_, i) => order(i, i % 20));
    const results = await submitBatch(orders, caller, items, { concurrency: 4, timeoutMs: 60_000, log });
    assert.equal(results.length, 60);
    assert.ok(most <= 4 && most >= 2, `at most 4 in flight (${most})`);
  });

  it('items not started before API_BATCH_TIMEOUT_MS answer 503 without being tried; the others are answered', async () => {
    let clock = 0;
    const tried: string[] = [];
    const orders = {
      async submit(_caller: unknown, request: { ref: string }) {
        tried.push(request.ref);
        clock += 400; // each submission takes 400 ms of the batch's time
        return { created: true, view: { ref: request.ref } };
      },
    } as unknown as OrderService;
    const items = Array.from({ length: 6 }, (_, i) => order(i, `late-${i}`));
    const results = await submitBatch(orders, caller, items, {
      concurrency: 1,
      timeoutMs: 1_000,
      log,
      now: () => clock,
    });
    assert.deepEqual(
      results.map((r) => r.status),
      [201, 201, 201, 503, 503, 503],
    );
    assert.equal(tried.length, 3);
    const problem = results[3]!.body as Problem;
    assert.equal(problem.type, '/problems/temporarily-unavailable');
    assert.match(problem.detail, /submit it again/);
  });
});
