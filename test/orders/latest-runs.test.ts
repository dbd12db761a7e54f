/**
 * LatestRuns (src/orders/latest-runs.ts) on a real Temporal server: of the runs listed, only each
 * workflow ID's latest is kept — also when another ID of the same check was deleted meanwhile (a
 * count of the IDs' runs alone would then match their number and keep a superseded run).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { dataConverterFromConfig } from '../../src/codec/data-converter';
import { LatestRuns, type OrderRun } from '../../src/orders/latest-runs';
import { orderWorkflowId } from '../../contract/order';
import { mobileRequest, seedListedOrder } from '../helpers/orders';
import { connectTestClient } from '../helpers/temporal';

describe('LatestRuns: each workflow ID by its latest run', () => {
  let client: Client;
  let closeTemporal: (() => Promise<void>) | undefined;
  const run = randomUUID().slice(0, 8);
  const owner = `latest_${run}`;
  const taskQueue = `latest-runs-${run}`;

  before(async () => {
    ({ client, close: closeTemporal } = await connectTestClient());
  });
  after(async () => {
    await closeTemporal?.();
  });

  /** A closed run of `ref`'s order (a further run when it has one): its row as listed. */
  const closedRun = async (ref: string): Promise<OrderRun> => {
    const handle = (await seedListedOrder(client, {
      taskQueue,
      owner,
      request: mobileRequest(ref),
      status: 'FULFILLED',
      acceptedAt: new Date(),
      completedAt: new Date(),
    })) as WorkflowHandleWithFirstExecutionRunId;
    await handle.terminate('seeded closed');
    return { workflowId: handle.workflowId, runId: handle.firstExecutionRunId, running: false };
  };
  const runsOf = async (workflowId: string, count: number, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    while ((await client.workflow.count(`WorkflowId = '${workflowId}'`)).count !== count) {
      assert.ok(Date.now() < deadline, `${count} runs of ${workflowId}`);
      await sleep(200);
    }
  };

  it('one ID deleted and another with two runs in the same check: the superseded run is left out', async () => {
    const [gone, twice] = [`GONE-${run}`, `TWICE-${run}`];
    const goneRun = await closedRun(gone);
    const earlier = await closedRun(twice);
    const latest = await closedRun(twice);
    await runsOf(orderWorkflowId(twice, owner), 2);
    await client.workflowService.deleteWorkflowExecution({
      namespace: client.options.namespace,
      workflowExecution: { workflowId: goneRun.workflowId, runId: goneRun.runId },
    });
    // The dev server removes a deleted run from visibility in a task of its own: tens of seconds.
    await runsOf(goneRun.workflowId, 0, 120_000);

    // Listed before the deletion, as a statement's page may be: the deleted run counts as listed.
    assert.deepEqual(await LatestRuns.of(client, [goneRun, earlier]), [goneRun]);
    assert.deepEqual(await LatestRuns.of(client, [goneRun, earlier, latest]), [goneRun, latest]);
    assert.deepEqual(await LatestRuns.of(client, [latest]), [latest]);
  });

  it('runs whose memo another codec encrypted: read without decoding it, the superseded run left out', async () => {
    // Written by a deployment with payload encryption, read by one without its keys (or a memo
    // this codec cannot read): the check needs only IDs, status and close time.
    const keys = `latest-test:${randomBytes(32).toString('base64')}`;
    const encrypting = new Client({
      connection: client.connection,
      namespace: client.options.namespace,
      dataConverter: dataConverterFromConfig({ PAYLOAD_ENCRYPTION_KEYS: keys }),
    });
    const ref = `SEALED-${run}`;
    const seeded = async () => {
      const handle = (await seedListedOrder(encrypting, {
        taskQueue,
        owner,
        request: mobileRequest(ref),
        status: 'FULFILLED',
        acceptedAt: new Date(),
        completedAt: new Date(),
        figures: true,
      })) as WorkflowHandleWithFirstExecutionRunId;
      await handle.terminate('seeded closed');
      return { workflowId: handle.workflowId, runId: handle.firstExecutionRunId, running: false };
    };
    const earlier = await seeded();
    const latest = await seeded();
    await runsOf(earlier.workflowId, 2);
    assert.deepEqual(await LatestRuns.of(client, [earlier, latest]), [latest]);
  });
});
