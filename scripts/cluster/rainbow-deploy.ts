/**
 * The cluster tier's rainbow deploy (docs/contributors.md "The cluster tier"): a Worker Deployment
 * whose first version (v1: the bundle the image build makes) holds orders in every phase while a
 * changed build (v2: changed-build.ts, a workflow change with no patch, in a second bundle) starts
 * beside it, takes 10 % of new orders, then all of them; v1 is retired once Temporal reports it
 * drained. Then the rollback: v2 current with orders in flight, v1 made current again.
 *
 * Phases v1 holds when v2 becomes current: sending (a send the sandbox holds for seconds),
 * polling, HELD (its operator down: a balance hold would hold every send of the task queue, so no
 * order could be sending or polling beside it), QUEUED (the sandbox's outcome change), in review
 * (the scripted UNKNOWN_ERROR number) and watching (a forced REFUNDED the provider never confirms).
 * Orders are pinned: the active ones must finish on v1; the long waits continue as new onto the
 * current version at their next wake-up, so v1 drains within a wake-up interval (short here).
 *
 * Counted from every run's history and from the sandbox: workflow tasks failed (as
 * non-deterministic or at all), orders not final at the end (lost), refs sent more than once and
 * gift cards placed more than once (sent twice), runs whose workflow tasks were completed by two
 * builds (a pinned run moved), the orders each build started and finished, and how long v1 took
 * to drain. `rainbowProblems` (rainbow-verdict.ts) turns them into the tier's verdict.
 */

import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { bundleWorkflowCode, NativeConnection, type Worker } from '@temporalio/worker';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { createActivities } from '../../src/worker/activities';
import type { AccountProvider } from '../../src/provider-account/account.activities';
import { createProviderPool, ProviderClient } from '../../src/provider';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { SandboxAdmin } from '../../src/sandbox/admin-client';
import {
  describeVersion,
  setCurrentVersion,
  setRampingVersion,
  versionName,
  waitForVersion,
  type DeploymentServices,
  type DeploymentVersion,
} from '../../src/temporal/deployments';
import { workflowBundleOptions } from '../../src/worker/bundle';
import { workflowBuildId } from '../../src/worker/build-id';
import { createOrderWorker } from '../../src/worker/worker';
import {
  AcceptedAtAttribute,
  decideReviewUpdate,
  defaultOrderTimings,
  finalStatuses,
  OrderClientAttribute,
  OrderStatusAttribute,
  OrderTypeAttribute,
  orderWorkflowId,
  workflowTypeByOrderType,
  type OrderInput,
  type OrderRequest,
  type OrderStatus,
  type OrderTimings,
  type OrderView,
} from '../../contract/order';
import type { Phase, RainbowBuildFigures, RainbowDeploySummary, SwitchFigures } from './rainbow-verdict';
import {
  ADMIN_TOKEN,
  giftCardRequest,
  installTestRuntime,
  internetRequest,
  mobileRequest,
  SANDBOX_KEY,
  startTestSandbox,
  waitForView,
} from '../lib/sandbox-orders';

/** The sandbox and the orders' polling run this much faster than the spec: a normal order takes ~5 s. */
const TIME_SCALE = 0.25;
/**
 * Every long wait wakes this often (review re-check, QUEUED re-check, a hold's backstop, the
 * watch's checks after its first): how soon a long-waiting order reaches the current version.
 */
const WAKE_UP_MS = 3_000;
/** The watch outlasts the switch and a wake-up on each side of it. */
const WATCH_MS = 20_000;
/** The account workflow's reading interval (PROVIDER_ACCOUNT_CHECK_MS): a hold lets go within it. */
const ACCOUNT_CHECK_MS = 500;
/** How long a send the sandbox holds takes: the order is still sending when v2 becomes current. */
const SLOW_SEND_MS = 2_500;
/** Drainage is reported after the tier's grace period and refresh interval (temporal-cluster.ts). */
const DRAIN_TIMEOUT_MS = 120_000;
const SETTLE_TIMEOUT_MS = 150_000;
const STARTER_CLIENT = 'cluster_rainbow';

/** The orders in each phase v1 holds when v2 becomes current (the long waits start on v1 alone). */
const LONG_WAITS = { review: 4, watch: 3, queued: 3, held: 4 } as const;
const RAMP_PERCENT = 10;
/** Orders started while v2 takes 10 % (one every `STREAM_GAP_MS`), then sending at the switch, then after it. */
const RAMP_ORDERS = 20;
const SENDING_ORDERS = 3;
const AFTER_SWITCH_ORDERS = 6;
const STREAM_GAP_MS = 250;
/** The rollback: orders on v2 (a few in review) when v1 is made current again. */
const ROLLBACK_ORDERS = 9;
const ROLLBACK_REVIEWS = 3;

interface TrackedOrder {
  handle: WorkflowHandle;
  firstRunId: string;
  request: OrderRequest;
  /** What it was started to do: a long wait or a normal order. */
  kind: 'review' | 'watch' | 'queued' | 'held' | 'normal';
  rollback: boolean;
}

interface RunFacts {
  runId: string;
  /** The build of each completed workflow task, in order. */
  builds: string[];
  failures: number;
  nondeterminism: number;
  continuedAsNew: boolean;
}

export async function runRainbowDeploy({
  address,
  namespace,
  oldBundlePath,
  log,
}: {
  address: string;
  namespace: string;
  /** v1: the bundle the Docker image build made. */
  oldBundlePath: string;
  log: (line: string) => void;
}): Promise<RainbowDeploySummary> {
  const started = Date.now();
  installTestRuntime();
  log('rainbow deploy: bundling the changed build…');
  const v1Code = await readFile(oldBundlePath, 'utf8');
  const { code: v2Code } = await bundleWorkflowCode({
    ...workflowBundleOptions,
    workflowInterceptorModules: [
      ...workflowBundleOptions.workflowInterceptorModules,
      require.resolve('./changed-build'),
    ],
    logger: undefined,
  });
  // A deployment of its own: drainage counts every pinned run of a version in the namespace.
  const deploymentName = `rainbow-${randomUUID().slice(0, 8)}`;
  const v1: DeploymentVersion = { deploymentName, buildId: workflowBuildId(v1Code) };
  const v2: DeploymentVersion = { deploymentName, buildId: workflowBuildId(v2Code) };
  if (v1.buildId === v2.buildId) throw new Error('the changed build has the same build ID as the old one');

  const sandbox = await startTestSandbox(TIME_SCALE);
  const admin = new SandboxAdmin(sandbox.url, ADMIN_TOKEN);
  const pool = createProviderPool({ baseUrl: sandbox.url, connectTimeoutMs: 1_000, connections: 32 });
  // Longer than a slowed send, shorter than the activity's start-to-close.
  const provider = new ProviderClient({
    baseUrl: sandbox.url,
    apiKey: SANDBOX_KEY,
    dispatcher: pool,
    headersTimeoutMs: 5_000,
    bodyTimeoutMs: 5_000,
  });
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  const taskQueue = `rainbow-${randomUUID()}`;

  type Running = { worker: Worker; running: Promise<void>; version: DeploymentVersion };
  const workers = new Map<string, Running>();
  const startBuild = async (version: DeploymentVersion, code: string): Promise<void> => {
    // A connection per build, as each build's workers are processes of their own.
    const native = await NativeConnection.connect({ address });
    const worker = await createOrderWorker({
      connection: native,
      namespace,
      taskQueue,
      activities: createActivities({
        provider,
        temporal: client,
        account: {
          provider: provider as unknown as AccountProvider,
          checkMs: ACCOUNT_CHECK_MS,
          pingMaxAgeMs: ACCOUNT_CHECK_MS,
        },
      }),
      workflowCode: { workflowBundle: { code } },
      deployment: version,
    });
    workers.set(version.buildId, {
      worker,
      running: worker.run().finally(() => native.close()),
      version,
    });
    await waitForVersion(connection, namespace, version, { taskQueues: [taskQueue], timeoutMs: 60_000 });
  };
  const stopBuild = async (version: DeploymentVersion): Promise<void> => {
    const running = workers.get(version.buildId);
    if (!running) return;
    workers.delete(version.buildId);
    running.worker.shutdown();
    await running.running;
  };

  const orders: TrackedOrder[] = [];
  const timings = scaledTimings();
  const start = async (
    label: string,
    request: OrderRequest,
    kind: TrackedOrder['kind'],
    rollback = false,
  ): Promise<TrackedOrder> => {
    const acceptedAt = new Date();
    const input: OrderInput = {
      request,
      acceptedAt: acceptedAt.toISOString(),
      clientId: STARTER_CLIENT,
      // Only the watch orders are watched after their decision: the others' decisions end them.
      timings: { ...timings[request.type], ...(kind !== 'watch' && { reviewWatchMs: 0 }) },
    };
    const handle = await client.workflow.start<(input: OrderInput) => Promise<OrderView>>(
      workflowTypeByOrderType[request.type],
      {
        taskQueue,
        workflowId: orderWorkflowId(label),
        args: [input],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        memo: { requestHash: `rainbow-${request.ref}` },
        typedSearchAttributes: [
          { key: OrderTypeAttribute, value: request.type },
          { key: OrderStatusAttribute, value: 'ACCEPTED' },
          { key: OrderClientAttribute, value: STARTER_CLIENT },
          { key: AcceptedAtAttribute, value: acceptedAt },
        ],
      },
    );
    const order = { handle, firstRunId: handle.firstExecutionRunId, request, kind, rollback };
    orders.push(order);
    return order;
  };
  const newRef = (label: string) => `rainbow-${label}-${randomUUID().slice(0, 8)}`;
  let n = 0;
  const normalRequest = (ref: string): OrderRequest =>
    [mobileRequest, internetRequest, giftCardRequest][n++ % 3]!(ref);
  const stream = async (count: number, label: string, rollback = false): Promise<TrackedOrder[]> => {
    const started: TrackedOrder[] = [];
    for (let i = 0; i < count; i++) {
      const ref = newRef(`${label}-${i}`);
      started.push(await start(ref, normalRequest(ref), 'normal', rollback));
      await sleep(STREAM_GAP_MS);
    }
    return started;
  };

  try {
    // -- v1 alone: the long waits -------------------------------------------------------------
    log(`rainbow deploy: v1 ${versionName(v1)} alone (deployment ${deploymentName})…`);
    await startBuild(v1, v1Code);
    await setCurrentVersion(connection, namespace, v1);
    await admin.operators({ ooredoo: 'down' });
    const longWaits: TrackedOrder[] = [];
    for (let i = 0; i < LONG_WAITS.review; i++) {
      const ref = newRef(`review-${i}`);
      longWaits.push(await start(ref, mobileRequest(ref, sandboxSpecialNumbers.unknownError), 'review'));
    }
    for (let i = 0; i < LONG_WAITS.watch; i++) {
      const ref = newRef(`watch-${i}`);
      longWaits.push(await start(ref, mobileRequest(ref, sandboxSpecialNumbers.unknownError), 'watch'));
    }
    for (let i = 0; i < LONG_WAITS.queued; i++) {
      const ref = newRef(`queued-${i}`);
      await sandbox.changeTopup(ref, { status: 'QUEUED' });
      longWaits.push(await start(ref, internetRequest(ref), 'queued'));
    }
    for (let i = 0; i < LONG_WAITS.held; i++) {
      const ref = newRef(`held-${i}`);
      longWaits.push(await start(ref, { ...mobileRequest(ref), planCode: 'PREPAID_OOREDOO' }, 'held'));
    }
    await Promise.all(
      longWaits.map(async (o) => {
        if (o.kind === 'held') return untilStatus(o, (s) => s === 'HELD', 60_000);
        if (o.kind === 'queued') return waitForView(o.handle, (v) => v.status === 'QUEUED', 60_000);
        await waitForView(o.handle, (v) => v.status === 'NEEDS_REVIEW', 60_000);
        if (o.kind !== 'watch') return;
        // Forced: on UNKNOWN_ERROR a plain REFUNDED waits for the provider; the provider never confirms it.
        const outcome = await o.handle.executeUpdate(decideReviewUpdate, {
          args: [{ decision: 'REFUNDED', operator: 'rainbow-deploy', note: 'decided on v1', force: true }],
        });
        if (!outcome.view.watch) throw new Error(`${o.handle.workflowId}: decided, but not watched`);
      }),
    );
    log(`rainbow deploy: ${longWaits.length} orders in long waits on v1 (review, watch, QUEUED, HELD)`);

    // -- v2 joins and takes 10 % of new orders -----------------------------------------------
    log(`rainbow deploy: v2 ${versionName(v2)} starts beside v1 and ramps to ${RAMP_PERCENT} %…`);
    await startBuild(v2, v2Code);
    await setRampingVersion(connection, namespace, v2, RAMP_PERCENT);
    const rampOrders = await stream(RAMP_ORDERS, 'ramp');
    // Sends the sandbox holds: these orders are inside their first workflow task at the switch.
    await sandbox.addFault({
      kind: 'latency',
      routes: ['mobile.send', 'internet.send', 'giftcards.placeOrder'],
      latencyMs: SLOW_SEND_MS,
      times: SENDING_ORDERS,
    });
    const sendingOrders: TrackedOrder[] = [];
    for (let i = 0; i < SENDING_ORDERS; i++) {
      const ref = newRef(`sending-${i}`);
      sendingOrders.push(await start(ref, normalRequest(ref), 'normal'));
    }
    await sleep(SLOW_SEND_MS / 3);

    // -- v2 current -------------------------------------------------------------------------
    const rolloutOrders = [...orders];
    const atRollout = await snapshot(rolloutOrders);
    const rolloutAt = Date.now();
    await setCurrentVersion(connection, namespace, v2);
    log('rainbow deploy: v2 is current');
    await stream(AFTER_SWITCH_ORDERS, 'after');
    const rolloutDrain = await waitForDrained(connection, namespace, v1, rolloutAt, log);
    const openOnV1 = await openRunsOn(orders, v1.buildId);
    if (rolloutDrain.drainedAfterMs !== undefined && openOnV1 === 0) {
      log(
        `rainbow deploy: v1 drained ${(rolloutDrain.drainedAfterMs / 1000).toFixed(1)} s after the switch; v1 retired`,
      );
      await stopBuild(v1);
    }
    // Only now: a held order let go goes on sending on the version it runs on, and moves at a
    // backstop wake-up (src/orders/lifecycle/hold.workflow.ts), so v1 drained with them still held.
    await admin.operators({ ooredoo: 'up' });

    // Every order of the rollout to its end: reviews decided on v2, QUEUED cards delivered.
    for (const o of longWaits.filter((o) => o.kind === 'queued')) {
      await sandbox.changeTopup(o.request.ref, { status: 'FULFILLED' });
    }
    await decideReviews(
      longWaits.filter((o) => o.kind === 'review'),
      'decided on v2',
    );
    const rolloutEnds = await Promise.all(
      orders.filter((o) => !o.rollback).map((o) => settle(o.handle, SETTLE_TIMEOUT_MS)),
    );

    // -- rollback: v2 current with orders in flight, a fault found, v1 current again ----------
    log('rainbow deploy: rollback — orders on v2, then v1 current again…');
    const rollbackReviews: TrackedOrder[] = [];
    for (let i = 0; i < ROLLBACK_REVIEWS; i++) {
      const ref = newRef(`rb-review-${i}`);
      rollbackReviews.push(
        await start(ref, mobileRequest(ref, sandboxSpecialNumbers.unknownError), 'review', true),
      );
    }
    await Promise.all(
      rollbackReviews.map((o) => waitForView(o.handle, (v) => v.status === 'NEEDS_REVIEW', 60_000)),
    );
    await stream(ROLLBACK_ORDERS, 'rb', true);
    const rollbackOrders = orders.filter((o) => o.rollback);
    // The old build comes back (same bundle, same build ID) if it was retired.
    if (!workers.has(v1.buildId)) await startBuild(v1, v1Code);
    const atRollback = await snapshot(rollbackOrders);
    const rollbackAt = Date.now();
    await setCurrentVersion(connection, namespace, v1);
    log('rainbow deploy: v1 is current again');
    const rollbackDrain = await waitForDrained(connection, namespace, v2, rollbackAt, log);
    const openOnV2 = await openRunsOn(orders, v2.buildId);
    if (rollbackDrain.drainedAfterMs !== undefined && openOnV2 === 0) await stopBuild(v2);
    await decideReviews(rollbackReviews, 'decided on v1 after the rollback');
    const rollbackEnds = await Promise.all(rollbackOrders.map((o) => settle(o.handle, SETTLE_TIMEOUT_MS)));

    // -- the count --------------------------------------------------------------------------
    const ends = [...rolloutEnds, ...rollbackEnds];
    const statuses: Record<string, number> = {};
    for (const view of ends) statuses[view?.status ?? 'OPEN'] = (statuses[view?.status ?? 'OPEN'] ?? 0) + 1;
    const facts = new Map<TrackedOrder, RunFacts[]>();
    for (const o of orders) facts.set(o, await runsOf(client, o));
    const allRuns = [...facts.values()].flat();
    const figures = (version: DeploymentVersion): RainbowBuildFigures => ({
      buildId: version.buildId,
      started: [...facts.values()].filter((runs) => firstBuild(runs) === version.buildId).length,
      finished: [...facts.values()].filter((runs) => runs.at(-1)?.builds.at(-1) === version.buildId).length,
      runs: allRuns.filter((r) => r.builds[0] === version.buildId).length,
    });
    const rampStarted = rampOrders.map((o) => firstBuild(facts.get(o) ?? []));
    const report = await sandbox.report();
    const giftCards = orders.filter((o) => o.request.type === 'gift_card').length;
    const lost = ends.filter((v) => !v || !finalStatuses.includes(v.status)).length;
    return {
      deploymentName,
      taskQueue,
      orders: orders.length,
      builds: { v1: figures(v1), v2: figures(v2) },
      ramp: {
        percent: RAMP_PERCENT,
        orders: rampOrders.length,
        onV2: rampStarted.filter((b) => b === v2.buildId).length,
      },
      rollout: {
        ...switchFigures(atRollout, facts, v1, v2),
        ...rolloutDrain,
        openOnDrained: openOnV1,
      },
      rollback: {
        ...switchFigures(atRollback, facts, v2, v1),
        ...rollbackDrain,
        openOnDrained: openOnV2,
        orders: rollbackOrders.length,
        lost: rollbackEnds.filter((v) => !v || !finalStatuses.includes(v.status)).length,
      },
      nondeterminismErrors: allRuns.reduce((sum, r) => sum + r.nondeterminism, 0),
      workflowTaskFailures: allRuns.reduce((sum, r) => sum + r.failures, 0),
      lost,
      sentTwice:
        Object.values(report.refs).filter((r) => r.attempts > 1).length +
        Math.max(0, report.giftCardOrders.placed - giftCards),
      mixedRuns: allRuns.filter((r) => new Set(r.builds).size > 1).length,
      finalStatuses: statuses,
      durationMs: Date.now() - started,
    };
  } finally {
    await Promise.allSettled([...workers.values()].map((w) => stopBuild(w.version)));
    await connection.close();
    await pool.close();
    await sandbox.close();
  }
}

/**
 * The spec's timings × TIME_SCALE, every long wait waking each WAKE_UP_MS (the QUEUED deadline
 * and the longest hold far beyond the run), the watch after a decision WATCH_MS.
 */
function scaledTimings(): Record<OrderRequest['type'], Partial<OrderTimings>> {
  const scale = (t: OrderTimings): Partial<OrderTimings> => ({
    firstCheckMs: t.firstCheckMs * TIME_SCALE,
    handlingCheckMs: t.handlingCheckMs * TIME_SCALE,
    maxIntervalMs: t.maxIntervalMs * TIME_SCALE,
    deadlineMs: t.deadlineMs * TIME_SCALE,
    settleMs: t.settleMs * TIME_SCALE,
    reviewRecheckMs: WAKE_UP_MS,
    reviewWatchMs: WATCH_MS,
    reviewWatchFirstCheckMs: WAKE_UP_MS,
    queuedRecheckMs: WAKE_UP_MS,
    queuedDeadlineMs: 10 * 60_000,
    maxHoldMs: 10 * 60_000,
  });
  return {
    mobile_topup: scale(defaultOrderTimings.mobile_topup),
    internet_topup: scale(defaultOrderTimings.internet_topup),
    gift_card: scale(defaultOrderTimings.gift_card),
  };
}

/** Where an order stood: from its status search attribute, not a query (a held order's rule, docs "Tests on a loaded machine"). */
interface Standing {
  runId: string;
  phase: Phase;
}

function phaseOf(status: OrderStatus | undefined, running: boolean): Phase {
  if (!running) return 'final';
  switch (status) {
    case undefined:
    case 'ACCEPTED':
      return 'sending';
    case 'SUBMITTED':
    case 'PROCESSING':
      return 'polling';
    case 'HELD':
      return 'held';
    case 'QUEUED':
      return 'queued';
    case 'NEEDS_REVIEW':
    case 'DISPUTED':
      return 'review';
    default:
      // A final status on a running order: the watch after a decision.
      return 'watching';
  }
}

async function standingOf(handle: WorkflowHandle): Promise<Standing & { buildId?: string | undefined }> {
  const described = await handle.describe();
  const status = described.typedSearchAttributes.get(OrderStatusAttribute) as OrderStatus | undefined;
  const running = described.status.name === 'RUNNING';
  const buildId =
    described.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId || undefined;
  return { runId: described.runId, phase: phaseOf(status, running), buildId };
}

async function snapshot(orders: readonly TrackedOrder[]): Promise<Map<TrackedOrder, Standing>> {
  return new Map(await Promise.all(orders.map(async (o) => [o, await standingOf(o.handle)] as const)));
}

/** Until the order's status search attribute satisfies `predicate`. */
async function untilStatus(
  o: TrackedOrder,
  predicate: (status: OrderStatus | undefined) => boolean,
  timeoutMs: number,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const described = await o.handle.describe();
    const status = described.typedSearchAttributes.get(OrderStatusAttribute) as OrderStatus | undefined;
    if (predicate(status)) return;
    if (Date.now() >= until)
      throw new Error(`${o.handle.workflowId}: status ${status} after ${timeoutMs} ms`);
    await sleep(250);
  }
}

/** Orders whose open run is pinned to `buildId`. */
async function openRunsOn(orders: readonly TrackedOrder[], buildId: string): Promise<number> {
  const standings = await Promise.all(orders.map((o) => standingOf(o.handle)));
  return standings.filter((s) => s.phase !== 'final' && s.buildId === buildId).length;
}

/** Until Temporal reports the version drained (bounded); how long that took from `since`. */
async function waitForDrained(
  connection: DeploymentServices,
  namespace: string,
  version: DeploymentVersion,
  since: number,
  log: (line: string) => void,
): Promise<Pick<SwitchFigures, 'drainedAfterMs' | 'drainage' | 'status'>> {
  const until = since + DRAIN_TIMEOUT_MS;
  let said = Date.now();
  for (;;) {
    const described = await describeVersion(connection, namespace, version);
    const drained = described?.status === 'drained' || described?.drainage?.status === 'drained';
    const state = { drainage: described?.drainage, status: described?.status };
    if (drained) return { drainedAfterMs: Date.now() - since, ...state };
    if (Date.now() >= until) return state;
    if (Date.now() - said >= 15_000) {
      said = Date.now();
      log(
        `rainbow deploy: ${versionName(version)} ${described?.status ?? 'unknown'}, drainage ${described?.drainage?.status ?? '-'}…`,
      );
    }
    await sleep(500);
  }
}

/** Forced REFUNDED: these orders are in review on UNKNOWN_ERROR, where a plain REFUNDED waits for the provider. */
async function decideReviews(orders: readonly TrackedOrder[], note: string): Promise<void> {
  await Promise.all(
    orders.map(async (o) => {
      for (let attempt = 1; ; attempt++) {
        try {
          await waitForView(o.handle, (v) => v.status === 'NEEDS_REVIEW', 60_000);
          await o.handle.executeUpdate(decideReviewUpdate, {
            args: [{ decision: 'REFUNDED', operator: 'rainbow-deploy', note, force: true }],
          });
          return;
        } catch (err) {
          // An update that meets the run's continue-as-new onto the other version: the next run takes it.
          if (attempt >= 5) throw err;
          await sleep(500);
        }
      }
    }),
  );
}

async function viewOf(handle: WorkflowHandle): Promise<OrderView | undefined> {
  try {
    return await handle.query<OrderView>('status');
  } catch {
    return undefined;
  }
}

/** The order's final view (following its runs), or its last one if it is not final within `timeoutMs`. */
async function settle(handle: WorkflowHandle, timeoutMs: number): Promise<OrderView | undefined> {
  const result = handle.result() as Promise<OrderView>;
  const timeout = sleep(timeoutMs).then(() => undefined);
  return (await Promise.race([result.catch(() => undefined), timeout])) ?? viewOf(handle);
}

/** Every run of the order, from its first along the continue-as-new chain. */
async function runsOf(client: Client, o: TrackedOrder): Promise<RunFacts[]> {
  const { EventType, WorkflowTaskFailedCause } = temporal.api.enums.v1;
  const runs: RunFacts[] = [];
  let runId: string | undefined = o.firstRunId;
  // A chain longer than this is a loop of continue-as-new: counted as far as this.
  for (let i = 0; runId && i < 50; i++) {
    const history: temporal.api.history.v1.IHistory = await client.workflow
      .getHandle(o.handle.workflowId, runId)
      .fetchHistory();
    const events = history.events ?? [];
    const run: RunFacts = { runId, builds: [], failures: 0, nondeterminism: 0, continuedAsNew: false };
    for (const e of events) {
      if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) {
        run.builds.push(e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId || 'unversioned');
      }
      const failed = e.workflowTaskFailedEventAttributes;
      if (failed) {
        run.failures++;
        if (failed.cause === WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR)
          run.nondeterminism++;
      }
    }
    runs.push(run);
    runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
    run.continuedAsNew = runId !== undefined;
  }
  return runs;
}

function firstBuild(runs: readonly RunFacts[]): string | undefined {
  return runs.find((r) => r.builds.length > 0)?.builds[0];
}

/**
 * The switch from `from` to `to` as the histories tell it: of the orders whose open run at the
 * switch was `from`'s (its first task completed by `from`), by phase; the active ones with a task
 * completed by `to` (must be none); the long waits whose last run is `to`'s.
 */
function switchFigures(
  at: Map<TrackedOrder, Standing>,
  facts: Map<TrackedOrder, RunFacts[]>,
  from: DeploymentVersion,
  to: DeploymentVersion,
): Pick<SwitchFigures, 'from' | 'to' | 'phases' | 'activeMoved' | 'longWaitMoved' | 'longWaits'> {
  const phases: SwitchFigures['phases'] = {};
  let activeMoved = 0;
  let longWaitMoved = 0;
  let longWaits = 0;
  for (const [o, standing] of at) {
    const runs = facts.get(o) ?? [];
    const open = runs.find((r) => r.runId === standing.runId);
    if (!open || open.builds[0] !== from.buildId) continue;
    phases[standing.phase] = (phases[standing.phase] ?? 0) + 1;
    if (standing.phase === 'sending' || standing.phase === 'polling') {
      if (open.builds.includes(to.buildId)) activeMoved++;
    } else if (standing.phase !== 'final') {
      longWaits++;
      if (runs.at(-1)?.builds[0] === to.buildId) longWaitMoved++;
    }
  }
  return { from: versionName(from), to: versionName(to), phases, activeMoved, longWaitMoved, longWaits };
}
