/**
 * GET /v1/orders page tokens are sealed with the server's key (API_PAGE_TOKEN_KEYS) and bounded:
 * nobody else can make one, keys rotate (the first seals, every key listed opens), and no token
 * — forged, stale or sealed with an out-of-range cursor — gets past a 400 naming `pageToken`.
 * Real HTTP against createApp and a real Temporal server; no worker (orders only need listing).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Problem } from '../../src/http/errors';
import type { ProviderPort } from '../../src/api/health';
import { pageTokensFromConfig } from '../../src/orders/page-token';
import { apiTestConfig, startTestApi, type TestApi } from '../helpers/api';
import { AcceptedAtAttribute, OrderClientAttribute, workflowTypeByOrderType } from '../../contract/order';
import { mobileRequest } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const provider: ProviderPort = {
  getGiftCardCatalog: () => Promise.reject(new Error('not used')),
  validateKey: () => Promise.reject(new Error('not used')),
};

interface Page {
  orders: { ref: string }[];
  nextPageToken?: string;
}

const newKey = () => randomBytes(32).toString('base64');

/** The list filter of the default client `shop` with no query filters, as order-list.ts writes it. */
function shopFilter(): string {
  const types = Object.values(workflowTypeByOrderType).map((t) => `'${t}'`);
  return [
    `WorkflowType IN (${types.join(', ')})`,
    `ExecutionStatus != 'ContinuedAsNew'`,
    `(${OrderClientAttribute.name} = 'shop' OR ${OrderClientAttribute.name} IS NULL)`,
  ].join(' AND ');
}

function assertPageTokenRefused(res: { status: number; text: string; body: Problem }): void {
  assert.equal(res.status, 400, res.text);
  assert.equal(res.body.type, '/problems/validation-error');
  assert.deepEqual(
    res.body.errors?.map((e) => e.field),
    ['pageToken'],
  );
}

describe('GET /v1/orders page tokens', () => {
  let stack: OrderStack;
  let client: Client;
  const apis: TestApi[] = [];
  const oldKey = `k1:${newKey()}`;
  const currentKey = `k2:${newKey()}`;
  const taskQueue = `page-tokens-${randomUUID()}`;

  const api = async (keys: string) => {
    const started = await startTestApi({
      client,
      taskQueue,
      provider,
      config: apiTestConfig({ API_PAGE_TOKEN_KEYS: keys }),
    });
    apis.push(started);
    return started;
  };

  before(async () => {
    stack = await startOrderStack({ name: 'page-tokens', sandbox: false });
    client = stack.client;
    const submitter = await api(oldKey);
    for (let i = 0; i < 3; i++) {
      const res = await submitter.request('POST', '/v1/orders', {
        body: mobileRequest(`PT-${randomUUID().slice(0, 8)}-${i}`),
      });
      assert.equal(res.status, 201, res.text);
    }
    // Visibility lags behind the starts: wait until the list shows them.
    for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
      const { count } = await client.workflow.count(`${AcceptedAtAttribute.name} IS NOT NULL`);
      if (count >= 3) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  });
  after(async () => {
    for (const a of apis) await a.close();
    await stack?.stop();
  });

  it('a token minted without the server key (unkeyed checksum, cursor beyond the Date range) → 400 naming pageToken, not 500', async () => {
    const list = await api(oldKey);
    const cursor = Buffer.from(JSON.stringify({ at: 8.64e15 + 1, id: 'order-x', w: 1 }));
    const checksum = createHash('sha256').update(shopFilter()).update(cursor).digest().subarray(0, 8);
    const forged = Buffer.concat([checksum, cursor]).toString('base64url');
    assertPageTokenRefused(await list.request<Problem>('GET', `/v1/orders?pageToken=${forged}`));
  });

  it('a token sealed with the server key but a cursor out of bounds → 400 naming pageToken', async () => {
    const list = await api(oldKey);
    const { pageTokens } = pageTokensFromConfig({ API_PAGE_TOKEN_KEYS: oldKey });
    for (const cursor of [
      { at: 8.64e15 + 1, id: 'order-x', w: 1 },
      { at: Date.UTC(10_000, 0, 1), id: 'order-x', w: 1 },
      { at: Date.now(), id: 'order-x', w: 8.64e15 + 1 },
      { at: -1, id: 'order-x', w: 1 },
      { at: 1.5, id: 'order-x', w: 1 },
    ]) {
      const token = pageTokens.seal(Buffer.from(JSON.stringify(cursor)), shopFilter());
      const res = await list.request<Problem>('GET', `/v1/orders?pageToken=${token}`);
      assertPageTokenRefused(res);
    }
    // The same sealing with a cursor in bounds is a page: the refusals above are the bounds'.
    const inBounds = pageTokens.seal(
      Buffer.from(JSON.stringify({ at: Date.now(), id: 'order-~', w: 60_000 })),
      shopFilter(),
    );
    const page = await list.request<Page>('GET', `/v1/orders?pageToken=${inBounds}`);
    assert.equal(page.status, 200, page.text);
  });

  it('keys rotate: the new key seals, the old one still opens while listed, and a token of a dropped key is a 400', async () => {
    const before = await api(oldKey);
    const rotated = await api(`${currentKey},${oldKey}`);
    const after = await api(currentKey);
    const first = await before.request<Page>('GET', '/v1/orders?pageSize=1');
    assert.equal(first.status, 200, first.text);
    const oldToken = first.body.nextPageToken!;
    assert.ok(oldToken, 'more than one order: a next page');

    const second = await rotated.request<Page>('GET', `/v1/orders?pageSize=1&pageToken=${oldToken}`);
    assert.equal(second.status, 200, second.text);
    assert.equal(second.body.orders.length, 1);
    assert.notEqual(second.body.orders[0]!.ref, first.body.orders[0]!.ref);
    const newToken = second.body.nextPageToken!;
    assert.ok(newToken);
    assertPageTokenRefused(
      await after.request<Problem>('GET', `/v1/orders?pageSize=1&pageToken=${oldToken}`),
    );
    // Sealed with the new key: the instance that has dropped the old one reads on.
    const third = await after.request<Page>('GET', `/v1/orders?pageSize=1&pageToken=${newToken}`);
    assert.equal(third.status, 200, third.text);
    // A token sealed under a configured key id but other key bytes is refused by all.
    const stranger = pageTokensFromConfig({ API_PAGE_TOKEN_KEYS: `k1:${newKey()}` }).pageTokens.seal(
      Buffer.from(JSON.stringify({ at: Date.now(), id: 'order-~', w: 60_000 })),
      shopFilter(),
    );
    for (const a of [before, rotated, after]) {
      assertPageTokenRefused(await a.request<Problem>('GET', `/v1/orders?pageToken=${stranger}`));
    }
  });
});
