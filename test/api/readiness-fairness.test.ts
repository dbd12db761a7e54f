/**
 * /readyz says whether the Temporal server honours task-queue fairness (src/api/fairness-status.ts):
 * on a dev server started with fairness off it stays ready, says `fairness: off` with what to set,
 * and orders still run there end to end. (On the run's server, fairness on: test/api/readiness.test.ts.)
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { OrderView } from '../../contract/order';
import { apiTestConfig, type TestApi } from '../../src/api/testing';
import { mobileRequest, newRef, scaledTimings } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

interface ReadyBody {
  status: string;
  fairness: 'on' | 'off' | 'unknown';
  notices?: string[];
}

/** /readyz until the fairness probe has answered (it runs in the background from the first call). */
async function readyOnceProbed(api: TestApi): Promise<{ status: number; body: ReadyBody }> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const res = await api.request<ReadyBody>('GET', '/readyz', { apiKey: null });
    if ((res.status === 200 && res.body.fairness !== 'unknown') || Date.now() > deadline)
      return { status: res.status, body: res.body };
    // Each answer is shared for a second.
    await new Promise((r) => setTimeout(r, 1_100));
  }
}

async function fulfilled(api: TestApi, ref: string): Promise<OrderView> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await api.request<OrderView>('GET', `/v1/orders/${ref}`);
    assert.equal(res.status, 200, res.text);
    if (res.body.status === 'FULFILLED' || Date.now() > deadline) return res.body;
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('/readyz and a server without task-queue fairness', { timeout: 240_000 }, () => {
  let off: OrderStack<'main'>;

  before(async () => {
    off = await startOrderStack({
      name: 'readyz-fairness-off',
      temporal: { fairness: false },
      workers: { main: {} },
      api: { timingsFor: () => scaledTimings(), config: apiTestConfig() },
    });
  });
  after(() => off?.stop());

  it('fairness off: ready (200), `fairness: off` and a notice with what to set; an order is still FULFILLED', async () => {
    const ready = await readyOnceProbed(off.api);
    assert.equal(ready.status, 200, JSON.stringify(ready.body));
    assert.equal(ready.body.status, 'ready');
    assert.equal(ready.body.fairness, 'off', JSON.stringify(ready.body));
    assert.equal(ready.body.notices?.length, 1, JSON.stringify(ready.body));
    assert.match(
      ready.body.notices![0]!,
      /does not honour task-queue fairness.*matching\.enableFairness=true.*matching\.useNewMatcher=true/,
    );
    const request = mobileRequest(newRef('nofair'));
    const res = await off.api.request('POST', '/v1/orders', { body: request });
    assert.equal(res.status, 201, res.text);
    assert.equal((await fulfilled(off.api, request.ref)).status, 'FULFILLED');
  });
});
