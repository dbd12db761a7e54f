/**
 * POST /v1/reviews/bulk end to end: a real Temporal dev server, a real worker and the sandbox over
 * HTTP. A provider outage (every mobile status check answers 503) sends 200 orders to review as
 * stuck; the outage ends; one bulk RECHECK settles every one of them through each order's own
 * decideReview update, with a result per order and the bulk's update ID in each history. The
 * orders re-check the provider on their own only after an hour here, so only the bulk settles them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Problem } from '../../src/http/errors';
import { apiTestConfig, testClients, type TestApi } from '../helpers/api';
import type { BulkReviewAnswer } from '../../src/reviews/bulk-review.service';
import { OrderClientAttribute, OrderStatusAttribute, orderWorkflowId } from '../../contract/order';
import { mobileRequest, scaledTimings, type TestSandbox } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const ORDERS = 200;
const key = (client: keyof typeof testClients) => ({ apiKey: testClients[client].key });

describe('POST /v1/reviews/bulk: one RECHECK after a provider outage', () => {
  let stack: OrderStack<'main'>;
  let sandbox: TestSandbox;
  let api: TestApi;
  let client: Client;
  const run = randomUUID().slice(0, 8);
  const refs = Array.from({ length: ORDERS }, (_, i) => `BULK-${run}-${String(i).padStart(3, '0')}`);
  const inReviewQuery = () =>
    `TaskQueue = '${stack.taskQueues.main}' AND ${OrderClientAttribute.name} = 'acme' AND ${OrderStatusAttribute.name} = 'NEEDS_REVIEW'`;

  /** Sends the bulk until it is done (a 202 is collected by sending it again). */
  async function bulk(body: object, as: keyof typeof testClients): Promise<BulkReviewAnswer> {
    for (let attempt = 0; attempt < 30; attempt++) {
      const res = await api.request<BulkReviewAnswer>('POST', '/v1/reviews/bulk', { body, ...key(as) });
      assert.ok(res.status === 200 || res.status === 202, `${res.status} ${res.text}`);
      if (res.status === 200) return res.body;
      assert.equal(res.body.state, 'running');
    }
    assert.fail('the bulk did not finish');
  }

  before(async () => {
    stack = await startOrderStack({
      name: 'bulk',
      workers: { main: {} },
      api: {
        // Stuck after 2 s; in review, the order itself re-checks only after an hour.
        timingsFor: () => scaledTimings({ deadlineMs: 2_000, reviewRecheckMs: 3_600_000 }),
        config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '5000' }),
      },
    });
    ({ client, sandbox, api } = stack);

    // The outage: every status check fails; sends still go through.
    await sandbox.addFault({ kind: 'error', status: 503, routes: ['mobile.check', 'mobile.checkId'] });
    const res = await api.request<{ results: { status: number }[] }>('POST', '/v1/orders/batch', {
      body: { orders: refs.map((ref) => mobileRequest(ref)) },
      ...key('acme'),
    });
    assert.equal(res.status, 200, res.text);
    assert.ok(
      res.body.results.every((r) => r.status === 201),
      JSON.stringify(res.body.results.find((r) => r.status !== 201)),
    );
    const deadline = Date.now() + 120_000;
    while ((await client.workflow.count(inReviewQuery())).count < ORDERS) {
      assert.ok(Date.now() < deadline, 'every order went to review during the outage');
      await sleep(500);
    }
    await sandbox.clearFaults();
  });

  after(async () => {
    await Promise.allSettled(
      refs.map((ref) => client.workflow.getHandle(orderWorkflowId(ref, 'acme')).terminate('test done')),
    );
    await stack?.stop();
  });

  it('another client without the operator role reaches none of them: its own bulk matches nothing, and naming acme is a 404', async () => {
    const own = await bulk(
      { bulkId: `shop-${run}`, decision: 'RECHECK', note: 'nothing of ours is in review' },
      'shop',
    );
    assert.deepEqual(own.results, []);
    assert.equal(own.matched, 0);
    const other = await api.request<Problem>('POST', '/v1/reviews/bulk', {
      body: { bulkId: `shop-acme-${run}`, filter: { client: 'acme' }, decision: 'RECHECK', note: 'x' },
      ...key('shop'),
    });
    assert.equal(other.status, 404, other.text);
    assert.equal(other.body.type, '/problems/client-not-found');
    assert.equal((await client.workflow.count(inReviewQuery())).count, ORDERS, 'nothing was decided');
  });

  it('no scope is a 403 and no key a 401, before the body is read', async () => {
    const body = { bulkId: `nope-${run}`, decision: 'RECHECK', note: 'x' };
    const reader = await api.request('POST', '/v1/reviews/bulk', { body, ...key('reader') });
    assert.equal(reader.status, 403);
    const anonymous = await api.request('POST', '/v1/reviews/bulk', { body, apiKey: null });
    assert.equal(anonymous.status, 401);
  });

  it('bad input is a 400 naming the field: a status that takes no decisions, force with RECHECK, a bad bulkId', async () => {
    const res = await api.request<Problem>('POST', '/v1/reviews/bulk', {
      body: {
        bulkId: 'no spaces',
        filter: { status: 'FULFILLED' },
        decision: 'RECHECK',
        force: true,
        note: 'x',
      },
      ...key('operator'),
    });
    assert.equal(res.status, 400, res.text);
    assert.deepEqual(res.body.errors?.map((e) => e.field).sort(), ['bulkId', 'filter.status', 'force']);
  });

  it(`an operator's one bulk RECHECK settles all ${ORDERS} orders, a result per order, the bulk ID in each history; sent again it answers the same`, async () => {
    const bulkId = `outage-${run}`;
    const body = {
      bulkId,
      filter: { client: 'acme', status: 'NEEDS_REVIEW', type: 'mobile_topup', reason: 'stuck' },
      decision: 'RECHECK',
      note: 'provider outage over',
    };
    const answer = await bulk(body, 'operator');
    assert.equal(answer.state, 'done');
    assert.equal(answer.matched, ORDERS);
    assert.equal(answer.truncated, false);
    assert.deepEqual(answer.results?.map((r) => r.ref).sort(), refs);
    for (const result of answer.results ?? []) {
      assert.equal(result.client, 'acme');
      assert.equal(result.outcome, 'rechecked', JSON.stringify(result));
      assert.equal(result.status, 'FULFILLED', JSON.stringify(result));
    }
    const deadline = Date.now() + 20_000;
    while ((await client.workflow.count(inReviewQuery())).count > 0) {
      assert.ok(Date.now() < deadline, 'visibility shows none left in review');
      await sleep(300);
    }

    // Each order's history names the bulk: the update's ID and the decision's note.
    const history = await client.workflow.getHandle(orderWorkflowId(refs[0]!, 'acme')).fetchHistory();
    const accepted = (history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes);
    assert.deepEqual(
      accepted.map((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.meta?.updateId),
      [`bulk:${bulkId}`],
    );
    const args = accepted[0]?.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args;
    const decision = JSON.parse(Buffer.from(args?.payloads?.[0]?.data ?? []).toString('utf8')) as {
      note: string;
      decidedBy: string;
    };
    assert.equal(decision.note, `provider outage over (bulk ${bulkId})`);
    assert.equal(decision.decidedBy, 'operator');

    // Idempotent: the same request answers the same bulk; the same ID with another request is a 409.
    const again = await bulk(body, 'operator');
    assert.deepEqual(again, answer);
    const conflict = await api.request<Problem>('POST', '/v1/reviews/bulk', {
      body: { ...body, decision: 'REFUNDED' },
      ...key('operator'),
    });
    assert.equal(conflict.status, 409, conflict.text);
    assert.equal(conflict.body.type, '/problems/bulk-conflict');

    // The owner's own bulk now finds nothing in review: 200 with zero results.
    const none = await bulk({ bulkId: `acme-${run}`, decision: 'RECHECK', note: 'anything left?' }, 'acme');
    assert.equal(none.matched, 0);
    assert.deepEqual(none.results, []);
  });
});
