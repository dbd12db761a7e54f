/**
 * The cluster tier's rolling deploy (docs/contributors.md "Changing a workflow safely"): orders in
 * flight, some waiting in review, while a changed build (changed-build.ts, a patched change
 * bundled into a second bundle) joins the old one on the same task queue; then the old worker is
 * stopped, the reviews are decided on the new build and every order runs to its end.
 *
 * Counted from the histories and the sandbox: non-determinism errors (workflow tasks failed as
 * such), orders lost (not final at the end), orders sent twice (the sandbox's accepted sends per
 * ref), and how many orders the changed build drove (its memo).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { bundleWorkflowCode, NativeConnection, type Worker } from '@temporalio/worker';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { createActivities } from '../../activities';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { createOrderWorker, type WorkflowCode } from '../../src/worker/worker';
import { workflowBundleOptions } from '../../src/worker/bundle';
import {
  decideReviewUpdate,
  defaultOrderTimings,
  finalStatuses,
  type OrderRequest,
  type OrderTimings,
  type OrderView,
} from '../../contract/order';
import {
  giftCardRequest,
  installTestRuntime,
  internetRequest,
  mobileRequest,
  startOrder,
  startTestSandbox,
  testProvider,
  waitForView,
} from '../../test/helpers/orders';
import { CHANGED_BUILD_MEMO } from './changed-build';

/** The sandbox and the orders' polling run this much faster than the spec: a normal order takes ~5 s. */
const TIME_SCALE = 0.25;
const ORDERS_PER_WAVE = 24;

export interface RollingDeploySummary {
  orders: number;
  /** Orders open (not final) when the old worker stopped, and of them waiting in review. */
  openAtStop: number;
  inReviewAtStop: number;
  /** Workflow tasks that failed as non-deterministic, and those that failed at all. */
  nondeterminismErrors: number;
  workflowTaskFailures: number;
  /** Not final at the end (after every review was decided). */
  lost: number;
  /** Refs the sandbox accepted more than one send for. */
  sentTwice: number;
  /** Orders the changed build drove past its change (memo). */
  drivenByNewBuild: number;
  finalStatuses: Record<string, number>;
}

export async function runRollingDeploy({
  address,
  namespace,
  oldBundlePath,
  log,
}: {
  address: string;
  namespace: string;
  /** The old build: the bundle the Docker image build made. */
  oldBundlePath: string;
  log: (line: string) => void;
}): Promise<RollingDeploySummary> {
  installTestRuntime();
  log('rolling deploy: bundling the changed build…');
  const { code: newBundle } = await bundleWorkflowCode({
    ...workflowBundleOptions,
    workflowInterceptorModules: [
      ...workflowBundleOptions.workflowInterceptorModules,
      require.resolve('./changed-build'),
    ],
    logger: undefined,
  });
  const sandbox = await startTestSandbox(TIME_SCALE);
  const provider = testProvider(sandbox.url);
  const nativeConnection = await NativeConnection.connect({ address });
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  const taskQueue = `rolling-deploy-${randomUUID()}`;
  const startWorker = async (buildId: string, workflowCode: WorkflowCode) => {
    const worker = await createOrderWorker({
      // Unrouted, so the changed build takes over the old one's orders: what a patched change
      // must survive (docs/contributors.md "The cluster tier").
      deployment: { deploymentName: 'rolling-deploy', buildId },
      versioning: false,
      connection: nativeConnection,
      namespace,
      taskQueue,
      activities: createActivities({ provider: provider.client, temporal: client }),
      workflowCode,
    });
    return { worker, running: worker.run() };
  };
  const stopWorker = async ({ worker, running }: { worker: Worker; running: Promise<void> }) => {
    worker.shutdown();
    await running;
  };

  const timings = scaledTimings();
  const handles: WorkflowHandle[] = [];
  const reviews: WorkflowHandle[] = [];
  const giftCardHandles = new Set<WorkflowHandle>();
  const startWave = async (wave: string) => {
    for (let i = 0; i < ORDERS_PER_WAVE; i++) {
      const ref = `rolling-${wave}-${i}-${randomUUID().slice(0, 8)}`;
      const toReview = i % 4 === 3;
      const request: OrderRequest = toReview
        ? mobileRequest(ref, sandboxSpecialNumbers.unknownError)
        : [mobileRequest, internetRequest, (r: string) => giftCardRequest(r, 1)][i % 3]!(ref);
      const handle = await startOrder(client, taskQueue, request, { timings: timings[request.type] });
      handles.push(handle);
      if (toReview) reviews.push(handle);
      if (request.type === 'gift_card') giftCardHandles.add(handle);
    }
  };

  const old = await startWorker('old', { workflowBundle: { codePath: oldBundlePath } });
  let changed: Awaited<ReturnType<typeof startWorker>> | undefined;
  try {
    log(`rolling deploy: old build alone, ${ORDERS_PER_WAVE} orders…`);
    await startWave('old');
    // The first wave's reviews are waiting for an operator before the new build arrives.
    await Promise.all(reviews.map((h) => waitForView(h, (v) => v.status === 'NEEDS_REVIEW', 60_000)));
    log(`rolling deploy: the changed build joins; ${ORDERS_PER_WAVE} more orders while both run…`);
    changed = await startWorker('changed', { workflowBundle: { code: newBundle } });
    await startWave('both');
    await sleep(2_000);
    const views = await Promise.all(handles.map((h) => viewOf(h)));
    const open = views.filter((v) => !v || !finalStatuses.includes(v.status));
    const inReview = views.filter((v) => v?.status === 'NEEDS_REVIEW');
    log(`rolling deploy: stopping the old build (${open.length} orders open, ${inReview.length} in review)…`);
    await stopWorker(old);

    await Promise.all(
      reviews.map(async (h) => {
        await waitForView(h, (v) => v.status === 'NEEDS_REVIEW', 60_000);
        await h.executeUpdate(decideReviewUpdate, {
          // Forced: these orders are in review on UNKNOWN_ERROR, where a plain REFUNDED waits for the provider.
          args: [
            {
              decision: 'REFUNDED',
              operator: 'rolling-deploy',
              note: 'decided on the new build',
              force: true,
            },
          ],
        });
      }),
    );
    const ends = await Promise.all(handles.map((h) => settle(h, 120_000)));
    const statuses: Record<string, number> = {};
    for (const view of ends) statuses[view?.status ?? 'OPEN'] = (statuses[view?.status ?? 'OPEN'] ?? 0) + 1;

    let nondeterminismErrors = 0;
    let workflowTaskFailures = 0;
    let drivenByNewBuild = 0;
    for (const handle of handles) {
      for (const event of (await handle.fetchHistory()).events ?? []) {
        const failed = event.workflowTaskFailedEventAttributes;
        if (!failed) continue;
        workflowTaskFailures++;
        if (
          failed.cause ===
          temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR
        ) {
          nondeterminismErrors++;
        }
      }
      const memo = (await handle.describe()).memo;
      if (memo?.[CHANGED_BUILD_MEMO] === true) drivenByNewBuild++;
    }
    // A second send of a top-up is a second attempt at the sandbox, even refused as DUPLICATED_REF.
    const report = await sandbox.report();
    const giftCards = handles.filter((h) => giftCardHandles.has(h)).length;
    const sentTwice =
      Object.values(report.refs).filter((r) => r.attempts > 1).length +
      Math.max(0, report.giftCardOrders.placed - giftCards);
    return {
      orders: handles.length,
      openAtStop: open.length,
      inReviewAtStop: inReview.length,
      nondeterminismErrors,
      workflowTaskFailures,
      lost: ends.filter((v) => !v || !finalStatuses.includes(v.status)).length,
      sentTwice,
      drivenByNewBuild,
      finalStatuses: statuses,
    };
  } finally {
    if (changed) await stopWorker(changed);
    await Promise.allSettled([stopWorker(old)]);
    await Promise.all([connection.close(), nativeConnection.close()]);
    await provider.close();
    await sandbox.close();
  }
}

export function formatRollingDeploy(s: RollingDeploySummary): string {
  return [
    `rolling deploy: ${s.orders} orders; at the old build's stop ${s.openAtStop} open, ${s.inReviewAtStop} in review`,
    `  non-determinism errors ${s.nondeterminismErrors} (workflow task failures ${s.workflowTaskFailures}); lost ${s.lost}; sent twice ${s.sentTwice}`,
    `  driven by the changed build: ${s.drivenByNewBuild}; final: ${Object.entries(s.finalStatuses)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  ].join('\n');
}

/** The spec's timings × TIME_SCALE, the review watch off (a decision is final at once). */
function scaledTimings(): Record<OrderRequest['type'], OrderTimings> {
  const scale = (t: OrderTimings): OrderTimings => ({
    ...t,
    firstCheckMs: t.firstCheckMs * TIME_SCALE,
    handlingCheckMs: t.handlingCheckMs * TIME_SCALE,
    maxIntervalMs: t.maxIntervalMs * TIME_SCALE,
    deadlineMs: t.deadlineMs * TIME_SCALE,
    settleMs: t.settleMs * TIME_SCALE,
    reviewWatchMs: 0,
  });
  return {
    mobile_topup: scale(defaultOrderTimings.mobile_topup),
    internet_topup: scale(defaultOrderTimings.internet_topup),
    gift_card: scale(defaultOrderTimings.gift_card),
  };
}

async function viewOf(handle: WorkflowHandle): Promise<OrderView | undefined> {
  try {
    return await handle.query<OrderView>('status');
  } catch {
    return undefined;
  }
}

/** The order's final view, or its last one if it is not final within `timeoutMs`. */
async function settle(handle: WorkflowHandle, timeoutMs: number): Promise<OrderView | undefined> {
  const result = handle.result() as Promise<OrderView>;
  const timeout = sleep(timeoutMs).then(() => undefined);
  return (await Promise.race([result, timeout])) ?? viewOf(handle);
}
