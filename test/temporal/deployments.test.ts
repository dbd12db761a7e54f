/**
 * Worker Versioning on the dev server: an order runs on the Worker Deployment version that started
 * it, to its end, whatever version becomes current meanwhile, and its history says which version
 * completed each workflow task. Two builds of one deployment on one task queue, as a deploy has
 * them: v1 current, an order waiting in review on it; v2 made current; a new order goes to v2, and
 * the v1 order's decision is still carried out by v1.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { createActivities } from '../../activities';
import { decideReviewUpdate, type OrderView } from '../../contract/order';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import {
  describeDeployment,
  describeVersion,
  makeCurrentIfFirst,
  setCurrentVersion,
  type WorkerDeployment,
} from '../../src/temporal/deployments';
import { createOrderWorker, loadWorkflowBundle } from '../../src/worker/worker';
import {
  bundledWorkflows,
  installTestRuntime,
  mobileRequest,
  newRef,
  scaledTimings,
  startOrder,
  startTestSandbox,
  testProvider,
  waitForView,
  type TestSandbox,
} from '../helpers/orders';
import { useTemporal, type TestTemporal } from '../helpers/temporal';

const PINNED = temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED;

describe('Worker Versioning: orders pinned to the version that started them', { timeout: 240_000 }, () => {
  let server: TestTemporal;
  let sandbox: TestSandbox;
  let provider: ReturnType<typeof testProvider>;
  let native: NativeConnection;
  let connection: Connection;
  let client: Client;
  const running: { worker: Worker; run: Promise<void> }[] = [];
  const deploymentName = `versioning-test-${randomUUID().slice(0, 8)}`;
  const taskQueue = `versioning-test-${randomUUID()}`;
  const v1: WorkerDeployment = { deploymentName, buildId: 'v1' };
  const v2: WorkerDeployment = { deploymentName, buildId: 'v2' };

  before(async () => {
    installTestRuntime();
    [server, sandbox] = await Promise.all([useTemporal(), startTestSandbox()]);
    provider = testProvider(sandbox.url);
    native = await NativeConnection.connect({ address: server.address });
    connection = await Connection.connect({ address: server.address });
    client = new Client({ connection, namespace: server.namespace });
  });
  after(async () => {
    for (const { worker } of running) if (worker.getState() === 'RUNNING') worker.shutdown();
    await Promise.all(running.map((r) => r.run));
    await connection?.close();
    await native?.close();
    await provider?.close();
    await sandbox?.close();
    await server?.stop();
  });

  async function startBuild(deployment: WorkerDeployment): Promise<void> {
    const workflowBundle = await loadWorkflowBundle(await bundledWorkflows());
    const worker = await createOrderWorker({
      connection: native,
      namespace: server.namespace,
      taskQueue,
      activities: createActivities({ provider: provider.client, temporal: client }),
      workflowCode: { workflowBundle },
      deployment,
    });
    running.push({ worker, run: worker.run() });
  }

  /** Each workflow task completed in any run of the order, by the build that completed it. */
  async function buildsThatCompletedTasks(workflowId: string): Promise<string[]> {
    const builds: string[] = [];
    for await (const run of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
      const history = await client.workflow.getHandle(workflowId, run.runId).fetchHistory();
      for (const event of history.events ?? []) {
        const completed = event.workflowTaskCompletedEventAttributes;
        if (completed) builds.push(completed.deploymentVersion?.buildId ?? '(unversioned)');
      }
    }
    return builds;
  }

  it('an order started on v1 ends on v1 after v2 is made current; a new order runs on v2; the histories say so', async () => {
    await startBuild(v1);
    assert.equal(
      await makeCurrentIfFirst(client.workflowService, server.namespace, v1, {
        taskQueues: [taskQueue],
        identity: 'test',
      }),
      'made-current',
    );
    const timings = scaledTimings();
    const inReview = await startOrder(
      client,
      taskQueue,
      mobileRequest(newRef('versioning'), sandboxSpecialNumbers.unknownError),
      {
        timings,
      },
    );
    await waitForView(inReview, (v) => v.status === 'NEEDS_REVIEW', 60_000);

    await startBuild(v2);
    // A later build never promotes itself over a current version.
    assert.equal(
      await makeCurrentIfFirst(client.workflowService, server.namespace, v2, {
        taskQueues: [taskQueue],
        identity: 'test',
      }),
      'another-is-current',
    );
    assert.equal(
      (await describeDeployment(client.workflowService, server.namespace, deploymentName))?.currentBuildId,
      'v1',
    );
    await setCurrentVersion(client.workflowService, server.namespace, v2, { identity: 'test' });
    assert.equal((await describeVersion(client.workflowService, server.namespace, v2))?.status, 'current');
    assert.notEqual((await describeVersion(client.workflowService, server.namespace, v1))?.status, 'current');

    const fresh = await startOrder(client, taskQueue, mobileRequest(newRef('versioning')), { timings });
    const freshView = (await fresh.result()) as OrderView;
    assert.equal(freshView.status, 'FULFILLED');

    const outcome = await inReview.executeUpdate(decideReviewUpdate, {
      args: [{ decision: 'REFUNDED', operator: 'tester', note: 'no credit, ticket 4412', force: true }],
    });
    assert.equal(outcome.outcome, 'applied');
    const decided = (await client.workflow.getHandle(inReview.workflowId).result()) as OrderView;
    assert.equal(decided.status, 'REFUNDED');

    const v1Builds = await buildsThatCompletedTasks(inReview.workflowId);
    const v2Builds = await buildsThatCompletedTasks(fresh.workflowId);
    assert.ok(v1Builds.length >= 3, `v1 order's tasks: ${v1Builds.join(', ')}`);
    assert.deepEqual(new Set(v1Builds), new Set(['v1']), `v1 order's tasks: ${v1Builds.join(', ')}`);
    assert.deepEqual(new Set(v2Builds), new Set(['v2']), `v2 order's tasks: ${v2Builds.join(', ')}`);

    const described = await client.workflow.getHandle(fresh.workflowId).describe();
    const info = described.raw.workflowExecutionInfo?.versioningInfo;
    assert.equal(info?.behavior, PINNED);
    assert.equal(info?.deploymentVersion?.buildId, 'v2');
  });

  it('rolling back (npm run deploy -- rollback) makes v1 current again, and the next order runs on v1', async () => {
    const rollback = spawnSync(
      process.execPath,
      ['--import', 'tsx', resolve(__dirname, '../../scripts/deploy.ts'), 'rollback'],
      {
        env: {
          ...process.env,
          TEMPORAL_ADDRESS: server.address,
          TEMPORAL_NAMESPACE: server.namespace,
          TEMPORAL_TASK_QUEUE: taskQueue,
          WORKER_DEPLOYMENT_NAME: deploymentName,
        },
        encoding: 'utf8',
      },
    );
    assert.equal(rollback.status, 0, rollback.stderr);
    assert.match(rollback.stdout, /v1 is current again \(was v2\)/);
    assert.equal(
      (await describeDeployment(client.workflowService, server.namespace, deploymentName))?.currentBuildId,
      'v1',
    );
    const next = await startOrder(client, taskQueue, mobileRequest(newRef('rollback')), {
      timings: scaledTimings(),
    });
    assert.equal(((await next.result()) as OrderView).status, 'FULFILLED');
    assert.deepEqual(new Set(await buildsThatCompletedTasks(next.workflowId)), new Set(['v1']));
  });
});
