/**
 * The intake API end to end: real HTTP against createApp, a real Temporal server, the provider
 * sandbox (100× faster than the spec) and a worker running the real workflows and activities on a
 * task queue of this file's own. Orders go from POST to FULFILLED through the API alone.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Problem } from '../../src/http/errors';
import { canonicalJson } from '../../src/orders/order.service';
import { apiTestConfig, startTestApi, type TestApi, apiViewUntil } from '../helpers/api';
import { providerRefFor } from '../../src/orders/provider-ref';
import {
  OrderClientAttribute,
  OrderStatusAttribute,
  OrderTypeAttribute,
  orderWorkflowId,
  type OrderStatus,
  type OrderView,
} from '../../contract/order';
import {
  giftCardRequest,
  internetRequest,
  mobileRequest,
  scaledTimings,
  type testProvider,
  type TestSandbox,
  mobileResultBesidesDebit,
  refsPrefixed,
} from '../helpers/orders';
import type { TestTemporal } from '../helpers/temporal';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const newRef = refsPrefixed('API');

describe('intake API end to end', () => {
  let stack: OrderStack<'main'>;
  let temporal: TestTemporal;
  let sandbox: TestSandbox;
  let provider: ReturnType<typeof testProvider>;
  let client: Client;
  let api: TestApi;
  let taskQueue: string;

  before(async () => {
    stack = await startOrderStack({
      name: 'api-e2e',
      workers: { main: {} },
      api: {
        timingsFor: () => scaledTimings(),
        // 50 concurrent submissions of one ref test idempotency, not the per-client concurrency cap.
        config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '5000', API_CONCURRENT_REQUESTS: '64' }),
      },
    });
    ({ temporal, sandbox, provider, client, api } = stack);
    taskQueue = stack.taskQueues.main;
  });

  after(() => stack?.stop());

  /** Polls GET /v1/orders/{ref} until the order reaches `status`. */
  const pollUntil = (ref: string, status: OrderStatus, timeoutMs = 20_000): Promise<OrderView> =>
    apiViewUntil(api, ref, (view) => view.status === status, { what: status, timeoutMs });

  describe('the life of each order type through the API', () => {
    it('a mobile top-up: POST → 201 + Location + ACCEPTED view, then GET until FULFILLED with the result and a timeline', async () => {
      const request = mobileRequest(newRef('mobile'));
      const res = await api.request<OrderView>('POST', '/v1/orders', { body: request });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.headers.location, `/v1/orders/${request.ref}`);
      assert.equal(res.body.status, 'ACCEPTED');
      assert.deepEqual(res.body.request, request);

      const view = await pollUntil(request.ref, 'FULFILLED');
      assert.equal(view.ref, request.ref);
      assert.equal(view.type, 'mobile_topup');
      assert.deepEqual(view.request, request);
      assert.deepEqual(mobileResultBesidesDebit(view.result), {
        msisdn: request.msisdn,
        amount: request.amount,
      });
      assert.equal(view.acceptedAt, res.body.acceptedAt);
      assert.ok(view.completedAt);
      assert.ok(view.timeline.length >= 2);
      assert.equal(view.timeline.at(-1)?.status, 'FULFILLED');
    });

    it('an internet top-up: POST → 201, then FULFILLED with a card code and transaction number', async () => {
      const request = internetRequest(newRef('internet'));
      assert.equal((await api.request('POST', '/v1/orders', { body: request })).status, 201);
      const view = await pollUntil(request.ref, 'FULFILLED');
      assert.ok(view.result?.cardCode);
      assert.ok(view.result?.transactionNumber);
    });

    it('an ADSL top-up to a fixed line’s 9-digit number (021123456) is accepted and FULFILLED against the sandbox', async () => {
      const request = { ...internetRequest(newRef('adsl9')), lineType: 'ADSL', number: '021123456' } as const;
      const res = await api.request<OrderView>('POST', '/v1/orders', { body: request });
      assert.equal(res.status, 201, res.text);
      const view = await pollUntil(request.ref, 'FULFILLED');
      assert.deepEqual(view.request, request);
      assert.ok(view.result?.cardCode);
      const sends = await sandbox.sendsOf(providerRefFor('shop', request.ref));
      assert.equal(sends.accepted, 1, 'the sandbox took the 9-digit line number');
    });

    it('a gift-card order: POST → 201, then FULFILLED with one card per unit', async () => {
      const request = giftCardRequest(newRef('gift'), 2);
      assert.equal((await api.request('POST', '/v1/orders', { body: request })).status, 201);
      const view = await pollUntil(request.ref, 'FULFILLED');
      assert.equal(view.result?.cards?.length, 2);
      assert.ok(view.providerReference);
    });

    it('a mobile top-up to 0600000001 ends REFUNDED through the API', async () => {
      const request = mobileRequest(newRef('refund'), '0600000001');
      assert.equal((await api.request('POST', '/v1/orders', { body: request })).status, 201);
      const view = await pollUntil(request.ref, 'REFUNDED');
      assert.equal(view.providerStatus, 'REFUNDED');
    });
  });

  describe('review through the API', () => {
    it('0600000003 → NEEDS_REVIEW; POST review FULFILLED → 200 with the order FULFILLED and the decision recorded', async () => {
      const request = mobileRequest(newRef('review'), '0600000003');
      assert.equal((await api.request('POST', '/v1/orders', { body: request })).status, 201);
      const inReview = await pollUntil(request.ref, 'NEEDS_REVIEW');
      assert.ok(inReview.review?.reason);

      const decision = { decision: 'FULFILLED', operator: 'amina.b', note: 'Confirmed with the provider.' };
      const res = await api.request<OrderView>('POST', `/v1/orders/${request.ref}/review`, {
        body: decision,
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.ref, request.ref);
      assert.equal(res.body.status, 'FULFILLED', 'the answer is the view after the decision');

      const view = await pollUntil(request.ref, 'FULFILLED');
      assert.equal(view.review?.resolution?.operator, 'amina.b');
      assert.equal(view.review?.resolution?.decision, 'FULFILLED');
      assert.equal(view.review?.resolution?.provider?.status, 'UNKNOWN_ERROR', 'what the provider said');
    });

    it('a review on an order that is not in review → 409 order-not-in-review', async () => {
      const request = giftCardRequest(newRef('noreview'), 1);
      assert.equal((await api.request('POST', '/v1/orders', { body: request })).status, 201);
      await pollUntil(request.ref, 'FULFILLED');
      const res = await api.request('POST', `/v1/orders/${request.ref}/review`, {
        body: { decision: 'REFUNDED', operator: 'op', note: 'too late' },
      });
      assert.equal(res.status, 409, res.text);
      assert.equal((res.body as Problem).type, '/problems/order-not-in-review');
    });
  });

  describe('idempotency: the ref is the key', () => {
    it('the same ref with the same body → 200 and the same order; key order does not matter', async () => {
      const request = mobileRequest(newRef('repeat'));
      const first = await api.request<OrderView>('POST', '/v1/orders', { body: request });
      assert.equal(first.status, 201);
      const reordered = Object.fromEntries(Object.entries(request).reverse());
      const again = await api.request<OrderView>('POST', '/v1/orders', { body: reordered });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.headers.location, undefined);
      assert.equal(again.body.ref, request.ref);
      assert.deepEqual(again.body.request, request);
      assert.equal(again.body.acceptedAt, first.body.acceptedAt);
    });

    it('the same ref with a different body → 409 ref-conflict, and the order is unchanged', async () => {
      const request = mobileRequest(newRef('conflict'));
      assert.equal((await api.request('POST', '/v1/orders', { body: request })).status, 201);
      const res = await api.request('POST', '/v1/orders', {
        body: { ...request, amount: (request.amount ?? 500) + 1 },
      });
      assert.equal(res.status, 409, res.text);
      assert.equal((res.body as Problem).type, '/problems/ref-conflict');
      const view = await api.request<OrderView>('GET', `/v1/orders/${request.ref}`);
      assert.equal(view.body.request.type === 'mobile_topup' && view.body.request.amount, request.amount);
    });

    it('50 concurrent identical submissions → exactly one 201, 49 × 200, one workflow and one send', async () => {
      const request = mobileRequest(newRef('burst'));
      const responses = await Promise.all(
        Array.from({ length: 50 }, () => api.request<OrderView>('POST', '/v1/orders', { body: request })),
      );
      const statuses = responses.map((r) => r.status).sort();
      assert.deepEqual(
        statuses,
        [...Array<number>(49).fill(200), 201].sort(),
        responses.map((r) => r.text).join('\n'),
      );
      for (const r of responses) assert.equal(r.body.ref, request.ref);

      await pollUntil(request.ref, 'FULFILLED');
      const runs = await client.workflowService.listWorkflowExecutions({
        namespace: temporal.namespace,
        query: `WorkflowId = '${orderWorkflowId(request.ref)}'`,
      });
      assert.equal(runs.executions?.length, 1, 'one workflow run');
      assert.equal(
        (await sandbox.sendsOf(providerRefFor('shop', request.ref))).accepted,
        1,
        'one send to the provider',
      );
    });

    it('a new order carries a sha256 of its canonical request (never the request), its provider ref and its figures (no phone number) in the memo, and its search attributes', async () => {
      const request = mobileRequest(newRef('memo'));
      assert.equal((await api.request('POST', '/v1/orders', { body: request })).status, 201);
      const description = await client.workflow.getHandle(orderWorkflowId(request.ref)).describe();
      const expected = createHash('sha256').update(canonicalJson(request)).digest('hex');
      assert.deepEqual(description.memo, {
        requestHash: expected,
        providerRef: providerRefFor('shop', request.ref),
        figures: { amount: request.amount, planCode: request.planCode },
      });
      assert.equal(description.typedSearchAttributes.get(OrderTypeAttribute), 'mobile_topup');
      assert.ok(description.typedSearchAttributes.get(OrderStatusAttribute));
      assert.equal(description.typedSearchAttributes.get(OrderClientAttribute), 'shop');
    });
  });

  describe('listing orders from Temporal visibility', () => {
    it('filters by type and status, pages with real tokens, lists newest first, and refuses a token with other filters', async () => {
      // Orders on a task queue no worker polls stay ACCEPTED and running: a stable set to list.
      const parked = await startTestApi({
        client,
        taskQueue: `${taskQueue}-parked`,
        provider: provider.client,
      });
      const refs = [newRef('list-a'), newRef('list-b'), newRef('list-c')];
      try {
        for (const ref of refs) {
          assert.equal(
            (await parked.request('POST', '/v1/orders', { body: internetRequest(ref) })).status,
            201,
          );
          await sleep(20); // distinct start times
        }
        // Visibility is eventually consistent: page through until all three are listed.
        const deadline = Date.now() + 10_000;
        let seen: string[] = [];
        let secondPageToken: string | undefined;
        while (Date.now() < deadline) {
          seen = [];
          let token: string | undefined;
          for (let page = 0; page < 50; page++) {
            const query = `type=internet_topup&status=ACCEPTED&pageSize=2${token ? `&pageToken=${token}` : ''}`;
            const res = await api.request<{
              orders: { ref: string; type: string; status: string }[];
              nextPageToken?: string;
            }>('GET', `/v1/orders?${query}`);
            assert.equal(res.status, 200, res.text);
            assert.ok(res.body.orders.length <= 2);
            for (const o of res.body.orders) {
              assert.equal(o.type, 'internet_topup');
              assert.equal(o.status, 'ACCEPTED');
            }
            seen.push(...res.body.orders.map((o) => o.ref).filter((r) => refs.includes(r)));
            token = res.body.nextPageToken;
            if (page === 0) secondPageToken = token;
            if (!token) break;
          }
          if (seen.length === refs.length) break;
          await sleep(200);
        }
        assert.deepEqual(seen, [...refs].reverse(), 'newest first');

        assert.ok(secondPageToken, 'more than one page');
        const mismatch = await api.request(
          'GET',
          `/v1/orders?type=gift_card&pageSize=2&pageToken=${secondPageToken}`,
        );
        assert.equal(mismatch.status, 400, mismatch.text);
        assert.deepEqual(
          (mismatch.body as Problem).errors?.map((e) => e.field),
          ['pageToken'],
        );
      } finally {
        await parked.close();
        await Promise.allSettled(
          refs.map((ref) => client.workflow.getHandle(orderWorkflowId(ref)).terminate('test done')),
        );
      }
    });
  });

  describe('catalog and readiness against the sandbox', () => {
    it('GET /v1/gift-cards/catalog → 200 with the provider’s categories and products', async () => {
      const res = await api.request<{ categories: { products: { id: string }[] }[] }>(
        'GET',
        '/v1/gift-cards/catalog',
      );
      assert.equal(res.status, 200, res.text);
      assert.ok(res.body.categories.some((c) => c.products.some((p) => p.id === 'GOOGLE_PLAY')));
    });

    it('GET /readyz → 200 ready with Temporal and the sandbox up', async () => {
      const res = await api.request('GET', '/readyz', { apiKey: null });
      assert.equal(res.status, 200, res.text);
    });
  });

  // Last: these stop the worker.
  describe('when no worker runs', () => {
    it('a closed order is read from its result and an open one from Temporal’s records (live: false), never a 5xx', async () => {
      const done = giftCardRequest(newRef('closed'), 1);
      assert.equal((await api.request('POST', '/v1/orders', { body: done })).status, 201);
      await pollUntil(done.ref, 'FULFILLED');
      const open = mobileRequest(newRef('open'), '0600000003');
      assert.equal((await api.request('POST', '/v1/orders', { body: open })).status, 201);
      await pollUntil(open.ref, 'NEEDS_REVIEW');

      await stack.stopWorker('main');
      const impatient = await stack.startApi({ config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '1000' }) });
      try {
        const closed = await impatient.request<OrderView>('GET', `/v1/orders/${done.ref}`);
        assert.equal(closed.status, 200, closed.text);
        assert.equal(closed.body.status, 'FULFILLED');
        assert.equal(closed.body.result?.cards?.length, 1);

        const running = await impatient.request<OrderView & { live?: boolean }>(
          'GET',
          `/v1/orders/${open.ref}`,
        );
        assert.equal(running.status, 200, running.text);
        assert.equal(running.body.status, 'NEEDS_REVIEW');
        assert.equal(running.body.live, false);

        // A repeat of the open order is still recognised: 200 with what Temporal knows, not 503.
        const repeat = await impatient.request<OrderView>('POST', '/v1/orders', { body: open });
        assert.equal(repeat.status, 200, repeat.text);
        assert.equal(repeat.body.status, 'NEEDS_REVIEW');
        assert.equal(repeat.body.ref, open.ref);
      } finally {
        await impatient.close();
        await client.workflow.getHandle(orderWorkflowId(open.ref)).terminate('test done');
      }
    });
  });
});
