/**
 * GET /v1/orders keeps its promise — newest accepted first — over a few hundred orders, on the dev
 * server (SQLite visibility) under `npm test` and on PostgreSQL visibility under
 * `npm run test:cluster`. SQL visibility has its own fixed order (open runs first, closed ones by
 * close time), so the test closes a random half of the orders in random order: an API that
 * passed the store's order through would list them out of order.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import pLimit from 'p-limit';
import { type TestApi } from '../helpers/api';
import { orderWorkflowId } from '../../contract/order';
import { giftCardRequest, internetRequest, mobileRequest } from '../helpers/orders';
import { idleProvider, startOrderStack, type OrderStack } from '../helpers/stack';

const ORDERS = 300;

interface Summary {
  ref: string;
  type: string;
  acceptedAt: string;
  workflowStatus: string;
}
interface Page {
  orders: Summary[];
  nextPageToken?: string;
}

describe('GET /v1/orders: newest accepted first', () => {
  let stack: OrderStack;
  let client: Client;
  let api: TestApi;
  const run = randomUUID().slice(0, 8);
  const refs: string[] = [];
  const testStartedAt = Date.now();

  before(async () => {
    // No worker polls this queue: the orders stay as submitted, and only the test closes them.
    stack = await startOrderStack({
      name: 'order-list',
      sandbox: false,
      api: { taskQueue: `order-list-${run}`, provider: idleProvider },
    });
    client = stack.client;
    api = stack.api;

    const requests = Array.from({ length: ORDERS }, (_, i) => {
      const ref = `LIST-${run}-${String(i).padStart(3, '0')}`;
      return i % 3 === 0 ? mobileRequest(ref) : i % 3 === 1 ? internetRequest(ref) : giftCardRequest(ref, 1);
    });
    // Several at once, as back-office systems submit: some share a millisecond.
    const eight = pLimit(8);
    await Promise.all(
      requests.map((request) =>
        eight(async () => {
          const res = await api.request('POST', '/v1/orders', { body: request });
          assert.equal(res.status, 201, res.text);
          refs.push(request.ref);
        }),
      ),
    );
    // Close a random half, in random order, so close times do not follow acceptance.
    const toClose = refs.filter(() => Math.random() < 0.5).sort(() => Math.random() - 0.5);
    const four = pLimit(4);
    await Promise.all(
      toClose.map((ref) =>
        four(() =>
          client.workflow.getHandle(orderWorkflowId(ref)).terminate('order-list test: closed out of order'),
        ),
      ),
    );
  });

  after(async () => {
    await Promise.allSettled(
      refs.map((ref) => client.workflow.getHandle(orderWorkflowId(ref)).terminate('order-list test done')),
    );
    await stack?.stop();
  });

  /**
   * The list, page by page, until it ends or reaches orders accepted before this test began (other
   * tests share the namespace; what is older than ours need not be paged through).
   */
  async function listAll(filter: string, pageSize: number): Promise<Summary[]> {
    const all: Summary[] = [];
    let token: string | undefined;
    for (let page = 0; page < 1_000; page++) {
      const query = `${filter}pageSize=${pageSize}${token ? `&pageToken=${token}` : ''}`;
      const res = await api.request<Page>('GET', `/v1/orders?${query}`);
      assert.equal(res.status, 200, res.text);
      assert.ok(res.body.orders.length <= pageSize);
      all.push(...res.body.orders);
      token = res.body.nextPageToken;
      if (!token || all.some((o) => Date.parse(o.acceptedAt) < testStartedAt - 1_000)) return all;
    }
    assert.fail('the list did not end');
  }

  /** Pages until all of this test's orders are listed (visibility trails the starts and closes a little). */
  async function listOurs(filter: string, pageSize: number, expected: number): Promise<Summary[]> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const all = await listAll(filter, pageSize);
      const ours = all.filter((o) => o.ref.startsWith(`LIST-${run}-`));
      const closed = ours.filter((o) => o.workflowStatus !== 'RUNNING').length;
      if ((ours.length === expected && closed > 0) || Date.now() > deadline) return all;
      await sleep(300);
    }
  }

  function assertNewestFirst(all: Summary[]): void {
    const keys = all.map((o) => `${o.acceptedAt} ${orderWorkflowId(o.ref)}`);
    assert.equal(new Set(keys).size, keys.length, 'no order listed twice');
    for (let i = 1; i < all.length; i++) {
      const [a, b] = [all[i - 1]!, all[i]!];
      assert.ok(
        a.acceptedAt > b.acceptedAt ||
          (a.acceptedAt === b.acceptedAt && orderWorkflowId(a.ref) > orderWorkflowId(b.ref)),
        `position ${i}: ${a.ref} (${a.acceptedAt}, ${a.workflowStatus}) is listed before ${b.ref} (${b.acceptedAt}, ${b.workflowStatus})`,
      );
    }
  }

  it(`lists ${ORDERS} orders, half of them closed out of order, newest accepted first across pages`, async () => {
    const all = await listOurs('', 37, ORDERS);
    const ours = all.filter((o) => o.ref.startsWith(`LIST-${run}-`));
    assert.equal(ours.length, ORDERS, 'every order listed');
    assert.ok(
      ours.some((o) => o.workflowStatus === 'TERMINATED') && ours.some((o) => o.workflowStatus === 'RUNNING'),
    );
    assertNewestFirst(all);
  });

  it('keeps the order with a type filter and other page sizes', async () => {
    const giftCards = refs.filter((ref) => Number(ref.slice(-3)) % 3 === 2).length;
    for (const pageSize of [1, 100]) {
      const all = await listOurs('type=gift_card&status=ACCEPTED&', pageSize, giftCards);
      assert.ok(all.every((o) => o.type === 'gift_card'));
      assert.equal(all.filter((o) => o.ref.startsWith(`LIST-${run}-`)).length, giftCards);
      assertNewestFirst(all);
    }
  });

  it('a page token from one filter is refused with another, and a forged one is a 400, not a 500', async () => {
    const first = await api.request<Page>('GET', '/v1/orders?type=mobile_topup&pageSize=2');
    assert.equal(first.status, 200, first.text);
    assert.ok(first.body.nextPageToken);
    const other = await api.request('GET', `/v1/orders?type=gift_card&pageToken=${first.body.nextPageToken}`);
    assert.equal(other.status, 400, other.text);
    const forged = Buffer.concat([Buffer.alloc(8), Buffer.from('{"at":1}')]).toString('base64url');
    assert.equal((await api.request('GET', `/v1/orders?pageToken=${forged}`)).status, 400);
  });

  it('measures how soon a new order is listed (visibility lag; reported, not asserted)', async (t) => {
    const lags: number[] = [];
    for (let i = 0; i < 10; i++) {
      const request = mobileRequest(`LIST-${run}-lag-${i}`);
      const res = await api.request('POST', '/v1/orders', { body: request });
      assert.equal(res.status, 201, res.text);
      refs.push(request.ref);
      const accepted = Date.now();
      for (;;) {
        const page = await api.request<Page>('GET', '/v1/orders?type=mobile_topup&pageSize=5');
        if (Date.now() - accepted > 10_000) assert.fail(`${request.ref} not listed after 10 s`);
        // Answers are shared for a moment, so a list answers at once: polled gently, and the
        // client's request limit (429) waited out as told.
        if (page.status === 429) {
          await sleep(Number(page.headers['retry-after'] ?? 1) * 1_000);
          continue;
        }
        assert.equal(page.status, 200, page.text);
        if (page.body.orders.some((o) => o.ref === request.ref)) break;
        await sleep(200);
      }
      lags.push(Date.now() - accepted);
    }
    lags.sort((a, b) => a - b);
    t.diagnostic(
      `${process.env.TEST_TEMPORAL_SERVER ?? 'dev server'}: a new order was listed after ${lags[0]}–${lags.at(-1)} ms (median ${lags[5]} ms, polled every 200 ms, answers shared for API_READ_CACHE_MS)`,
    );
  });
});
