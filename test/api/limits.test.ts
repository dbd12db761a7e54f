/**
 * The API's limits per client (src/api/limits.ts) against a real Temporal server (no worker: an
 * order started stays ACCEPTED, and a status query waits for its deadline, which makes a slow
 * request to hold a concurrency slot with). Owner, another client, no scope, no key.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { apiTestConfig, startTestApi, testClients, testClientsFile, type TestApi } from '../helpers/api';
import type { ClientLimits } from '../../src/clients/model';
import { ClientRegistry } from '../../src/clients/registry';
import { orderWorkflowId } from '../../contract/order';
import { idleProvider, mobileTopupBody, startOrderStack, type OrderStack } from '../helpers/stack';

const run = randomUUID().slice(0, 8);
const provider = idleProvider;
const topUp = mobileTopupBody;
let refs = 0;
const nextRef = () => `L-${run}-${++refs}`;

describe('API limits per client', { timeout: 180_000 }, () => {
  let stack: OrderStack<never>;
  let client: Client;
  const apis: TestApi[] = [];

  before(async () => {
    stack = await startOrderStack({ name: 'api-limits', sandbox: false });
    ({ client } = stack);
  });
  after(async () => {
    await Promise.all(apis.map((api) => api.close()));
    await stack?.stop();
  });

  /** An API whose clients file gives shop `limits`; every other client has the defaults (`env`). */
  async function apiWith(limits: ClientLimits, env: Record<string, string> = {}): Promise<TestApi> {
    const clients = new ClientRegistry({
      ...testClientsFile,
      clients: testClientsFile.clients.map((c) => (c.id === 'shop' ? { ...c, limits } : c)),
    });
    const api = await startTestApi({
      client,
      taskQueue: `api-limits-${randomUUID()}`,
      provider,
      clients,
      config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '3000', ...env }),
    });
    apis.push(api);
    return api;
  }

  async function exists(ref: string, owner?: string): Promise<boolean> {
    try {
      await client.workflow.getHandle(orderWorkflowId(ref, owner)).describe();
      return true;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  it('counts orders, not requests: a batch counts each item; past the budget a 429 with Retry-After and RateLimit headers, nothing started', async () => {
    const api = await apiWith({ ordersPerMinute: 5, ordersBurst: 0 });
    const first = [nextRef(), nextRef(), nextRef()];
    const ok = await api.request('POST', '/v1/orders/batch', { body: { orders: first.map(topUp) } });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers['ratelimit-policy'], '"orders";q=5;w=60');
    assert.match(String(ok.headers.ratelimit), /^"orders";r=2;t=\d+$/);

    const over = [nextRef(), nextRef(), nextRef()];
    const refused = await api.request<{ type: string; detail: string }>('POST', '/v1/orders/batch', {
      body: { orders: over.map(topUp) },
    });
    assert.equal(refused.status, 429);
    assert.equal(refused.body.type, '/problems/rate-limited');
    assert.match(String(refused.headers['retry-after']), /^[1-9]\d*$/);
    assert.match(String(refused.headers.ratelimit), /^"orders";r=2;t=\d+$/);
    assert.match(refused.body.detail, /At most 5 orders a minute/);
    for (const ref of over) assert.equal(await exists(ref), false, `${ref} was started`);

    // The refusal cost nothing: two singles still fit, a third does not.
    for (let i = 0; i < 2; i++)
      assert.equal((await api.request('POST', '/v1/orders', { body: topUp(nextRef()) })).status, 201);
    const third = nextRef();
    assert.equal((await api.request('POST', '/v1/orders', { body: topUp(third) })).status, 429);
    assert.equal(await exists(third), false);

    // Another client has its own budget (the defaults).
    const acme = await api.request('POST', '/v1/orders', {
      body: topUp(nextRef()),
      apiKey: testClients.acme.key,
    });
    assert.equal(acme.status, 201);
    assert.equal(acme.headers['ratelimit-policy'], '"orders";q=3000;w=60');
    // Reads have their own budget: the owner still reads.
    assert.equal((await api.request('GET', '/v1/orders?pageSize=1')).status, 200);
  });

  it('the burst allowance takes what the minute cannot; a batch bigger than both is told to split', async () => {
    const api = await apiWith({ ordersPerMinute: 2, ordersBurst: 4 });
    const batch = (n: number) =>
      api.request<{ detail: string }>('POST', '/v1/orders/batch', {
        body: { orders: Array.from({ length: n }, () => topUp(nextRef())) },
      });
    assert.equal((await batch(3)).status, 200); // 3 > 2: from the burst (1 left)
    assert.equal((await batch(2)).status, 200); // the minute's 2
    assert.equal((await batch(1)).status, 200); // the burst's last
    assert.equal((await batch(1)).status, 429);
    const huge = await batch(7);
    assert.equal(huge.status, 429);
    assert.match(huge.body.detail, /more than your client may submit at once \(6\); split it/);
  });

  it('caps a client’s requests in flight; another client is not affected', async () => {
    const api = await apiWith({ concurrentRequests: 1 });
    const ref = nextRef();
    assert.equal((await api.request('POST', '/v1/orders', { body: topUp(ref) })).status, 201);
    // No worker answers the status query: this read holds shop's only slot for ~3 s.
    const slow = api.request('GET', `/v1/orders/${ref}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const second = await api.request<{ detail: string }>('GET', '/v1/orders?pageSize=1');
    assert.equal(second.status, 429);
    assert.equal(second.headers['retry-after'], '1');
    assert.match(second.body.detail, /At most 1 requests of your client at once/);
    assert.equal(
      (await api.request('GET', '/v1/orders?pageSize=1', { apiKey: testClients.acme.key })).status,
      200,
    );
    assert.equal((await slow).status, 200);
    // The slot is given back when the request ends.
    assert.equal((await api.request('GET', '/v1/orders?pageSize=1')).status, 200);
  });

  it('a caller that hangs up keeps its slot until the handler ends, not until the connection closes', async () => {
    const api = await apiWith({ concurrentRequests: 1 });
    const ref = nextRef();
    assert.equal((await api.request('POST', '/v1/orders', { body: topUp(ref) })).status, 201);
    // No worker answers the status query: the handler runs for ~3 s (API_TEMPORAL_TIMEOUT_MS)
    // whatever the caller does; the caller gives up after 300 ms.
    const handlerStarted = Date.now();
    const gaveUp = await fetch(`${api.url}/v1/orders/${ref}`, {
      headers: { authorization: `Bearer ${testClients.shop.key}` },
      signal: AbortSignal.timeout(300),
    }).then(
      () => false,
      () => true,
    );
    assert.ok(gaveUp, 'the read was given up');
    const meanwhile = await api.request<{ detail: string }>('GET', '/v1/orders?pageSize=1');
    assert.ok(Date.now() - handlerStarted < 2_500, 'asked while the abandoned handler still ran');
    assert.equal(meanwhile.status, 429, meanwhile.text);
    assert.match(meanwhile.body.detail, /At most 1 requests of your client at once/);
    // Once the handler has ended, the slot is back.
    const deadline = Date.now() + 15_000;
    let status = 429;
    while (status === 429 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      status = (await api.request('GET', '/v1/orders?pageSize=1')).status;
    }
    assert.equal(status, 200);
  });

  it('no scope: 403 before any order is counted; no key: 401, then limited by address', async () => {
    const api = await apiWith({}, { API_RATE_LIMIT_PER_MINUTE: '2' });
    const ref = nextRef();
    const reader = await api.request('POST', '/v1/orders', {
      body: topUp(ref),
      apiKey: testClients.reader.key,
    });
    assert.equal(reader.status, 403);
    assert.equal(reader.headers['ratelimit-policy'], undefined);
    assert.equal(await exists(ref, 'reader'), false);
    for (let i = 0; i < 2; i++)
      assert.equal((await api.request('POST', '/v1/orders', { body: topUp(ref), apiKey: null })).status, 401);
    const guessed = await api.request('POST', '/v1/orders', { body: topUp(ref), apiKey: 'guess' });
    assert.equal(guessed.status, 429);
    assert.match(String(guessed.headers['retry-after']), /^[1-9]\d*$/);
  });

  it('past API_RATE_LIMIT_PER_MINUTE other requests get 429, whichever key of the client; another client has its own', async () => {
    const api = await apiWith({ requestsPerMinute: 2 });
    for (let i = 0; i < 2; i++) {
      const read = await api.request('GET', '/v1/orders?pageSize=1');
      assert.equal(read.status, 200);
      assert.equal(read.headers['ratelimit-policy'], '"requests";q=2;w=60');
    }
    assert.equal((await api.request('GET', '/v1/orders?pageSize=1')).status, 429);
    // Submissions are counted as orders, not here.
    assert.equal((await api.request('POST', '/v1/orders', { body: topUp(nextRef()) })).status, 201);
    assert.equal(
      (await api.request('GET', '/v1/orders?pageSize=1', { apiKey: testClients.acme.key })).status,
      200,
    );
  });
});
