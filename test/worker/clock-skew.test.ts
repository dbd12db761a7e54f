/**
 * A worker process whose clock is 3 minutes off Temporal's (libfaketime, as the cluster tier's
 * `worker-clock-ahead` / `-behind` faults run it), as it runs in production (`npm run worker`):
 * once it has started a regular activity, its first sends go out as local activities, not refused
 * as "scheduled after its window" (src/temporal/server-clock.ts, order.activities.ts
 * mayRunThisSend), and its status checks are not given up at once because a schedule-to-close
 * read on its own clock looks past (src/provider/attempt-deadline.ts).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { createInterface } from 'node:readline';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { statusQuery, type OrderView } from '../../contract/order';
import { bundleWorkflowCode } from '@temporalio/worker';
import { useTemporal, type TestTemporal } from '../helpers/temporal';
import { workflowBundleOptions } from '../../src/worker/bundle';
import {
  giftCardRequest,
  mobileRequest,
  newRef,
  SANDBOX_KEY,
  scaledTimings,
  startOrder,
  startTestSandbox,
  type TestSandbox,
} from '../helpers/orders';
import { libfaketime } from '../../scripts/lib/faketime';

const root = resolve(__dirname, '..', '..');
const SKEW_S = 180;
/**
 * Shorter than the skew, so a regular activity's schedule-to-close (the polling's ends at the
 * order's deadline) ends before the skewed worker's own clock says it began: read on that clock
 * instead of the server's, every check would be given up at once (src/provider/attempt-deadline.ts).
 */
const timings = scaledTimings({ deadlineMs: 2 * 60_000, settleMs: 2_000 });

describe('a worker whose clock is 3 minutes off Temporal', () => {
  let temporal: TestTemporal;
  let sandbox: TestSandbox;
  let connection: Connection;
  let client: Client;
  let scratch: string | undefined;
  let bundlePath: string;
  const children = new Set<ChildProcess>();
  const lib = libfaketime();

  before(async () => {
    [temporal, sandbox] = await Promise.all([useTemporal(), startTestSandbox()]);
    connection = await Connection.connect({ address: temporal.address });
    client = new Client({ connection, namespace: temporal.namespace });
    bundlePath = process.env.TEST_WORKFLOW_BUNDLE_PATH ?? (await buildBundle());
  });
  after(async () => {
    for (const child of children) child.kill('SIGKILL');
    await connection.close();
    await sandbox.close();
    await temporal.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  async function buildBundle(): Promise<string> {
    scratch = mkdtempSync(join(tmpdir(), 'clock-skew-'));
    const path = join(scratch, 'workflow-bundle.js');
    writeFileSync(path, (await bundleWorkflowCode({ ...workflowBundleOptions, logger: undefined })).code);
    return path;
  }

  /** `npm run worker` under libfaketime, its wall clock `skewS` seconds off; once it polls. */
  async function startSkewedWorker(taskQueue: string, skewS: number): Promise<ChildProcess> {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'worker', 'main.ts')], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        ...process.env,
        LD_PRELOAD: lib!,
        FAKETIME: `${skewS > 0 ? '+' : '-'}${Math.abs(skewS)}s`,
        // Timers and timeouts run on the monotonic clock, which no wrong date moves.
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
        LOG_LEVEL: 'info',
        TEMPORAL_ADDRESS: temporal.address,
        TEMPORAL_NAMESPACE: temporal.namespace,
        TEMPORAL_TASK_QUEUE: taskQueue,
        PROVIDER_BASE_URL: sandbox.url,
        PROVIDER_API_KEY: SANDBOX_KEY,
        WORKER_WORKFLOW_BUNDLE_PATH: bundlePath,
      },
    });
    children.add(child);
    child.once('exit', () => children.delete(child));
    const lines = createInterface({ input: child.stdout! });
    const startedAt = Date.now();
    const loggedAt = await new Promise<number>((resolveStarted, reject) => {
      child.once('exit', (code) => reject(new Error(`worker exited early with code ${code}`)));
      lines.on('line', (line) => {
        if (!line.includes('"msg":"worker started"')) return;
        resolveStarted((JSON.parse(line) as { time: number }).time);
      });
    });
    // The worker's clock is off as asked (its log's time against ours, seconds apart at most).
    assert.ok(
      Math.abs(loggedAt - startedAt - skewS * 1000) < 30_000,
      `worker clock ${loggedAt - startedAt} ms off`,
    );
    return child;
  }

  /**
   * The order's view once it is final or in review (a review waits for an operator: the workflow's
   * result would never come), read from its latest run.
   */
  async function settled(handle: WorkflowHandle): Promise<OrderView> {
    const latest = client.workflow.getHandle(handle.workflowId);
    for (;;) {
      const view = await latest.query(statusQuery).catch(() => undefined);
      if (view && ['FULFILLED', 'REFUNDED', 'FAILED', 'CANCELLED', 'NEEDS_REVIEW'].includes(view.status))
        return view;
      await sleep(500);
    }
  }

  /** The failure types of the order's local sends (undefined: the send went out and answered). */
  async function localSends(handle: WorkflowHandle): Promise<(string | null | undefined)[]> {
    const events = (await handle.fetchHistory()).events ?? [];
    return events
      .flatMap((e) => e.markerRecordedEventAttributes ?? [])
      .filter((m) => m.markerName === 'core_local_activity')
      .map((m) => m.failure?.applicationFailureInfo?.type ?? m.failure?.message);
  }

  for (const skewS of [SKEW_S, -SKEW_S]) {
    const way = skewS > 0 ? 'ahead' : 'behind';
    it(
      `${way}: once it has started a regular activity, sends top-ups and places gift cards as local activities`,
      {
        skip: !lib && !process.env.CI ? 'libfaketime is not installed (apt-get install faketime)' : false,
      },
      async () => {
        assert.ok(lib, 'libfaketime is installed (apt-get install faketime)');
        const taskQueue = `orders-skew-${way}-${randomUUID()}`;
        const worker = await startSkewedWorker(taskQueue, skewS);
        try {
          // A first order gives the worker its first regular activity (its polling, or a look-up
          // where its send was refused: with no sample yet, the worker reads its own clock).
          const warmUp = await startOrder(client, taskQueue, mobileRequest(newRef(`skew-warm-${way}`)), {
            timings,
          });
          const warmedUp = await settled(warmUp);
          assert.equal(warmedUp.status, 'FULFILLED', JSON.stringify(warmedUp.timeline));

          const requests = [
            mobileRequest(newRef(`skew-${way}`)),
            giftCardRequest(newRef(`skew-gift-${way}`)),
          ];
          const handles = await Promise.all(
            requests.map((r) => startOrder(client, taskQueue, r, { timings })),
          );
          for (const [i, handle] of handles.entries()) {
            const view = await settled(handle);
            assert.equal(view.status, 'FULFILLED', JSON.stringify(view.timeline));
            assert.deepEqual(
              await localSends(handle),
              [undefined],
              `${requests[i]!.type}: the local send went out`,
            );
          }
          assert.equal((await sandbox.sendsOf(requests[0]!.ref)).accepted, 1);
        } finally {
          worker.kill('SIGKILL');
          await once(worker, 'exit');
        }
      },
    );
  }
});
