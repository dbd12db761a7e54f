/**
 * /readyz says whether the Temporal server honours task-queue fairness (src/api/fairness-status.ts):
 * on a dev server started with fairness off it stays ready, says `fairness: off` with what to set
 * once the worker's probe has reported it, and orders still run there end to end. The API itself
 * starts no workflow for it: before the worker reports, /readyz says `unknown` and the namespace
 * has no probe workflow. (On the run's server, fairness on: test/api/readiness.test.ts.)
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { OrderView } from '../../contract/order';
import { apiTestConfig, type TestApi } from '../helpers/api';
import { mobileRequest, newRef, scaledTimings } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';
import { startFairnessReports } from '../../src/temporal/fairness-probe';

interface ReadyBody {
  status: string;
  fairness: 'on' | 'off' | 'unknown';
  notices?: string[];
}

/** /readyz until the worker's fairness probe has answered (it probes at its start). */
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
  let reports: { stop(): Promise<void> } | undefined;

  before(async () => {
    off = await startOrderStack({
      name: 'readyz-fairness-off',
      temporal: { fairness: false },
      workers: { main: {} },
      api: { timingsFor: () => scaledTimings(), config: apiTestConfig() },
    });
  });
  after(async () => {
    await reports?.stop();
    await off?.stop();
  });

  it('no worker has reported: `fairness: unknown`, and /readyz started no workflow (it reads, never probes)', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await off.api.request<ReadyBody>('GET', '/readyz', { apiKey: null });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.fairness, 'unknown', JSON.stringify(res.body));
      assert.equal(res.body.notices, undefined);
      await new Promise((r) => setTimeout(r, 1_100));
    }
    const started = await off.client.workflow.count('WorkflowType IN ("FairnessProbe", "FairnessReport")');
    assert.equal(started.count, 0, 'no probe or report workflow before a worker probes');
  });

  it('fairness off, once the worker has probed: ready (200), `fairness: off` and a notice with what to set; an order is still FULFILLED', async () => {
    // What src/worker/main.ts runs beside its workers: a probe at start, then hourly.
    reports = startFairnessReports(off.client, off.taskQueues.main, { info: () => {}, warn: () => {} });
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
