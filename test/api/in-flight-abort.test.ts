/**
 * The in-flight limit against callers who hang up (issue 36, finding 2), on the real stack: a
 * Temporal dev server, a worker, the sandbox over HTTP and the API.
 *
 * The attack: acme sends 30 bulk RECHECKs of its orders in review, a new one every 50 ms, each
 * given up by the client after 50 ms. A slot freed when the response closed let every one of them
 * in, and each started a bulk that rechecks every matching order at the provider (30 bulks past a
 * limit of 16). Held until the handler ends, a slot stays taken while its bulk runs; a bulk whose
 * caller left before it started is not started. Meanwhile shop's order, another client's, reaches
 * its final status within 1.5× the time it takes on the idle stack.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { apiTestConfig, testClients, type TestApi } from '../helpers/api';
import { bulkReviewWorkflowId } from '../../contract/bulk-review';
import {
  defaultOrderTimings,
  OrderClientAttribute,
  OrderStatusAttribute,
  orderWorkflowId,
  type OrderTimings,
  type OrderView,
} from '../../contract/order';
import { internetRequest, mobileRequest, type TestSandbox } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

/** The sandbox at a fifth of the spec's pace: an internet top-up is final after about 3–4 s. */
const SCALE = 0.2;
const IN_REVIEW = 4;
const ATTACKS = 30;
/** API_CONCURRENT_REQUESTS's default: the limit the attack runs into. */
const LIMIT = 16;

function timings(overrides: Partial<OrderTimings> = {}): Partial<OrderTimings> {
  const spec = defaultOrderTimings.internet_topup;
  return {
    firstCheckMs: spec.firstCheckMs * SCALE,
    handlingCheckMs: spec.handlingCheckMs * SCALE,
    maxIntervalMs: spec.maxIntervalMs * SCALE,
    settleMs: spec.settleMs * SCALE,
    activityTimeoutMs: 5_000,
    reviewWatchMs: 0,
    ...overrides,
  };
}

describe(
  'a client that hangs up keeps its in-flight slots until its handlers end',
  { timeout: 300_000 },
  () => {
    let stack: OrderStack<'main'>;
    let sandbox: TestSandbox;
    let api: TestApi;
    let client: Client;
    const run = randomUUID().slice(0, 8);
    const reviewRefs = Array.from({ length: IN_REVIEW }, (_, i) => `INFL-${run}-${i}`);
    const bulkIds = Array.from({ length: ATTACKS }, (_, i) => `attack-${run}-${i}`);
    const shopRefs: string[] = [];
    const inReview = () =>
      `TaskQueue = '${stack.taskQueues.main}' AND ${OrderClientAttribute.name} = 'acme' AND ${OrderStatusAttribute.name} = 'NEEDS_REVIEW'`;

    before(async () => {
      stack = await startOrderStack({
        name: 'in-flight',
        sandbox: { timeScale: SCALE },
        workers: { main: {} },
        api: {
          // acme's mobile top-ups go to review as stuck after 2 s and re-check on their own only after an hour.
          timingsFor: (type) =>
            type === 'mobile_topup' ? timings({ deadlineMs: 2_000, reviewRecheckMs: 3_600_000 }) : timings(),
          config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '5000' }),
        },
      });
      ({ client, sandbox, api } = stack);

      // A provider outage of mobile status checks: acme's orders go to review, and every recheck a
      // bulk asks for goes to the provider and fails (the load: each bulk rechecks them all).
      await sandbox.addFault({ kind: 'error', status: 503, routes: ['mobile.check', 'mobile.checkId'] });
      const res = await api.request<{ results: { status: number }[] }>('POST', '/v1/orders/batch', {
        body: { orders: reviewRefs.map((ref) => mobileRequest(ref)) },
        apiKey: testClients.acme.key,
      });
      assert.equal(res.status, 200, res.text);
      const deadline = Date.now() + 60_000;
      while ((await client.workflow.count(inReview())).count < IN_REVIEW) {
        assert.ok(Date.now() < deadline, 'acme’s orders went to review during the outage');
        await sleep(300);
      }
    });

    after(async () => {
      // The orders first: the bulks' updates waiting on them then end at once.
      await Promise.allSettled(
        [
          ...reviewRefs.map((ref) => orderWorkflowId(ref, 'acme')),
          ...shopRefs.map((ref) => orderWorkflowId(ref)),
        ].map((id) => client.workflow.getHandle(id).terminate('test done')),
      );
      await Promise.allSettled(
        bulkIds.map((id) =>
          client.workflow.getHandle(bulkReviewWorkflowId('acme', id)).terminate('test done'),
        ),
      );
      await stack?.stop();
    });

    /** shop submits an internet top-up and reads it until it is final: the milliseconds it took. */
    async function shopOrderFinal(): Promise<number> {
      const ref = `INFL-SHOP-${run}-${shopRefs.length}`;
      shopRefs.push(ref);
      const started = Date.now();
      const submitted = await api.request('POST', '/v1/orders', { body: internetRequest(ref) });
      assert.equal(submitted.status, 201, submitted.text);
      let last = '';
      while (Date.now() - started < 60_000) {
        const read = await api.request<OrderView>('GET', `/v1/orders/${ref}`);
        assert.equal(read.status, 200, read.text);
        last = read.body.status;
        if (last === 'FULFILLED') return Date.now() - started;
        await sleep(100);
      }
      assert.fail(`shop's order ${ref} is ${last} after 60 s`);
    }

    async function started(bulkId: string): Promise<boolean> {
      try {
        await client.workflow.getHandle(bulkReviewWorkflowId('acme', bulkId)).describe();
        return true;
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return false;
        throw err;
      }
    }

    it(`${ATTACKS} bulk reviews given up after 50 ms start at most ${LIMIT} bulks; another client's order stays within 1.5× its idle final`, async () => {
      const idleMs = await shopOrderFinal();

      // The attack, and shop's order while it runs.
      const shopUnderAttack = shopOrderFinal();
      const answers: Promise<string>[] = [];
      for (const bulkId of bulkIds) {
        answers.push(
          fetch(`${api.url}/v1/reviews/bulk`, {
            method: 'POST',
            headers: { authorization: `Bearer ${testClients.acme.key}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              bulkId,
              filter: { status: 'NEEDS_REVIEW' },
              decision: 'RECHECK',
              note: 'recheck everything',
            }),
            signal: AbortSignal.timeout(50),
          }).then(
            async (res) => `${res.status}`,
            () => 'gave up',
          ),
        );
        await sleep(50);
      }
      const outcomes = await Promise.all(answers);
      const attackMs = await shopUnderAttack;
      // A start sent before its caller left is answered by Temporal shortly after.
      await sleep(2_000);
      const startedCount = (await Promise.all(bulkIds.map(started))).filter(Boolean).length;
      console.log(
        `bulks started: ${startedCount} of ${ATTACKS} (client side: ${JSON.stringify(tally(outcomes))}); ` +
          `shop's order final in ${idleMs} ms idle, ${attackMs} ms under the attack`,
      );

      assert.ok(startedCount <= LIMIT, `${startedCount} bulks started, more than the limit of ${LIMIT}`);
      assert.ok(
        attackMs <= 1.5 * idleMs,
        `shop's order took ${attackMs} ms under the attack, more than 1.5 × ${idleMs} ms idle`,
      );
    });
  },
);

function tally(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
