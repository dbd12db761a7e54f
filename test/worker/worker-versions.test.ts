/**
 * Worker Versioning end to end on the dev server and the sandbox over HTTP (docs/contributors.md
 * "Worker versioning, never patches"): two builds of one deployment, v1 then v2 made
 * current while orders run. Orders started on v1 in their active phase finish on v1 (every
 * workflow task completed by v1), new orders start on v2, and an order waiting in review on v1
 * moves to v2 by continue-as-new at its next re-check and is decided there. Then the rollback
 * (`npm run deploy -- rollback`) makes v1 current again, /readyz's deployment says so, and the next
 * order runs on v1.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { createActivities } from '../../src/worker/activities';
import {
  decideReviewUpdate,
  defaultOrderTimings,
  finalStatuses,
  type OrderTimings,
} from '../../contract/order';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { deploymentStatus } from '../../src/api/deployment-status';
import { bootstrapCurrentVersion, describeVersion, setCurrentVersion } from '../../src/temporal/deployments';
import { createOrderWorker, type WorkerDeployment, type WorkflowCode } from '../../src/worker/worker';
import {
  bundledWorkflows,
  installTestRuntime,
  mobileRequest,
  scaledTimings,
  startOrder,
  startTestSandbox,
  testProvider,
  waitForView,
  type TestSandbox,
} from '../helpers/orders';
import { useTemporal, type TestTemporal } from '../helpers/temporal';
import { makeTestVersionCurrent, testDeploymentName } from '../helpers/versioning';

/** Slow enough that orders are still polling when v2 becomes current: a normal one takes ~5 s. */
const SANDBOX_SCALE = 0.25;
const spec = defaultOrderTimings.mobile_topup;
const timings: Partial<OrderTimings> = scaledTimings({
  firstCheckMs: spec.firstCheckMs * SANDBOX_SCALE,
  handlingCheckMs: spec.handlingCheckMs * SANDBOX_SCALE,
  maxIntervalMs: spec.maxIntervalMs * SANDBOX_SCALE,
  deadlineMs: 120_000,
  // The review's wake-up: how soon an order in review notices the new version.
  reviewRecheckMs: 3_000,
});

/** The build that completed each workflow task of every run of the order, oldest first. */
async function taskBuilds(client: Client, workflowId: string): Promise<string[]> {
  const builds: string[] = [];
  const described = await client.workflow.getHandle(workflowId).describe();
  let runId: string | undefined = described.raw.workflowExecutionInfo?.firstRunId || undefined;
  while (runId) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    runId = undefined;
    for (const event of history.events ?? []) {
      const completed = event.workflowTaskCompletedEventAttributes;
      if (completed) builds.push(completed.deploymentVersion?.buildId ?? '(unversioned)');
      const continued = event.workflowExecutionContinuedAsNewEventAttributes;
      if (continued?.newExecutionRunId) runId = continued.newExecutionRunId;
    }
  }
  return builds;
}

async function settled(handle: WorkflowHandle, timeoutMs = 90_000): Promise<string> {
  const view = await waitForView(handle, (v) => finalStatuses.includes(v.status), timeoutMs);
  return view.status;
}

describe('worker versions: orders stay on the build that started them', { timeout: 300_000 }, () => {
  let temporal: TestTemporal;
  let sandbox: TestSandbox;
  let provider: ReturnType<typeof testProvider>;
  let native: NativeConnection;
  let connection: Connection;
  let client: Client;
  let code: WorkflowCode;
  const workers: { worker: Worker; running: Promise<void> }[] = [];
  const deploymentName = testDeploymentName('worker-versions');
  const taskQueue = `worker-versions-${randomUUID()}`;
  const v1: WorkerDeployment = { deploymentName, buildId: `v1-${randomUUID().slice(0, 8)}` };
  const v2: WorkerDeployment = { deploymentName, buildId: `v2-${randomUUID().slice(0, 8)}` };

  const startWorker = async (deployment: WorkerDeployment) => {
    const worker = await createOrderWorker({
      connection: native,
      namespace: temporal.namespace,
      taskQueue,
      activities: createActivities({ provider: provider.client, temporal: client }),
      // The same code under two build IDs, as WORKER_BUILD_ID gives it: routing is by version, not by code.
      workflowCode: code,
      deployment,
    });
    workers.push({ worker, running: worker.run() });
  };

  before(async () => {
    installTestRuntime();
    [temporal, sandbox, code] = await Promise.all([
      useTemporal(),
      startTestSandbox(SANDBOX_SCALE),
      bundledWorkflows(),
    ]);
    provider = testProvider(sandbox.url);
    native = await NativeConnection.connect({ address: temporal.address });
    connection = await Connection.connect({ address: temporal.address });
    client = new Client({ connection, namespace: temporal.namespace });
    await startWorker(v1);
    await makeTestVersionCurrent(connection, temporal.namespace, v1, [taskQueue]);
  });

  after(async () => {
    for (const { worker } of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
    await Promise.all(workers.map((w) => w.running));
    await Promise.all([native?.close(), connection?.close(), provider?.close()]);
    await sandbox?.close();
    await temporal?.stop();
  });

  it('v1-pinned orders in flight finish on v1, new orders start on v2, and an order in review moves to v2 and is decided there', async () => {
    // On v1: orders in their active phase, and one that goes to review.
    const active = await Promise.all(
      [0, 1, 2].map((i) =>
        startOrder(client, taskQueue, mobileRequest(`versions-a${i}-${randomUUID().slice(0, 8)}`), {
          timings,
        }),
      ),
    );
    const review = await startOrder(
      client,
      taskQueue,
      mobileRequest(`versions-r-${randomUUID().slice(0, 8)}`, sandboxSpecialNumbers.unknownError),
      { timings },
    );
    await waitForView(review, (v) => v.status === 'NEEDS_REVIEW', 60_000);
    for (const handle of active) {
      const view = await handle.query<{ status: string }>('status');
      assert.ok(
        !finalStatuses.includes(view.status as never),
        `${handle.workflowId} already ${view.status}: too fast to test`,
      );
    }

    // v2 joins and becomes current while they run.
    await startWorker(v2);
    // A later build never makes itself current on its own (WORKER_MAKE_CURRENT=first): a deployer does.
    assert.deepEqual(
      await bootstrapCurrentVersion(connection, temporal.namespace, v2, {
        taskQueues: [taskQueue],
        timeoutMs: 120_000,
      }),
      { current: v1.buildId },
    );
    const { previousBuildId } = await setCurrentVersion(connection, temporal.namespace, v2);
    assert.equal(previousBuildId, v1.buildId);
    assert.equal((await describeVersion(connection, temporal.namespace, v1))?.status, 'draining');

    const fresh = await startOrder(
      client,
      taskQueue,
      mobileRequest(`versions-n-${randomUUID().slice(0, 8)}`),
      {
        timings,
      },
    );

    // (ii) Active orders: every workflow task, to the end, on v1.
    for (const handle of active) {
      assert.equal(await settled(handle), 'FULFILLED');
      const builds = await taskBuilds(client, handle.workflowId);
      assert.deepEqual(new Set(builds), new Set([v1.buildId]), `${handle.workflowId}: ${builds.join(' ')}`);
    }
    // (i) The history names the version: a new order ran on v2, and says so from its first task.
    assert.equal(await settled(fresh), 'FULFILLED');
    const freshBuilds = await taskBuilds(client, fresh.workflowId);
    assert.deepEqual(new Set(freshBuilds), new Set([v2.buildId]), freshBuilds.join(' '));
    const described = await client.workflow.getHandle(fresh.workflowId).describe();
    assert.equal(described.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId, v2.buildId);

    // (iii) The order in review: its next re-check sees the new version and continues as new onto it.
    const deadline = Date.now() + 60_000;
    let reviewBuilds = await taskBuilds(client, review.workflowId);
    while (reviewBuilds.at(-1) !== v2.buildId && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      reviewBuilds = await taskBuilds(client, review.workflowId);
    }
    assert.equal(reviewBuilds.at(-1), v2.buildId, `the review never moved: ${reviewBuilds.join(' ')}`);
    const latest = client.workflow.getHandle(review.workflowId);
    await waitForView(latest, (v) => v.status === 'NEEDS_REVIEW', 30_000);
    const outcome = await latest.executeUpdate(decideReviewUpdate, {
      args: [{ decision: 'REFUNDED', operator: 'versions-test', note: 'decided on v2', force: true }],
    });
    assert.equal(outcome.outcome, 'applied');
    assert.equal(await settled(latest), 'REFUNDED');
    reviewBuilds = await taskBuilds(client, review.workflowId);
    const firstV2 = reviewBuilds.indexOf(v2.buildId);
    assert.ok(firstV2 > 0, `started on v1, then v2: ${reviewBuilds.join(' ')}`);
    // No run executes two versions: once on v2, every later task is v2.
    assert.ok(
      reviewBuilds.slice(firstV2).every((b) => b === v2.buildId),
      `a task went back to v1: ${reviewBuilds.join(' ')}`,
    );
  });

  it('the rollback (npm run deploy -- rollback) makes v1 current again, /readyz says so, and the next order runs on v1', async () => {
    const rollback = spawnSync(
      process.execPath,
      ['--import', 'tsx', resolve(__dirname, '../../scripts/deploy.ts'), 'rollback'],
      {
        env: {
          ...process.env,
          TEMPORAL_ADDRESS: temporal.address,
          TEMPORAL_NAMESPACE: temporal.namespace,
          WORKER_DEPLOYMENT_NAME: deploymentName,
        },
        encoding: 'utf8',
      },
    );
    assert.equal(rollback.status, 0, rollback.stderr + rollback.stdout);
    assert.match(rollback.stdout, new RegExp(`${v1.buildId} is current again \\(was ${v2.buildId}\\)`));
    const status = await deploymentStatus({ client, deploymentName, timeoutMs: 10_000, now: Date.now })();
    assert.equal(status.state, 'known');
    assert.equal(status.current, v1.buildId);
    const v2Status = status.versions?.find((v) => v.buildId === v2.buildId)?.status;
    assert.ok(v2Status === 'draining' || v2Status === 'drained', `v2: ${v2Status}`);

    const next = await startOrder(
      client,
      taskQueue,
      mobileRequest(`versions-b-${randomUUID().slice(0, 8)}`),
      {
        timings,
      },
    );
    assert.equal(await settled(next), 'FULFILLED');
    const builds = await taskBuilds(client, next.workflowId);
    assert.deepEqual(new Set(builds), new Set([v1.buildId]), builds.join(' '));
  });
});
