/**
 * POST /v1/reviews/bulk with REFUNDED on orders the provider answers UNKNOWN_ERROR for: each order
 * refuses it as the single route does (the provider resolves those itself within 1–24 h and says
 * not to refund before), and the same bulk with `force: true` applies it, recorded as forced —
 * sent by an operator: the back office that owns the orders, which the refunds would pay, may not
 * force them (403 naming `force`). A real Temporal dev server, a real worker and the sandbox over HTTP.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { apiTestConfig, testClients, type TestApi } from '../helpers/api';
import type { BulkReviewAnswer } from '../../src/reviews/bulk-review.service';
import type { Problem } from '../../src/http/errors';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { orderWorkflowId, type OrderView } from '../../contract/order';
import { mobileRequest, scaledTimings } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const ORDERS = 3;
const guidance = /UNKNOWN_ERROR: its support resolves it to FULFILLED or REFUNDED within 1-24 h/;

describe('POST /v1/reviews/bulk: REFUNDED on UNKNOWN_ERROR is refused per order, and applied with force', () => {
  let stack: OrderStack<'main'>;
  let api: TestApi;
  const run = randomUUID().slice(0, 8);
  const refs = Array.from({ length: ORDERS }, (_, i) => `BULKF-${run}-${i}`);

  async function bulk(body: object, as: 'shop' | 'operator' = 'shop'): Promise<BulkReviewAnswer> {
    for (let attempt = 0; attempt < 30; attempt++) {
      const res = await api.request<BulkReviewAnswer>('POST', '/v1/reviews/bulk', {
        body,
        apiKey: testClients[as].key,
      });
      assert.ok(res.status === 200 || res.status === 202, `${res.status} ${res.text}`);
      if (res.status === 200) return res.body;
    }
    assert.fail('the bulk did not finish');
  }
  const viewOf = async (ref: string) => (await api.request<OrderView>('GET', `/v1/orders/${ref}`)).body;

  before(async () => {
    stack = await startOrderStack({
      name: 'bulk-force',
      workers: { main: {} },
      api: {
        // In review the order re-checks only after an hour: only the decisions settle it.
        timingsFor: () => scaledTimings({ reviewRecheckMs: 3_600_000 }),
        config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '5000' }),
      },
    });
    api = stack.api;
    for (const ref of refs) {
      const res = await api.request('POST', '/v1/orders', {
        body: mobileRequest(ref, sandboxSpecialNumbers.unknownError),
      });
      assert.equal(res.status, 201, res.text);
    }
    const deadline = Date.now() + 60_000;
    for (const ref of refs) {
      while ((await viewOf(ref)).status !== 'NEEDS_REVIEW') {
        assert.ok(Date.now() < deadline, `${ref} in review`);
        await sleep(200);
      }
    }
  });

  after(async () => {
    await Promise.allSettled(
      refs.map((ref) => stack.client.workflow.getHandle(orderWorkflowId(ref)).terminate('test done')),
    );
    await stack?.stop();
  });

  it('without force: every order answers refused (unconfirmed, forceable, quoting the provider) and stays in review; forced by the owner: 403; forced by an operator: every one is REFUNDED, recorded as forced', async () => {
    const body = {
      filter: { reason: 'UNKNOWN_ERROR' },
      decision: 'REFUNDED',
      note: 'provider support confirmed the refunds, ticket 77',
    };
    const refused = await bulk({ ...body, bulkId: `unforced-${run}` });
    assert.deepEqual(refused.results?.map((r) => r.ref).sort(), refs);
    for (const result of refused.results ?? []) {
      assert.equal(result.outcome, 'refused', JSON.stringify(result));
      assert.equal(result.refusal?.kind, 'unconfirmed');
      assert.equal(result.refusal?.forceable, true);
      assert.equal(result.refusal?.provider?.status, 'UNKNOWN_ERROR');
      assert.match(result.refusal?.reason ?? '', guidance);
    }
    for (const ref of refs) assert.equal((await viewOf(ref)).status, 'NEEDS_REVIEW', 'nothing changed');

    const byOwner = await api.request<Problem>('POST', '/v1/reviews/bulk', {
      body: { ...body, bulkId: `owner-forced-${run}`, force: true },
      apiKey: testClients.shop.key,
    });
    assert.equal(byOwner.status, 403, byOwner.text);
    assert.deepEqual(
      byOwner.body.errors?.map((e) => e.field),
      ['force'],
    );
    for (const ref of refs) assert.equal((await viewOf(ref)).status, 'NEEDS_REVIEW', 'nothing changed');

    // The operator's bulk, narrowed to shop's orders: the same ones.
    const forced = await bulk(
      { ...body, filter: { ...body.filter, client: 'shop' }, bulkId: `forced-${run}`, force: true },
      'operator',
    );
    assert.deepEqual(forced.results?.map((r) => r.ref).sort(), refs);
    for (const result of forced.results ?? []) {
      assert.equal(result.outcome, 'applied', JSON.stringify(result));
      assert.equal(result.status, 'REFUNDED');
    }
    for (const ref of refs) {
      const view = await viewOf(ref);
      assert.equal(view.status, 'REFUNDED');
      assert.equal(view.review?.resolution?.force, true);
      assert.match(view.review?.resolution?.forcedPast ?? '', guidance);
      assert.equal(view.review?.resolution?.note, `${body.note} (bulk forced-${run})`);
    }
  });
});
