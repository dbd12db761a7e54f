/**
 * /readyz says ready only when a submission can succeed, and says what is missing when not — on
 * the dev server (`npm test`) and on the cluster tier's PostgreSQL (`npm run test:cluster`). Each
 * case uses a namespace of its own, created bare (no search attributes), as a fresh cluster is
 * before its setup job ran: the state in which orders used to answer 500 while /readyz said ready.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { Problem } from '../../src/http/errors';
import { searchAttributesNotReady, type ProviderPort } from '../../src/api/health';
import { startTestApi, type TestApi } from '../helpers/api';
import { ensureTemporalSetup } from '../../src/temporal/setup';
import { startFairnessReports } from '../../src/temporal/fairness-probe';
import { createWorkerLogger } from '../../src/worker/logger';
import { searchAttributeDefinitions } from '../../contract/order';
import { mobileRequest } from '../helpers/orders';
import { useTemporal, workflowCodeOptions, type TestTemporal } from '../helpers/temporal';

const DAY_MS = 86_400_000;
const upProvider: ProviderPort = {
  getGiftCardCatalog: async () => ({ categories: [] }),
  validateKey: async () => ({ username: 'u', apiKey: { type: 'SANDBOX', scope: 'all', isEnabled: true } }),
};

async function readyz(api: TestApi): Promise<{ status: number; detail?: string; body: unknown }> {
  // The answer is shared for a second: wait it out, so each call sees the present.
  await new Promise((r) => setTimeout(r, 1_100));
  const res = await api.request<Problem>('GET', '/readyz', { apiKey: null });
  return { status: res.status, detail: res.body?.detail, body: res.body };
}

describe('/readyz checks what a submission needs', () => {
  let temporal: TestTemporal;
  let connection: Connection;

  before(async () => {
    Runtime.install({ logger: createWorkerLogger(process.env.LOG_LEVEL ?? 'warn') });
    temporal = await useTemporal();
    connection = await Connection.connect({ address: temporal.address });
  });

  after(async () => {
    await connection?.close();
    await temporal?.stop();
  });

  /** A namespace that exists, and nothing more. */
  async function bareNamespace(): Promise<string> {
    const namespace = `readyz-${randomUUID().slice(0, 8)}`;
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs(DAY_MS),
    });
    return namespace;
  }

  it('a start refused while Temporal cannot say why in time → the probe says so (a 503), not undefined (a 500)', async () => {
    // A loaded cluster: the probes behind a refused start run out of time (a deadline already past).
    const namespace = await bareNamespace();
    const notSetUp = searchAttributesNotReady({
      client: new Client({ connection, namespace }),
      timeoutMs: 0,
    });
    assert.match(
      (await notSetUp()) ?? 'undefined',
      new RegExp(
        `^the order search attributes of namespace ${namespace} could not be checked \\(search attributes: .+\\)$`,
      ),
    );
  });

  it('once every search attribute was found known, a slow Temporal does not make the check say "not ready" (not asked again)', async () => {
    // The run's namespace is set up. A connection of this case's own, whose probes are then made to time out.
    const own = await Connection.connect({ address: temporal.address });
    try {
      const notSetUp = searchAttributesNotReady({
        client: new Client({ connection: own, namespace: temporal.namespace }),
        timeoutMs: 5_000,
      });
      assert.equal(await notSetUp(), undefined);
      let probes = 0;
      Object.assign(own.workflowService, {
        countWorkflowExecutions: () => {
          probes++;
          return Promise.reject(
            Object.assign(new Error('4 DEADLINE_EXCEEDED: Deadline exceeded'), { code: 4 }),
          );
        },
      });
      assert.equal(await notSetUp(), undefined);
      assert.equal(probes, 0);
    } finally {
      await own.close();
    }
  });

  it('a missing namespace → 503 naming it', async () => {
    const namespace = `readyz-missing-${randomUUID().slice(0, 8)}`;
    const client = new Client({ connection, namespace });
    const api = await startTestApi({ client, taskQueue: 'readyz-none', provider: upProvider });
    try {
      const res = await readyz(api);
      assert.equal(res.status, 503);
      assert.match(res.detail ?? '', new RegExp(`namespace ${namespace} does not exist`));
      // A submission meanwhile (Temporal restarting, its namespace cache still empty) is a 503 to retry, not a 500.
      const submitted = await api.request<Problem>('POST', '/v1/orders', {
        body: mobileRequest('readyz-ns'),
      });
      assert.equal(submitted.status, 503, submitted.text);
      assert.match(submitted.body?.detail ?? '', /namespace/);
    } finally {
      await api.close();
    }
  });

  it('not ready while the search attributes are missing (and no worker polls); ready after the setup and a worker', async () => {
    const namespace = await bareNamespace();
    const taskQueue = `readyz-${randomUUID().slice(0, 8)}`;
    const client = new Client({ connection, namespace });
    const api = await startTestApi({ client, taskQueue, provider: upProvider });
    let worker: Worker | undefined;
    let running: Promise<void> | undefined;
    let reports: { stop(): Promise<void> } | undefined;
    const native = await NativeConnection.connect({ address: temporal.address });
    try {
      const before = await readyz(api);
      assert.equal(before.status, 503, JSON.stringify(before.body));
      assert.match(
        before.detail ?? '',
        new RegExp(
          `search attributes ${Object.keys(searchAttributeDefinitions).join(', ')} are not registered in namespace ${namespace}`,
        ),
      );
      assert.match(before.detail ?? '', new RegExp(`no worker polls task queue ${taskQueue}`));
      // Temporal refuses the start in this namespace (INVALID_ARGUMENT, no mapping for the
      // attribute): a submission answers what /readyz answers, a 503 to retry — never a 500.
      // The same words as /readyz's; a probe that does not answer in time (a loaded PostgreSQL)
      // leaves its attribute out, so the names are a non-empty part of the service's own.
      const assertNotSetUp = (detail: string | undefined) => {
        const names = new RegExp(
          `^Not ready: search attributes (.+) are not registered in namespace ${namespace} \\(run npm run temporal:setup\\)\\.$`,
        ).exec(detail ?? '')?.[1];
        assert.ok(names, detail);
        for (const name of names.split(', ')) assert.ok(name in searchAttributeDefinitions, name);
      };
      const submitted = await api.request<Problem>('POST', '/v1/orders', {
        body: mobileRequest(`READYZ-${randomUUID()}`),
      });
      assert.equal(submitted.status, 503, submitted.text);
      assert.equal(submitted.body.type, '/problems/temporarily-unavailable');
      assert.ok(Number(submitted.headers['retry-after']) > 0, 'Retry-After');
      assertNotSetUp(submitted.body.detail);
      const batch = await api.request<{ results: { status: number; body: Problem }[] }>(
        'POST',
        '/v1/orders/batch',
        { body: { orders: [mobileRequest(`READYZ-${randomUUID()}`)] } },
      );
      assert.equal(batch.status, 200, batch.text);
      assert.equal(batch.body.results[0]!.status, 503, JSON.stringify(batch.body.results[0]));
      assertNotSetUp(batch.body.results[0]!.body.detail);

      const result = await ensureTemporalSetup(connection, { namespace, retentionMs: DAY_MS });
      assert.deepEqual(result.searchAttributesAdded, Object.keys(searchAttributeDefinitions));
      const setUp = await readyz(api);
      assert.equal(setUp.status, 503);
      assert.doesNotMatch(setUp.detail ?? '', /search attributes/);
      assert.match(setUp.detail ?? '', /no worker polls/);

      worker = await Worker.create({ connection: native, namespace, taskQueue, ...workflowCodeOptions() });
      running = worker.run();
      // What src/worker/main.ts runs beside its workers: the fairness probe, reported for /readyz.
      reports = startFairnessReports(client, taskQueue, { info: () => {}, warn: () => {} });
      const deadline = Date.now() + 60_000;
      // Ready, and the worker's fairness probe has reported.
      const probed = (r: { status: number; body: unknown }) =>
        r.status === 200 && (r.body as { fairness?: string }).fairness !== 'unknown';
      let ready = await readyz(api);
      while (!probed(ready) && Date.now() < deadline) ready = await readyz(api);
      assert.equal(ready.status, 200, JSON.stringify(ready.body));
      assert.deepEqual(ready.body, {
        status: 'ready',
        checks: { temporal: 'up', namespace: 'up', searchAttributes: 'up', worker: 'up', provider: 'up' },
        // Our servers honour task-queue fairness: said, with no notice.
        fairness: 'on',
        // Nothing held (no account workflow yet); this provider fake has no /v3/ping.
        account: { held: { balance: 0, operator: 0, byOperator: {} } },
        // This test's worker is unversioned, in a namespace of its own: no Worker Deployment there.
        deployment: { name: 'topup-fulfillment', state: 'none' },
      });
    } finally {
      await reports?.stop();
      if (worker?.getState() === 'RUNNING') worker.shutdown();
      await running;
      await native.close();
      await api.close();
    }
  });
});
