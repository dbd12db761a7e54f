/**
 * Reading orders when no worker runs, end to end: real HTTP against createApp with the test
 * clients, a real Temporal server, the provider sandbox, and a worker on this file's own task queue
 * that is stopped once the orders are seeded. A closed order is read from its close event, an open
 * one is rebuilt from Temporal's records (`live: false`), a terminated one likewise, and an order
 * that continued as new is read from its last run — for the owner only, as every read is.
 * Payloads are encrypted (PAYLOAD_ENCRYPTION_KEYS), so every view read from a history goes
 * through the payload codec.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, type Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { MASKED } from '../../src/audit/mask';
import type { OrderView } from '../../src/orders/order.service';
import { requestHash } from '../../src/orders/order.service';
import { OrderReader } from '../../src/orders/order-read.service';
import { OrderView as OrderViewSchema } from '../../src/http/schemas';
import { dataConverterFromConfig } from '../../src/codec/data-converter';
import {
  apiTestConfig,
  startTestApi,
  type ApiResponse,
  type TestApi,
  type TestClientId,
  testCallerKey,
  type TestCaller,
} from '../helpers/api';
import { providerRefFor } from '../../src/orders/provider-ref';
import type { OrderRequest } from '../../contract/schemas';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { orderWorkflowId, workflowTypeByOrderType, type OrderInput } from '../../contract/order';
import {
  giftCardRequest,
  mobileRequest,
  scaledTimings,
  type testProvider,
  refsPrefixed,
  startOrderAs,
} from '../helpers/orders';
import type { TestTemporal } from '../helpers/temporal';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const newRef = refsPrefixed('RD');

/** A 200 view that is valid against the OpenAPI schema. */
function okView(res: ApiResponse<OrderView>): OrderView {
  assert.equal(res.status, 200, res.text);
  const parsed = OrderViewSchema.safeParse(res.body);
  assert.ok(parsed.success, `schema-valid view: ${parsed.error?.message ?? ''}`);
  return res.body;
}

describe('reading orders with no worker running', () => {
  let stack: OrderStack<'main'>;
  let temporal: TestTemporal;
  let provider: ReturnType<typeof testProvider>;
  let connection: Connection;
  let client: Client;
  let api: TestApi;
  let taskQueue: string;
  const dataConverter = dataConverterFromConfig({
    PAYLOAD_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
  });
  const refs = {
    closed: newRef('closed'),
    acmeClosed: newRef('acme'),
    open: newRef('open'),
    acmeOpen: newRef('acme-open'),
    terminated: newRef('terminated'),
    continued: newRef('continued'),
  };

  const read = (caller: TestCaller, ref: string, through: TestApi = api) =>
    through.request<OrderView>('GET', `/v1/orders/${ref}`, { apiKey: testCallerKey(caller) });
  const readAs = (caller: TestCaller, owner: TestClientId, ref: string) =>
    api.request<OrderView>('GET', `/v1/orders/${ref}?client=${owner}`, { apiKey: testCallerKey(caller) });

  async function pollUntil(
    caller: TestCaller,
    ref: string,
    done: (v: OrderView) => boolean,
  ): Promise<OrderView> {
    const deadline = Date.now() + 30_000;
    let last: OrderView | undefined;
    while (Date.now() < deadline) {
      last = okView(await read(caller, ref));
      if (done(last)) return last;
      await sleep(100);
    }
    throw new Error(`order ${ref} not as expected; last view: ${JSON.stringify(last)}`);
  }

  async function submit(caller: TestCaller, request: OrderRequest): Promise<void> {
    const res = await api.request('POST', '/v1/orders', { body: request, apiKey: testCallerKey(caller) });
    assert.equal(res.status, 201, res.text);
  }

  /**
   * Started as the API starts shop's orders, with a history limit low enough that its review
   * (rechecked every 50 ms) continues as new: the intake API has no way to lower it.
   */
  async function startLongReview(ref: string) {
    const request = mobileRequest(ref, sandboxSpecialNumbers.unknownError);
    const providerRef = providerRefFor('shop', ref);
    const input: OrderInput = {
      request,
      acceptedAt: new Date().toISOString(),
      clientId: 'shop',
      providerRef,
      timings: scaledTimings({ reviewRecheckMs: 50, reviewWatchMs: 0 }),
      historyEventLimit: 40,
    };
    return startOrderAs(client, {
      taskQueue,
      input,
      owner: 'shop',
      rejectDuplicate: true,
      memo: { requestHash: requestHash(request), providerRef },
    });
  }

  before(async () => {
    stack = await startOrderStack({
      name: 'api-read',
      workers: { main: {} },
      dataConverter,
      api: { timingsFor: () => scaledTimings(), config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '5000' }) },
    });
    ({ temporal, provider, connection, client, api } = stack);
    taskQueue = stack.taskQueues.main;

    // Seeded while the worker runs: two final orders (the default client's and acme's, whose
    // workflow IDs take the two forms), one waiting in review, one terminated in review, and one
    // that continued as new in review before a decision settled it.
    const longReview = await startLongReview(refs.continued);
    await Promise.all([
      submit('shop', mobileRequest(refs.closed)),
      submit('acme', giftCardRequest(refs.acmeClosed, 1)),
      submit('shop', mobileRequest(refs.open, sandboxSpecialNumbers.unknownError)),
      submit('acme', mobileRequest(refs.acmeOpen, sandboxSpecialNumbers.unknownError)),
      submit('shop', mobileRequest(refs.terminated, sandboxSpecialNumbers.unknownError)),
    ]);
    await Promise.all([
      client.workflow.getHandle(orderWorkflowId(refs.closed)).result(),
      client.workflow.getHandle(orderWorkflowId(refs.acmeClosed, 'acme')).result(),
      pollUntil('shop', refs.open, (v) => v.status === 'NEEDS_REVIEW'),
      pollUntil('acme', refs.acmeOpen, (v) => v.status === 'NEEDS_REVIEW' && v.live === undefined),
      pollUntil('shop', refs.terminated, (v) => v.status === 'NEEDS_REVIEW'),
    ]);
    await client.workflow.getHandle(orderWorkflowId(refs.terminated)).terminate('test: ended by hand');

    const firstRun = longReview.firstExecutionRunId;
    const deadline = Date.now() + 30_000;
    while ((await longReview.describe()).runId === firstRun) {
      assert.ok(Date.now() < deadline, 'the long review continued as new');
      await sleep(100);
    }
    // Forced over the provider's UNKNOWN_ERROR: an operator's decision (docs/operators.md).
    const decided = await api.request<OrderView>('POST', `/v1/orders/${refs.continued}/review?client=shop`, {
      body: { decision: 'FULFILLED', operator: 'amina', note: 'confirmed by phone', force: true },
      apiKey: testCallerKey('operator'),
    });
    assert.equal(decided.status, 200, decided.text);
    assert.equal((await longReview.result()).status, 'FULFILLED');

    await stack.stopWorker('main');
  });

  after(async () => {
    for (const id of [orderWorkflowId(refs.open), orderWorkflowId(refs.acmeOpen, 'acme')]) {
      await client?.workflow
        .getHandle(id)
        .terminate('test done')
        .catch(() => {});
    }
    await stack?.stop();
  });

  it('a closed order is read from its result: the owner and an auditor get it, others a 404 / 403 / 401', async () => {
    const view = okView(await read('shop', refs.closed));
    assert.equal(view.status, 'FULFILLED');
    assert.equal(view.workflowStatus, 'COMPLETED');
    assert.equal(view.live, undefined, 'the workflow’s own final view');
    assert.equal(view.result?.msisdn, mobileRequest(refs.closed).msisdn);
    assert.equal(view.providerRef, providerRefFor('shop', refs.closed));
    const { history } = await client.workflowService.getWorkflowExecutionHistory({
      namespace: temporal.namespace,
      execution: { workflowId: orderWorkflowId(refs.closed) },
      historyEventFilterType: proto.api.enums.v1.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
    });
    const stored = history?.events?.[0]?.workflowExecutionCompletedEventAttributes?.result?.payloads?.[0];
    assert.equal(
      Buffer.from(stored?.metadata?.encoding ?? []).toString(),
      'binary/encrypted',
      'the view was stored encrypted and read through the codec',
    );
    assert.equal(view.timeline[0]?.status, 'ACCEPTED');
    assert.equal(view.timeline.at(-1)?.status, 'FULFILLED');
    // An auditor reads it as its owner does, but for the phone number (test/audit/view-masking.test.ts).
    assert.deepEqual(okView(await readAs('auditor', 'shop', refs.closed)), {
      ...view,
      request: { ...view.request, msisdn: MASKED },
      result: { ...view.result, msisdn: MASKED },
    });
    assert.equal((await read('acme', refs.closed)).status, 404);
    assert.equal((await readAs('acme', 'shop', refs.closed)).status, 404);
    assert.equal((await read('writer', refs.closed)).status, 403);
    assert.equal((await read('nobody', refs.closed)).status, 401);

    // The default client's `order-<ref>` form is shared with orders from before clients, yet its
    // completed view names the owner: one read of the close event decides, no describe.
    const calls: string[] = [];
    const service = new Proxy(connection.workflowService, {
      get: (target, method, receiver) => {
        const value: unknown = Reflect.get(target, method, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => (calls.push(String(method)), Reflect.apply(value, target, args));
      },
    });
    const countingConnection = new Proxy(connection, {
      get: (target, prop, receiver) =>
        prop === 'workflowService' ? service : Reflect.get(target, prop, receiver),
    });
    const counting = await startTestApi({
      client: new Client({ connection: countingConnection, namespace: temporal.namespace, dataConverter }),
      taskQueue,
      provider: provider.client,
      config: apiTestConfig(),
    });
    try {
      assert.deepEqual(okView(await read('shop', refs.closed, counting)), view);
      assert.deepEqual(calls, ['getWorkflowExecutionHistoryReverse'], 'the last event alone');
    } finally {
      await counting.close();
    }

    // Another client's order, in the `order:<client>:<ref>` form, the same way round.
    const acme = okView(await read('acme', refs.acmeClosed));
    assert.equal(acme.status, 'FULFILLED');
    assert.equal(acme.result?.cards?.length, 1);
    assert.notEqual(acme.result?.cards?.[0]?.code, MASKED, 'the owner reads its card codes');
    assert.equal((await read('shop', refs.acmeClosed)).status, 404);
    // An auditor (even one holding audit:reveal) reads another client's card codes masked: only
    // reveal=true (the view's or the audit export's) shows them, and records it.
    const audited = okView(await readAs('auditor', 'acme', refs.acmeClosed));
    assert.deepEqual(audited.result?.cards, [{ ...acme.result!.cards![0]!, code: MASKED }]);
  });

  it('telling a completed order from an open one reads one event and never waits for the order to close', async () => {
    // Temporal holds a close-event read of a running workflow until it closes (or 20 s pass): a
    // deadline well above one RPC and well below that tells the two apart.
    const reader = new OrderReader(client, (fn) => client.withDeadline(Date.now() + 3_000, fn));
    // One nothing happens to: accepted on a task queue no worker polls.
    const untouched = newRef('untouched');
    await client.workflow.start(workflowTypeByOrderType.mobile_topup, {
      taskQueue: `nobody-${randomUUID()}`,
      workflowId: orderWorkflowId(untouched),
      args: [
        { request: mobileRequest(untouched), acceptedAt: new Date().toISOString() } satisfies OrderInput,
      ],
    });
    try {
      assert.deepEqual(await reader.closedView(orderWorkflowId(untouched), untouched), { kind: 'open' });
    } finally {
      await client.workflow.getHandle(orderWorkflowId(untouched)).terminate('test done');
    }
    assert.deepEqual(await reader.closedView(orderWorkflowId(refs.open), refs.open), { kind: 'open' });
    assert.deepEqual(await reader.closedView(orderWorkflowId(refs.acmeOpen, 'acme'), refs.acmeOpen), {
      kind: 'open',
    });
    assert.deepEqual(await reader.closedView(orderWorkflowId(refs.terminated), refs.terminated), {
      kind: 'other',
    });
    const closed = await reader.closedView(orderWorkflowId(refs.closed), refs.closed);
    assert.equal(closed.kind === 'completed' && closed.view.status, 'FULFILLED');
  });

  it('an open order answers 200 with a view rebuilt from Temporal’s records, marked live: false', async () => {
    // A short deadline: the first read waits for it (no worker answers the query), later ones do not.
    const impatient = await stack.startApi({ config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '1000' }) });
    try {
      for (let i = 0; i < 3; i++) {
        const view = okView(await read('shop', refs.open, impatient));
        assert.equal(view.status, 'NEEDS_REVIEW', 'the status the workflow last published');
        assert.equal(view.live, false);
        assert.equal(view.workflowStatus, 'RUNNING');
        assert.deepEqual(view.request, mobileRequest(refs.open, sandboxSpecialNumbers.unknownError));
        assert.equal(view.timeline[0]?.status, 'ACCEPTED');
        // The review's run carries the view it entered review with: why is there without a worker.
        assert.equal(view.review?.reason, 'the provider reports UNKNOWN_ERROR');
      }
      assert.equal((await read('acme', refs.open, impatient)).status, 404);

      // Another client's order (its workflow ID names it): the same, and shop cannot see it.
      const acme = okView(await read('acme', refs.acmeOpen, impatient));
      assert.equal(acme.status, 'NEEDS_REVIEW');
      assert.equal(acme.live, false);
      assert.equal(acme.client, 'acme');
      assert.equal(acme.providerRef, providerRefFor('acme', refs.acmeOpen));
      assert.equal((await read('shop', refs.acmeOpen, impatient)).status, 404);

      // A worker again: a background query finds it, and the views are the workflow's own again.
      await stack.startWorker('main');
      try {
        const deadline = Date.now() + 30_000;
        for (;;) {
          const view = okView(await read('shop', refs.open, impatient));
          if (view.live === undefined) {
            assert.equal(view.status, 'NEEDS_REVIEW');
            assert.equal(view.review?.reason !== undefined, true, 'the live view has the review details');
            break;
          }
          assert.ok(Date.now() < deadline, 'live views are back once a worker answers');
          await sleep(200);
        }
      } finally {
        await stack.stopWorker('main');
      }
      assert.equal((await read('writer', refs.open, impatient)).status, 403);
      assert.equal((await read('nobody', refs.open, impatient)).status, 401);
    } finally {
      await impatient.close();
    }
  });

  it('a terminated order answers 200 with its last status, its workflow status and how it ended', async () => {
    const view = okView(await read('shop', refs.terminated));
    assert.equal(view.status, 'NEEDS_REVIEW');
    assert.equal(view.workflowStatus, 'TERMINATED');
    assert.equal(view.live, false);
    assert.match(view.timeline.at(-1)?.event ?? '', /workflow was terminated/);
    assert.equal((await read('acme', refs.terminated)).status, 404);
  });

  it('an order that continued as new is read from its last run after it closed', async () => {
    const view = okView(await read('shop', refs.continued));
    assert.equal(view.status, 'FULFILLED');
    assert.equal(view.workflowStatus, 'COMPLETED');
    assert.equal(view.live, undefined);
    assert.equal(view.review?.resolution?.operator, 'amina');
    assert.equal(view.timeline[0]?.status, 'ACCEPTED', 'the timeline was carried over the runs');
    assert.equal((await read('acme', refs.continued)).status, 404);
  });
});
