/**
 * Operator decisions through the API's review route, checked against the provider: real HTTP
 * against createApp, a real Temporal server, the sandbox over HTTP (its "outcomes that change
 * later" make the provider say what each case needs) and a worker with the real workflows.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import type { Problem } from '../src/api/errors';
import { apiTestConfig, startTestApi, type TestApi } from '../src/api/testing';
import { createOrderWorker } from '../src/worker/worker';
import type { OrderStatus, OrderView } from '../workflows/contract';
import {
  installTestRuntime,
  mobileRequest,
  scaledTimings,
  startTestSandbox,
  testProvider,
  type TestSandbox,
} from './helpers/orders';
import { useTemporal, workflowCodeOptions, type TestTemporal } from './helpers/temporal';

const newRef = (label: string) => `REV-${label}-${randomUUID().slice(0, 8)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('review decisions through the API, checked against the provider', () => {
  let temporal: TestTemporal;
  let sandbox: TestSandbox;
  let provider: ReturnType<typeof testProvider>;
  let nativeConnection: NativeConnection;
  let connection: Connection;
  let client: Client;
  let worker: Worker;
  let workerRun: Promise<void> | undefined;
  let api: TestApi;
  const taskQueue = `api-review-${randomUUID()}`;

  before(async () => {
    installTestRuntime();
    [temporal, sandbox] = await Promise.all([useTemporal(), startTestSandbox()]);
    provider = testProvider(sandbox.url);
    nativeConnection = await NativeConnection.connect({ address: temporal.address });
    worker = await createOrderWorker({
      connection: nativeConnection,
      namespace: temporal.namespace,
      taskQueue,
      activities: createActivities({ provider: provider.client }),
      workflowCode: workflowCodeOptions(),
    });
    workerRun = worker.run();
    connection = await Connection.connect({ address: temporal.address });
    client = new Client({ connection, namespace: temporal.namespace });
    api = await startTestApi({
      client,
      taskQueue,
      provider: provider.client,
      // An order still open after 2 s is stuck (review); in review the provider is asked again
      // every second, so a final answer settles it quickly.
      timingsFor: () => scaledTimings({ deadlineMs: 2_000, reviewRecheckMs: 1_000 }),
      config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '5000' }),
    });
  });

  after(async () => {
    await api?.close();
    if (workerRun && worker.getState() === 'RUNNING') worker.shutdown();
    await workerRun;
    await Promise.all([connection?.close(), nativeConnection?.close(), provider?.close(), sandbox?.close()]);
    await temporal?.stop();
  });

  /** Polls GET /v1/orders/{ref} until `predicate` holds. */
  async function pollUntil(
    ref: string,
    predicate: (view: OrderView) => boolean,
    timeoutMs = 20_000,
  ): Promise<OrderView> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    while (Date.now() < deadline) {
      const res = await api.request<OrderView>('GET', `/v1/orders/${ref}`);
      assert.equal(res.status, 200, res.text);
      last = res.body;
      if (predicate(res.body)) return res.body;
      await sleep(100);
    }
    throw new Error(`order ${ref}: condition not reached; last view: ${JSON.stringify(last)}`);
  }
  const statusIs = (status: OrderStatus) => (view: OrderView) => view.status === status;

  /** The API sends the order's own ref to the provider (OrderInput.providerRef unset). */
  const providerRefOf = (ref: string) => ref;

  it('an order stuck while the provider is HANDLING, decided REFUNDED: refused (409, the provider may still fulfil it); when the provider fulfils it the order ends FULFILLED', async () => {
    const request = mobileRequest(newRef('hole2'));
    await sandbox.changeTopup(providerRefOf(request.ref), { status: 'HANDLING' });
    assert.equal((await api.request('POST', '/v1/orders', { body: request })).status, 201);
    const inReview = await pollUntil(request.ref, statusIs('NEEDS_REVIEW'));
    assert.equal(inReview.providerStatus, 'HANDLING');

    const res = await api.request<Problem>('POST', `/v1/orders/${request.ref}/review`, {
      body: { decision: 'REFUNDED', operator: 'amina', note: 'customer says nothing arrived' },
    });

    assert.equal(res.status, 409, res.text);
    assert.equal(res.body.type, '/problems/decision-refused');
    assert.match(res.body.detail, /HANDLING/);
    const after = await pollUntil(request.ref, () => true);
    assert.equal(after.status, 'NEEDS_REVIEW', 'a refused decision changes nothing');
    assert.match(after.timeline.at(-1)?.event ?? '', /REFUNDED by amina refused/);

    await sandbox.changeTopup(providerRefOf(request.ref), { status: 'FULFILLED' });
    const settled = await pollUntil(request.ref, (v) => v.status !== 'NEEDS_REVIEW');
    assert.equal(settled.status, 'FULFILLED');
    assert.deepEqual(settled.result, { msisdn: request.msisdn, amount: request.amount });
  });
});
