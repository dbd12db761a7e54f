/**
 * Reads that scale (issue 32, part 4) keep the rules of every read: on the dev server, a real
 * worker and the sandbox, through the API with its read cache on (API_READ_CACHE_MS, here 2 s so
 * that answers are shared across the whole storm), 20 readers of two clients read the list, their
 * statements and the export, and two operators the review queue, at once and over and over:
 *
 * - tenancy: no answer ever holds another client's order, whoever read the same thing just before;
 * - the latest run decides: an order that continued as new into its review run is listed once, in
 *   review; an order whose completed run an operator reset (a second run, REFUNDED) is listed,
 *   exported and summed once, as REFUNDED, never as its first run's FULFILLED;
 * - after the order in review is decided, every read shows its new latest state within the cache's
 *   time and visibility's lag, and never two runs of it;
 * - identical reads in flight cost Temporal one read: 20 identical list requests make the visibility
 *   calls of one page, against at least one page each with the cache off.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { temporal as proto } from '@temporalio/proto';
import { Client, Connection } from '@temporalio/client';
import { ClientRegistry } from '../../src/clients/registry';
import { hashApiKey } from '../../src/clients/keys';
import type { ClientsFile } from '../../src/clients/model';
import { apiTestConfig, startTestApi, type TestApi } from '../helpers/api';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import type { OrderView } from '../../contract/order';
import { mobileRequest, scaledTimings } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const CACHE_MS = 2_000;
const DAY = 86_400_000;

interface Summary {
  ref: string;
  client?: string;
  workflowId: string;
  status?: string;
}
interface StatementLine {
  type: string;
  status: string;
  orders: number;
}
interface Statement {
  client: string;
  days: (StatementLine & { date: string })[];
  open: StatementLine[];
}

describe('reads that scale: shared answers keep tenancy and the latest run', () => {
  const run = randomUUID().slice(0, 8);
  const ids = { a: `rsa_${run}`, b: `rsb_${run}`, ops: `rso_${run}`, ops2: `rsp_${run}` };
  const keys = { a: `key-a-${run}`, b: `key-b-${run}`, ops: `key-ops-${run}`, ops2: `key-ops2-${run}` };
  const file: ClientsFile = {
    clients: [
      {
        id: ids.a,
        name: 'A',
        scopes: ['orders:write', 'orders:read', 'reviews:write'],
        keys: [{ id: 'k1', hash: hashApiKey(keys.a) }],
      },
      {
        id: ids.b,
        name: 'B',
        scopes: ['orders:write', 'orders:read', 'reviews:write'],
        keys: [{ id: 'k1', hash: hashApiKey(keys.b) }],
      },
      ...(['ops', 'ops2'] as const).map((who) => ({
        id: ids[who],
        name: who,
        role: 'operator' as const,
        scopes: ['orders:read' as const, 'reviews:write' as const],
        keys: [{ id: 'k1', hash: hashApiKey(keys[who]) }],
      })),
    ],
  };
  const registry = new ClientRegistry(file);
  const refs = {
    a: [0, 1, 2].map((i) => `rs-${run}-a${i}`),
    aReview: `rs-${run}-a-review`,
    b: [0, 1, 2].map((i) => `rs-${run}-b${i}`),
    bReset: `rs-${run}-b-reset`,
  };
  const today = Math.floor(Date.now() / DAY) * DAY;
  const range = `from=${new Date(today).toISOString()}&to=${new Date(today + DAY - 1).toISOString()}`;
  let stack: OrderStack<'main'>;
  let api: TestApi;
  let uncachedApi: TestApi;
  let connections: Connection[] = [];
  /** Visibility calls each API's own Temporal client made. */
  const calls = { cached: 0, uncached: 0 };

  /** A client on a connection of its own whose visibility calls are counted in calls[which]. */
  async function countingClient(which: keyof typeof calls): Promise<Client> {
    const connection = await Connection.connect({ address: stack.temporal.address });
    connections.push(connection);
    const service = connection.workflowService as unknown as Record<
      string,
      (req: unknown) => Promise<unknown>
    >;
    for (const method of ['listWorkflowExecutions', 'countWorkflowExecutions']) {
      const original = service[method]!.bind(service);
      service[method] = (req: unknown) => {
        calls[which]++;
        return original(req);
      };
    }
    return new Client({ connection, namespace: stack.temporal.namespace });
  }

  const get = async <T>(target: TestApi, key: string, path: string) => {
    const res = await target.request<T>('GET', path, { apiKey: key });
    assert.equal(res.status, 200, `${path}: ${res.text}`);
    return res;
  };
  const list = (key: string, query = '') =>
    get<{ orders: Summary[] }>(api, key, `/v1/orders?pageSize=100${query}`).then((r) => r.body.orders);
  const statement = (key: string) => get<Statement>(api, key, `/v1/statements?${range}`).then((r) => r.body);
  const exported = (key: string) =>
    api
      .request('GET', `/v1/orders/export?${range}`, {
        apiKey: key,
        headers: { accept: 'application/x-ndjson' },
      })
      .then((res) => {
        assert.equal(res.status, 200, res.text);
        return res.text
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { ref: string; client: string; status: string });
      });
  /** Until `check` passes (visibility lags, answers are shared for CACHE_MS), at most `ms`. */
  const eventually = async (check: () => Promise<void>, ms = 30_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      try {
        return await check();
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await sleep(250);
      }
    }
  };
  const view = (key: string, ref: string) =>
    get<OrderView & { providerRef?: string; workflowId: string }>(api, key, `/v1/orders/${ref}`).then(
      (r) => r.body,
    );

  before(async () => {
    stack = await startOrderStack({ name: 'read-scale', workers: { main: {} } });
    // Twenty readers of a client at once: its per-client limits are the bench's, not the default 16 in flight.
    const limits = {
      API_CONCURRENT_REQUESTS: '100',
      API_RATE_LIMIT_PER_MINUTE: '1000000',
      API_TEMPORAL_TIMEOUT_MS: '5000',
    };
    const common = {
      taskQueue: stack.taskQueues.main,
      provider: stack.provider.client,
      clients: registry,
      timingsFor: () => scaledTimings(),
    };
    api = await startTestApi({
      ...common,
      client: await countingClient('cached'),
      config: apiTestConfig({ ...limits, API_READ_CACHE_MS: String(CACHE_MS) }),
    });
    uncachedApi = await startTestApi({
      ...common,
      client: await countingClient('uncached'),
      config: apiTestConfig({ ...limits, API_READ_CACHE_MS: '0' }),
    });

    const submit = async (key: string, ref: string, msisdn?: string) => {
      const res = await api.request('POST', '/v1/orders', { apiKey: key, body: mobileRequest(ref, msisdn) });
      assert.equal(res.status, 201, res.text);
    };
    await Promise.all([
      ...refs.a.map((ref) => submit(keys.a, ref)),
      submit(keys.a, refs.aReview, sandboxSpecialNumbers.unknownError),
      ...refs.b.map((ref) => submit(keys.b, ref)),
      submit(keys.b, refs.bReset),
    ]);
    await eventually(async () => {
      for (const ref of [...refs.a]) assert.equal((await view(keys.a, ref)).status, 'FULFILLED');
      for (const ref of [...refs.b, refs.bReset]) assert.equal((await view(keys.b, ref)).status, 'FULFILLED');
      // Entering review continues the order as new: its review run holds NEEDS_REVIEW.
      assert.equal((await view(keys.a, refs.aReview)).status, 'NEEDS_REVIEW');
    });

    // An operator resets b's completed order to its first workflow task: the new run looks the
    // order up at the provider, which now says REFUNDED. Its first run stays in visibility as FULFILLED.
    const reset = await view(keys.b, refs.bReset);
    await stack.sandbox.changeTopup(reset.providerRef!, { status: 'REFUNDED' });
    const handle = stack.client.workflow.getHandle(reset.workflowId);
    const firstRunId = (await handle.describe()).runId;
    const events =
      (await stack.client.workflow.getHandle(reset.workflowId, firstRunId).fetchHistory()).events ?? [];
    const firstTask = events.find(
      (e) => e.eventType === proto.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    );
    assert.ok(firstTask?.eventId);
    await stack.client.workflowService.resetWorkflowExecution({
      namespace: stack.temporal.namespace,
      workflowExecution: { workflowId: reset.workflowId, runId: firstRunId },
      reason: 'read-scale test: pressed Reset',
      workflowTaskFinishEventId: firstTask.eventId,
      requestId: randomUUID(),
    });
    await eventually(async () => {
      const { count } = await stack.client.workflow.count(
        `WorkflowId = '${reset.workflowId}' AND ExecutionStatus = 'Completed' AND OrderStatus = 'REFUNDED'`,
      );
      assert.equal(count, 1);
    });
  });

  after(async () => {
    await api?.close();
    await uncachedApi?.close();
    await stack?.stop();
    await Promise.all(connections.map((c) => c.close()));
    connections = [];
  });

  /** What client `who` must see: its orders once each, by their latest runs. */
  const expected = {
    a: () =>
      Object.fromEntries([
        ...refs.a.map((ref) => [ref, 'FULFILLED']),
        [refs.aReview, 'NEEDS_REVIEW'],
      ]) as Record<string, string>,
    b: () =>
      Object.fromEntries([...refs.b.map((ref) => [ref, 'FULFILLED']), [refs.bReset, 'REFUNDED']]) as Record<
        string,
        string
      >,
  };

  /** One reader's answers, each checked: its own orders only, each once, as its latest run. */
  async function readAs(who: 'a' | 'b', statuses: Record<string, string>): Promise<void> {
    const key = keys[who];
    const own = ids[who];
    const [listed, books, rows] = await Promise.all([list(key), statement(key), exported(key)]);
    for (const order of listed) assert.equal(order.client, own, `${who} listed ${order.workflowId}`);
    assert.equal(new Set(listed.map((o) => o.workflowId)).size, listed.length, 'each order once');
    assert.deepEqual(Object.fromEntries(listed.map((o) => [o.ref, o.status])), statuses);
    for (const row of rows) assert.equal(row.client, own, `${who} exported ${row.ref}`);
    assert.deepEqual(Object.fromEntries(rows.map((r) => [r.ref, r.status])), statuses);
    assert.equal(rows.length, Object.keys(statuses).length, 'each order once');
    assert.equal(books.client, own);
    const counted = (lines: StatementLine[]) =>
      Object.fromEntries(lines.map((l) => [l.status, l.orders])) as Record<string, number>;
    const byStatus: Record<string, number> = {};
    for (const status of Object.values(statuses)) byStatus[status] = (byStatus[status] ?? 0) + 1;
    assert.deepEqual({ ...counted(books.days), ...counted(books.open) }, byStatus);
  }

  it('20 readers of two clients and two operators at once: only their own orders, each once, by its latest run', async () => {
    await eventually(() =>
      Promise.all([readAs('a', expected.a()), readAs('b', expected.b())]).then(() => {}),
    );
    const reviewRef = refs.aReview;
    const readers = Array.from({ length: 20 }, async (_, r) => {
      for (let round = 0; round < 5; round++) {
        if (r < 2) {
          // The operators' review queue: orders in review of every client, ours once.
          const queue = await list(r === 0 ? keys.ops : keys.ops2, '&status=NEEDS_REVIEW');
          assert.ok(queue.every((o) => o.status === 'NEEDS_REVIEW'));
          assert.equal(queue.filter((o) => o.ref === reviewRef).length, 1);
          assert.ok(!queue.some((o) => o.client === ids.b), 'b has no order in review');
        } else {
          await readAs(r % 2 ? 'a' : 'b', r % 2 ? expected.a() : expected.b());
        }
      }
    });
    await Promise.all(readers);
  });

  it('20 identical list requests in flight cost the visibility calls of one page; without the cache, one page each', async () => {
    await sleep(CACHE_MS + 100);
    const burst = async (target: TestApi, which: keyof typeof calls) => {
      const before = calls[which];
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          get<{ orders: Summary[] }>(target, keys.b, '/v1/orders?pageSize=50'),
        ),
      );
      for (const answer of answers) assert.deepEqual(answer.body, answers[0]!.body);
      return calls[which] - before;
    };
    const cached = await burst(api, 'cached');
    const uncached = await burst(uncachedApi, 'uncached');
    // A page is a few counts and reads (order-list.ts: more while its window grows) plus the latest-run check.
    assert.ok(cached >= 1 && cached <= 25, `cached: ${cached} visibility calls`);
    assert.ok(uncached >= 20 * 2, `uncached: ${uncached} visibility calls`);
    assert.ok(uncached >= 10 * cached, `cached ${cached}, uncached ${uncached}`);
  });

  it('once the order in review is decided, every read shows its new latest run within the cache’s time and visibility’s lag, never two of it', async () => {
    // Warm the cache with the order in review.
    await readAs('a', expected.a());
    const review = await view(keys.a, refs.aReview);
    await stack.sandbox.changeTopup(review.providerRef!, { status: 'REFUNDED' });
    const res = await api.request('POST', `/v1/orders/${refs.aReview}/review`, {
      apiKey: keys.a,
      body: { decision: 'REFUNDED', operator: 'amina', note: 'refunded by the provider' },
    });
    // Applied, or the order's own re-check found REFUNDED first.
    assert.ok([200, 202, 409].includes(res.status), res.text);
    const decided = { ...expected.a(), [refs.aReview]: 'REFUNDED' };
    const started = Date.now();
    await eventually(async () => {
      // Whatever each answer shows meanwhile, it shows the order once (readAs checks it) as one of its runs.
      await readAs('a', decided).catch(async (err: unknown) => {
        const listed = await list(keys.a);
        assert.equal(listed.filter((o) => o.ref === refs.aReview).length, 1, 'the order once, always');
        throw err;
      });
    }, 30_000);
    // The cache adds at most its time to visibility's lag.
    assert.ok(Date.now() - started < 20_000, `shown after ${Date.now() - started} ms`);
    const queue = await list(keys.ops, '&status=NEEDS_REVIEW');
    assert.ok(!queue.some((o) => o.ref === refs.aReview));
  });
});
