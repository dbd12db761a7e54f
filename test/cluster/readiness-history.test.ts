/**
 * With Temporal's history service down, the frontend still answers — and a /readyz that asked the
 * frontend alone said ready while every submission failed. This runs a small cluster of its own
 * (a fresh PostgreSQL, the compose schema job, four services) so it can stop history and start it
 * again (`npm run test:cluster` only).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { Problem } from '../../src/http/errors';
import type { ProviderPort } from '../../src/api/health';
import { apiTestConfig, startTestApi, type TestApi } from '../helpers/api';
import { findTemporalServer } from '../../src/temporal/server-install';
import { ensureTemporalSetup } from '../../src/temporal/setup';
import { createWorkerLogger } from '../../src/worker/logger';
import { startPrivatePostgres, type PrivatePostgres } from '../../scripts/cluster/postgres';
import { startTemporalCluster, type TemporalCluster } from '../../scripts/cluster/temporal-cluster';
import { readComposeServices, runComposeSchemaJob } from '../../scripts/lib/compose';
import { mobileRequest } from '../helpers/orders';
import { workflowCodeOptions } from '../helpers/temporal';

const upProvider: ProviderPort = {
  getGiftCardCatalog: async () => ({ categories: [] }),
  validateKey: async () => ({ username: 'u', apiKey: { type: 'SANDBOX', scope: 'all', isEnabled: true } }),
};

describe('/readyz while the history service is down', () => {
  let pg: PrivatePostgres;
  let cluster: TemporalCluster;
  let connection: Connection;
  let native: NativeConnection;
  let worker: Worker;
  let running: Promise<void>;
  let api: TestApi;
  const taskQueue = `readyz-history-${randomUUID().slice(0, 8)}`;

  before(async () => {
    Runtime.install({ logger: createWorkerLogger(process.env.LOG_LEVEL ?? 'warn') });
    const install = findTemporalServer();
    assert.ok(install, 'run this with npm run test:cluster');
    pg = await startPrivatePostgres();
    const services = readComposeServices({
      POSTGRES_PASSWORD: pg.password,
      API_CLIENTS_FILE: './clients.yaml',
      CODEC_AUTH_TOKENS: randomBytes(16).toString('hex'),
      GRAFANA_ADMIN_PASSWORD: randomBytes(16).toString('hex'),
      PAYLOAD_ENCRYPTION_KEYS: `k:${randomBytes(32).toString('base64')}`,
    });
    const schema = runComposeSchemaJob(services, install, pg);
    assert.equal(schema.status, 0, schema.output);
    // A small second cluster: the shard count plays no part here.
    cluster = await startTemporalCluster({
      serverBin: install.serverBin,
      postgres: pg,
      dir: pg.dir,
      numHistoryShards: 4,
    });
    connection = await Connection.connect({ address: cluster.address });
    await ensureTemporalSetup(connection, { namespace: 'default', retentionMs: 86_400_000 });
    native = await NativeConnection.connect({ address: cluster.address });
    worker = await Worker.create({
      connection: native,
      namespace: 'default',
      taskQueue,
      ...workflowCodeOptions(),
    });
    running = worker.run();
    api = await startTestApi({
      client: new Client({ connection, namespace: 'default' }),
      taskQueue,
      provider: upProvider,
      config: apiTestConfig({ API_READINESS_TIMEOUT_MS: '1500', API_TEMPORAL_TIMEOUT_MS: '1500' }),
    });
  });

  after(async () => {
    await api?.close();
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await running;
    await native?.close();
    await connection?.close();
    await cluster?.stop();
    await pg?.stop();
  });

  /** Polls /readyz (each answer is shared for a second) until `status`, or the last answer after 60 s. */
  async function readyzUntil(status: number): Promise<{ status: number; detail?: string }> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const res = await api.request<Problem>('GET', '/readyz', { apiKey: null });
      if (res.status === status || Date.now() > deadline)
        return { status: res.status, detail: res.body?.detail };
      await new Promise((r) => setTimeout(r, 1_100));
    }
  }

  it('is ready with every service up, 503 naming Temporal while history is down (as submissions are), ready again after', async () => {
    assert.equal((await readyzUntil(200)).status, 200);

    await cluster.stopService('history');
    const down = await readyzUntil(503);
    assert.equal(down.status, 503);
    assert.match(down.detail ?? '', /Temporal \(frontend and history\) is unreachable/);
    assert.doesNotMatch(down.detail ?? '', /namespace|search attributes|worker/);
    const submitted = await api.request('POST', '/v1/orders', {
      body: mobileRequest(`HIST-${randomUUID()}`),
    });
    assert.equal(submitted.status, 503, 'a submission fails the same way');

    await cluster.startService('history');
    assert.equal((await readyzUntil(200)).status, 200);
  });
});
