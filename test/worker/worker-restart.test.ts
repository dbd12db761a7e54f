/**
 * The worker as it runs in production (`npm run worker`, configured by environment) in a child
 * process: killed with SIGKILL while a send is in flight, replaced by a new one, and stopped
 * gracefully with SIGTERM.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { ProviderFailureType } from '../../contract/activity-outcomes';
import { bundleWorkflowCode } from '@temporalio/worker';
import { startOrderStack, type OrderStack } from '../helpers/stack';
import { stackProcessEnv } from '../helpers/api-process';
import {
  RECONCILE_DAY_WORKFLOW,
  reconciliationWorkflowId,
  type ReconciliationReport,
} from '../../contract/reconciliation';
import { reconcileDayInput } from '../helpers/reconciliation';
import { workflowBundleOptions } from '../../src/worker/bundle';
import {
  mobileRequest,
  newRef,
  scaledTimings,
  startOrder,
  testProvider,
  type TestSandbox,
} from '../helpers/orders';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';

const root = resolve(__dirname, '..', '..');
/** The child's provider timeouts: one call takes at most 2.5 s, so an attempt needs 2 × 2.5 s + margin. */
const childHttpTimeouts = {
  PROVIDER_CONNECT_TIMEOUT_MS: '500',
  PROVIDER_HEADERS_TIMEOUT_MS: '1500',
  PROVIDER_BODY_TIMEOUT_MS: '500',
};
const ACTIVITY_TIMEOUT_MS = 6_000;

describe('a worker process killed while an order is in flight', () => {
  let stack: OrderStack;
  let sandbox: TestSandbox;
  let client: Client;
  let scratch: string | undefined;
  let bundlePath: string;
  const taskQueue = `orders-restart-${randomUUID()}`;
  const children = new Set<ChildProcess>();

  before(async () => {
    // The workers are `npm run worker` processes of the tests' own.
    stack = await startOrderStack({ name: 'orders-restart' });
    sandbox = stack.sandbox;
    client = stack.client;
    bundlePath = process.env.TEST_WORKFLOW_BUNDLE_PATH ?? (await buildBundle());
  });
  after(async () => {
    for (const child of children) child.kill('SIGKILL');
    await stack?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  async function buildBundle(): Promise<string> {
    scratch = mkdtempSync(join(tmpdir(), 'worker-restart-'));
    const path = join(scratch, 'workflow-bundle.js');
    writeFileSync(path, (await bundleWorkflowCode({ ...workflowBundleOptions, logger: undefined })).code);
    return path;
  }

  /** `npm run worker`'s entry point with test configuration; resolves once it has started polling. */
  async function startWorkerProcess(env: Record<string, string> = {}): Promise<ChildProcess> {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'worker', 'main.ts')], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: stackProcessEnv(stack, taskQueue, {
        LOG_LEVEL: 'info',
        WORKER_WORKFLOW_BUNDLE_PATH: bundlePath,
        ...childHttpTimeouts,
        ...env,
      }),
    });
    children.add(child);
    child.once('exit', () => children.delete(child));
    const lines = createInterface({ input: child.stdout! });
    await new Promise<void>((resolveStarted, reject) => {
      child.once('exit', (code) => reject(new Error(`worker exited early with code ${code}`)));
      lines.on('line', (line) => {
        if (line.includes('"msg":"worker started"')) resolveStarted();
      });
    });
    return child;
  }

  /**
   * Until the provider has received a send since `since` (epoch ms) that is still open. The first
   * send of a lean order is a local activity, which no pending activity shows: the sandbox is asked.
   */
  async function waitForSendInFlight(since: number): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const sends = await sandbox.requests('mobile.send');
      if (sends.some((r) => r.receivedAt >= since && r.endedAt === undefined)) return;
      assert.ok(Date.now() < deadline, 'the send started');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The nightly reconciliation of `date` over the orders since `from` (epoch ms) until now. */
  function startReconcileDay(date: string, from: number) {
    const input = reconcileDayInput(date, from, { heartbeatTimeoutMs: 3_000 });
    return client.workflow.start(RECONCILE_DAY_WORKFLOW, {
      workflowId: reconciliationWorkflowId(`${input.date}-${randomUUID()}`),
      taskQueue,
      args: [input],
    });
  }

  /** The workflow's history: event type names, and the activities it scheduled in order. */
  async function historyOf(handle: WorkflowHandle): Promise<{ events: string[]; activities: string[] }> {
    const events = (await handle.fetchHistory()).events ?? [];
    return {
      events: events.map((e) => String(proto.api.enums.v1.EventType[e.eventType ?? 0])),
      activities: events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []),
    };
  }

  it('when SIGKILLed during the send, a new worker process completes the order and the top-up is sent once', async () => {
    // The send stays in flight for a second, long enough to kill the worker in the middle of it.
    await sandbox.addFault({ kind: 'latency', latencyMs: 1_000, routes: ['mobile.send'], times: 1 });
    const first = await startWorkerProcess();
    const request = mobileRequest(newRef('killed'));
    const since = Date.now();
    const handle = await startOrder(client, taskQueue, request, {
      timings: scaledTimings({ activityTimeoutMs: ACTIVITY_TIMEOUT_MS }),
    });
    await waitForSendInFlight(since);

    first.kill('SIGKILL');
    await once(first, 'exit');
    const second = await startWorkerProcess();
    const view = await handle.result();

    assert.equal(view.status, 'FULFILLED');
    assert.equal((await sandbox.sendsOf(request.ref)).accepted, 1);

    second.kill('SIGTERM');
    const [code] = (await once(second, 'exit')) as [number | null];
    assert.equal(code, 0, 'on SIGTERM the worker drains and exits cleanly');
  });

  /**
   * An order whose first send the provider commits only `commitDelayMs` after receiving it, with no
   * unique refs (a second send would be a second top-up), and whose worker is SIGKILLed while that
   * send is in flight; a new worker carries the order to its end. Asserts it ended FULFILLED with
   * one top-up, and hands back what the test checks further.
   */
  const killedDuringLateCommittedSend = async (
    label: string,
    commitDelayMs: number,
    firstWorkerEnv: Record<string, string> = {},
  ) => {
    await sandbox.settings({ uniqueRefs: false });
    await sandbox.addFault({ kind: 'late_commit', commitDelayMs, routes: ['mobile.send'], times: 1 });
    try {
      const first = await startWorkerProcess(firstWorkerEnv);
      const request = mobileRequest(newRef(label));
      const since = Date.now();
      const handle = await startOrder(client, taskQueue, request, {
        timings: scaledTimings({ activityTimeoutMs: 3_000, settleMs: 3_000 }),
      });
      await waitForSendInFlight(since);

      first.kill('SIGKILL');
      await once(first, 'exit');
      const second = await startWorkerProcess();
      try {
        const view = await handle.result();
        await sandbox.pendingCommitsDone('mobile.send', commitDelayMs);
        assert.equal(view.status, 'FULFILLED', JSON.stringify(view.timeline));
        assert.deepEqual(await sandbox.sendsOf(request.ref), { ref: request.ref, accepted: 1, attempts: 1 });
        return { handle, view };
      } finally {
        second.kill('SIGKILL');
        await once(second, 'exit');
      }
    } finally {
      await sandbox.clearFaults();
      await sandbox.settings({ uniqueRefs: true });
    }
  };

  it('when SIGKILLed during a send the provider commits only later (no unique refs), the new worker finds that send after the settle window and never sends again', async () => {
    // A send through the task queue (a worker whose provider calls are rate-limited sends every
    // order that way): the provider commits 4 s after receiving it, whoever is still listening; the
    // dead worker's attempt times out after 3 s. A look-up right then would find nothing.
    await killedDuringLateCommittedSend('killed-late', 4_000, { WORKER_PROVIDER_CALLS_PER_SECOND: '50' });
  });

  it('when SIGKILLed during the local-activity send of the first workflow task, the task that runs again looks the ref up and never sends twice', async () => {
    // The provider commits 2 s after receiving the send. The dead worker's first task left no
    // marker of its send in the history; the task that runs again on the new worker sees that it
    // is not the first try and tells the send so.
    const { handle, view } = await killedDuringLateCommittedSend('killed-local', 2_000);
    assert.match(
      view.timeline.map((e) => e.event).join('\n'),
      /The provider already had this order from an earlier attempt; not sent again/,
    );
    const { events, activities } = await historyOf(handle);
    assert.ok(events.includes('EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT'), 'the first task timed out');
    // No send was made again, as a local activity or otherwise: the local send, told that the
    // first task ran before, refused unsent (sendsOf above: one attempt) and the ref was looked up.
    const markers = ((await handle.fetchHistory()).events ?? []).flatMap(
      (e) => e.markerRecordedEventAttributes ?? [],
    );
    assert.deepEqual(
      markers
        .filter((m) => m.markerName === 'core_local_activity')
        .map((m) => m.failure?.applicationFailureInfo?.type),
      [ProviderFailureType.outcomeUnknown],
    );
    assert.equal(activities[0], 'checkMobileTopup');
    assert.ok(!activities.some((name) => name.startsWith('send')), activities.join(' '));
  });

  it('when SIGKILLed while the nightly reconciliation reads the provider ledger, a new worker process resumes the run and finishes the day', async () => {
    const first = await startWorkerProcess();
    const from = Date.now();
    const request = mobileRequest(newRef('reconciled'));
    const order = await startOrder(client, taskQueue, request, { timings: scaledTimings() });
    assert.equal((await order.result()).status, 'FULFILLED');
    // The first ledger page takes 1.5 s: the worker is killed while it waits for it.
    await sandbox.addFault({ kind: 'latency', latencyMs: 1_500, routes: ['account.transactions'], times: 1 });
    const since = Date.now();
    const handle = await startReconcileDay('2001-03-01', from);
    const deadline = Date.now() + 10_000;
    while (!(await sandbox.requests('account.transactions')).some((r) => r.receivedAt >= since)) {
      assert.ok(Date.now() < deadline, 'the ledger read started');
      await new Promise((r) => setTimeout(r, 50));
    }
    first.kill('SIGKILL');
    await once(first, 'exit');
    const second = await startWorkerProcess();
    try {
      const report = (await handle.result()) as ReconciliationReport;
      assert.deepEqual([report.orders, report.matched, report.checked], [1, 1, 0], JSON.stringify(report));
      // The matching ran again on the new worker: its second attempt is the one that completed.
      const events = (await handle.fetchHistory()).events ?? [];
      const attempts = events.flatMap((e) => e.activityTaskStartedEventAttributes?.attempt ?? []);
      assert.ok(
        attempts.some((a) => a >= 2),
        `attempts ${JSON.stringify(attempts)}`,
      );
    } finally {
      await sandbox.clearFaults();
      second.kill('SIGKILL');
      await once(second, 'exit');
    }
  });
  it('when SIGKILLed in the middle of a ledger of several pages, the new worker goes on after the last page the heartbeat carried: no page read twice but the one in flight, every row checked once', async () => {
    const first = await startWorkerProcess({ WORKER_PROVIDER_CALLS_PER_SECOND: '50' });
    const from = Date.now();
    const order = await startOrder(client, taskQueue, mobileRequest(newRef('paged')), {
      timings: scaledTimings(),
    });
    assert.equal((await order.result()).status, 'FULFILLED');
    // 350 top-ups sent with our key outside the service: with the order's debit, 4 ledger pages of 100.
    const provider = testProvider(sandbox.url);
    const run = randomUUID().slice(0, 6);
    try {
      for (let i = 0; i < 350; i++)
        await provider.client.sendMobileTopup({
          plan_code: 'PREPAID_DJEZZY',
          MSSIDN: '0557654321',
          amount: 100,
          ref: `stray-${run}-${i}`,
        });
    } finally {
      await provider.close();
    }
    // Each ledger page takes a second: the worker is killed in the middle of the read.
    await sandbox.addFault({ kind: 'latency', latencyMs: 1_000, routes: ['account.transactions'] });
    const since = Date.now();
    const handle = await startReconcileDay('2001-03-02', from);
    // Killed once Temporal holds a heartbeat past page 1 of a read that is not done.
    let cursor = 0;
    for (const deadline = Date.now() + 20_000; cursor < 2; await new Promise((r) => setTimeout(r, 50))) {
      assert.ok(Date.now() < deadline, 'the matching heartbeated past page 1');
      const pending = (await handle.describe()).raw.pendingActivities ?? [];
      const details = pending[0]?.heartbeatDetails?.payloads;
      if (!details?.length) continue;
      const progress = await decodeFromPayloadsAtIndex<{
        ledger?: { page: number; done: boolean };
        page?: number;
      }>(client.options.loadedDataConverter, 0, details);
      assert.notEqual(progress.ledger?.done, true, 'the ledger read finished before the kill');
      // (`page` alone: the heartbeat of the code before the ledger was carried.)
      cursor = progress.ledger?.page ?? progress.page ?? 0;
    }
    first.kill('SIGKILL');
    await once(first, 'exit');
    const second = await startWorkerProcess({ WORKER_PROVIDER_CALLS_PER_SECOND: '50' });
    try {
      const report = (await handle.result()) as ReconciliationReport;
      assert.deepEqual(
        [
          report.orders,
          report.matched,
          report.ledgerRows,
          report.unexplainedRows,
          report.checked,
          report.foreign,
        ],
        [1, 1, 351, 350, 350, 350],
        JSON.stringify({ ...report, items: report.items.length, unexplained: report.unexplained.length }),
      );
      const pages = (await sandbox.requests('account.transactions'))
        .filter((r) => r.receivedAt >= since)
        .map((r) => r.page ?? 0);
      const readsOf = (page: number) => pages.filter((p) => p === page).length;
      // The pages up to the cursor Temporal held were read once; each after it twice at most (the
      // SDK sends heartbeats batched, so the killed worker may have read past the cursor Temporal had).
      for (let page = 1; page <= cursor; page++)
        assert.equal(readsOf(page), 1, `page ${page}: ${pages.join(',')}`);
      for (let page = cursor + 1; page <= 4; page++)
        assert.ok(readsOf(page) >= 1 && readsOf(page) <= 2, `page ${page}: ${pages.join(',')}`);
      // Every row no order explains was checked by its id once (the kill came before any check).
      const checks = (await sandbox.requests('mobile.checkId')).filter((r) => r.receivedAt >= since);
      assert.equal(checks.length, 350);
    } finally {
      await sandbox.clearFaults();
      second.kill('SIGKILL');
      await once(second, 'exit');
    }
  });
});
