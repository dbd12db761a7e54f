/**
 * The normal run: N orders at concurrency C through the intake API, between two baselines on the
 * same server and in the same run — (a) raw starts of a workflow that does nothing, the ceiling
 * for intake; (b) a workflow with a top-up's shape (send, timer, check, timer, check) and no-op
 * activities, the ceiling for end to end — and, for attribution, the API's own start path
 * (OrderService.submit) called in-process without HTTP.
 */
import type { Client } from '@temporalio/client';
import type { OrderType } from '../../contract/schemas';
import { providerRefFor } from '../../src/orders/provider-ref';
import { orderWorkflowId, workflowTypeByOrderType } from '../../contract/order';
import { webhookDeliveryWorkflowId, type WebhookDeliveryState } from '../../contract/webhooks';
import type { BenchOptions } from './args';
import { meanActions, type BillableActions } from './billable-actions';
import {
  fetchHistories,
  listWorkflows,
  timeBreakdown,
  waitClosed,
  type ClosedWorkflow,
  type HistoryFacts,
  type WaitResult,
} from './histories';
import { sandboxSends, type SendReport } from './sandbox-admin';
import {
  apiSubmitter,
  batchLoop,
  batchSubmitter,
  closedLoop,
  directSubmitter,
  rawStarter,
  type Call,
  type LoadResult,
} from './load';
import { orderAt, refPrefix, workflowIdPrefix } from './orders';
import { runReads, type ReadReport } from './run-read';
import { runWebhookFairness, type WebhookFairnessReport } from './run-webhook-fairness';
import type { PhaseUsage, ProcMonitor } from './proc';
import type { Stack } from './stack';
import { summarize, type Summary } from './stats';

export interface EndToEnd {
  submitted: number;
  completed: number;
  /** Completed workflows per second, from the first submission to the last close. */
  perSecond: number;
  /** Submission (client side) to close (server side), ms. */
  latencyMs: Summary;
  /** Order status (search attribute) or workflow status → count. */
  statuses: Record<string, number>;
}

export interface PhaseReport {
  name: string;
  load: Omit<LoadResult, 'calls'>;
  wait: WaitResult;
  e2e: EndToEnd;
  /** During the submissions only, and until every workflow had closed. */
  usage: { submitting: Record<string, PhaseUsage>; total: Record<string, PhaseUsage> };
}

export interface PerTypeReport {
  type: OrderType;
  orders: number;
  events: Summary;
  checkActivities: Summary;
  checkAttempts: Summary;
  /** Sends per order: the sandbox's attempts per ref (top-ups), the placement's attempts (gift cards). */
  sends: Summary;
  providerCalls: Summary;
  timers: Summary;
  /** Temporal Cloud's billable actions per order (billable-actions.ts), and their mean by kind. */
  actions: Summary;
  actionsByKind?: BillableActions;
  /** Gift cards: orders the sandbox says were placed during the phase (a cross-check of `sends`). */
  sandboxPlaced?: number;
  sendsSource: 'sandbox' | 'history';
  /**
   * Orders whose workflow task timed out before the send (a worker too starved to finish it): they
   * take the recovery path (look the ref up first), whose shape is not the normal order's.
   */
  firstTaskMissed: number;
  /** The normal order's shape: the figures above over the other orders (none if every order missed). */
  normalShape?: { events: Summary; checkActivities: Summary; providerCalls: Summary };
}

export interface NormalPhases {
  rawStart: PhaseReport;
  api: PhaseReport;
  /** The same orders through POST /v1/orders/batch. */
  batch?: PhaseReport;
  direct?: PhaseReport;
  minimal: PhaseReport;
  /** The same orders through POST /v1/orders by a client with a webhook endpoint. */
  webhooks?: PhaseReport;
}

/** What the bench's receiver got from the webhook phase's orders (first round). */
export interface WebhookDeliveryReport {
  orders: number;
  /** Orders whose final status event (fulfilled, refunded, failed) arrived. */
  ordersWithFinalEvent: number;
  /** Orders with a delivery workflow: an event's first try failed (or its endpoint was cooling). */
  handedOff?: number;
  /**
   * Why events went to those delivery workflows, per event: the first try's error (`first try
   * failed: …`), or `not tried` (the endpoint's breaker cooling or full, or the order already behind).
   */
  handOffReasons?: Record<string, number>;
  /** Distinct events (webhook ids) received, and every delivery (a retry is a second one). */
  events: number;
  deliveries: number;
  unverified: number;
  /** From the status change (the event's timestamp) to the receiver, first delivery of each event, ms. */
  latencyMs: Summary;
  /** After the phase's orders had settled, how long until the last final event had arrived. */
  waitedS: number;
}

export interface NormalReport {
  kind: 'normal';
  orders: number;
  concurrency: number;
  timeScale: number;
  rounds: number;
  baselineTimersMs: [number, number];
  /** Each phase pooled over the rounds. */
  phases: NormalPhases;
  /** Each round on its own (only with --rounds > 1). */
  perRound?: NormalPhases[];
  batchSize: number;
  batchConcurrency: number;
  /** A normal order of each type: a few submitted on an idle stack (the probe). */
  perType: PerTypeReport[];
  /** The same, submitted by the client with a webhook endpoint. */
  perTypeWithWebhooks?: PerTypeReport[];
  webhookDeliveries?: WebhookDeliveryReport;
  /** A prompt endpoint's deliveries beside another client's slow one, against idle (issue 22). */
  webhookFairness?: WebhookFairnessReport;
  /** The same figures for the orders of the loaded API phase (timers fire late under load). */
  perTypeUnderLoad: PerTypeReport[];
  /** Where a normal order's time went (probe), a minimal workflow's (probe), an order's under load; ms. */
  time: {
    normal: Record<string, Summary>;
    minimal: Record<string, Summary>;
    underLoad: Record<string, Summary>;
  };
  /** GET /v1/orders/{ref} against a raw describe of the same workflows (absent with --reads 0). */
  reads?: ReadReport;
}

export interface RunContext {
  options: BenchOptions;
  stack: Stack;
  client: Client;
  monitor: ProcMonitor;
  runId: string;
  log: (line: string) => void;
}

interface EndToEndSamples {
  submitted: number;
  /** Submission to close, ms, of each completed workflow. */
  latencies: number[];
  statuses: Record<string, number>;
  /** From the first submission to the last close. */
  spanS: number;
}

function endToEndSamples(
  calls: Call[],
  idOf: (index: number) => string,
  workflows: ClosedWorkflow[],
): EndToEndSamples {
  const byId = new Map(workflows.map((w) => [w.workflowId, w]));
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let firstStart = Infinity;
  let lastClose = -Infinity;
  let submitted = 0;
  for (const call of calls) {
    if (call.outcome !== 'ok') continue;
    submitted++;
    firstStart = Math.min(firstStart, call.startMs);
    const w = byId.get(idOf(call.index));
    const status = w ? (w.orderStatus ?? w.status) : 'NOT_FOUND';
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (w?.status === 'COMPLETED' && w.closeMs !== undefined) {
      latencies.push(w.closeMs - call.startMs);
      lastClose = Math.max(lastClose, w.closeMs);
    }
  }
  return { submitted, latencies, statuses, spanS: (lastClose - firstStart) / 1000 };
}

function endToEndOf(samples: EndToEndSamples): EndToEnd {
  const { submitted, latencies, statuses, spanS } = samples;
  return {
    submitted,
    completed: latencies.length,
    perSecond: spanS > 0 ? latencies.length / spanS : NaN,
    latencyMs: summarize(latencies),
    statuses,
  };
}

export function endToEnd(
  calls: Call[],
  idOf: (index: number) => string,
  workflows: ClosedWorkflow[],
): EndToEnd {
  return endToEndOf(endToEndSamples(calls, idOf, workflows));
}

/** A phase's report and the samples behind it, so rounds can be pooled. */
interface PhaseRun {
  report: PhaseReport;
  intakeLatencies: number[];
  e2e: EndToEndSamples;
}

function addCounts(into: Record<string, number>, from: Record<string, number>): Record<string, number> {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
  return into;
}

function mergeUsage(list: Record<string, PhaseUsage>[]): Record<string, PhaseUsage> {
  const out: Record<string, PhaseUsage> = {};
  for (const usage of list) {
    for (const [name, u] of Object.entries(usage)) {
      const prev = out[name];
      out[name] = prev
        ? {
            cpuSeconds: prev.cpuSeconds + u.cpuSeconds,
            peakRssMb: Math.max(prev.peakRssMb, u.peakRssMb),
            hwmMb: Math.max(prev.hwmMb, u.hwmMb),
          }
        : { ...u };
    }
  }
  return out;
}

/** Rounds of the same phase pooled: sums of counts, time and CPU; percentiles over every sample. */
function pool(runs: PhaseRun[]): PhaseReport {
  if (runs.length === 1) return runs[0]!.report;
  const reports = runs.map((r) => r.report);
  const sum = (pick: (r: PhaseReport) => number) => reports.reduce((n, r) => n + pick(r), 0);
  const ok = sum((r) => r.load.ok);
  const durationS = sum((r) => r.load.durationS);
  const e2e: EndToEndSamples = {
    submitted: runs.reduce((n, r) => n + r.e2e.submitted, 0),
    latencies: runs.flatMap((r) => r.e2e.latencies),
    statuses: runs.reduce((acc, r) => addCounts(acc, r.e2e.statuses), {}),
    spanS: runs.reduce((n, r) => n + r.e2e.spanS, 0),
  };
  return {
    name: `${reports[0]!.name} (${runs.length} rounds pooled)`,
    load: {
      ok,
      durationS,
      perSecond: ok / durationS,
      failures: reports.reduce((acc, r) => addCounts(acc, r.load.failures), {}),
      latencyMs: summarize(runs.flatMap((r) => r.intakeLatencies)),
    },
    wait: {
      closed: sum((r) => r.wait.closed),
      inReview: sum((r) => r.wait.inReview),
      timedOut: reports.some((r) => r.wait.timedOut),
      waitedS: sum((r) => r.wait.waitedS),
    },
    e2e: endToEndOf(e2e),
    usage: {
      submitting: mergeUsage(reports.map((r) => r.usage.submitting)),
      total: mergeUsage(reports.map((r) => r.usage.total)),
    },
  };
}

/** One phase: the submissions, then the wait until they have all closed, with CPU and RSS of each. */
async function phase(
  ctx: RunContext,
  name: string,
  prefix: string,
  submit: ((index: number) => Promise<string>) | { load: () => Promise<LoadResult> },
  idOf: (index: number) => string,
): Promise<PhaseRun> {
  const { options, client, monitor, stack, log } = ctx;
  log(`phase ${name}: ${options.orders} at concurrency ${options.concurrency}…`);
  const total = await monitor.phase();
  const submitting = await monitor.phase();
  if (options.isolateIntake) stack.freezeWorkers(true);
  let result;
  try {
    result = await ('load' in submit
      ? submit.load()
      : closedLoop(options.orders, options.concurrency, submit));
  } finally {
    if (options.isolateIntake) stack.freezeWorkers(false);
  }
  const { calls, ...load } = result;
  const submittingUsage = await submitting.stop();
  const wait = await waitClosed(client, prefix, load.ok, {
    timeoutS: options.waitTimeoutS,
    assertAlive: () => stack.assertAlive(),
    progress: (closed) => log(`  ${closed}/${load.ok} closed…`),
  });
  const totalUsage = await total.stop();
  const failures = Object.entries(load.failures).map(([k, v]) => `${v}× ${k}`);
  log(
    `  ${load.ok} submitted in ${load.durationS.toFixed(1)} s (${load.perSecond.toFixed(1)}/s)` +
      `${failures.length ? `, failures: ${failures.join(', ')}` : ''}; ` +
      `${wait.closed} closed${wait.inReview ? `, ${wait.inReview} in NEEDS_REVIEW` : ''}` +
      `${wait.timedOut ? ' (TIMED OUT waiting)' : ''} after ${wait.waitedS.toFixed(1)} s more`,
  );
  const workflows = await listWorkflows(client, prefix);
  const e2e = endToEndSamples(calls, idOf, workflows);
  return {
    report: {
      name,
      load,
      wait,
      e2e: endToEndOf(e2e),
      usage: { submitting: submittingUsage, total: totalUsage },
    },
    intakeLatencies: calls.filter((c) => c.outcome === 'ok').map((c) => c.endMs - c.startMs),
    e2e,
  };
}

export function perType(
  histories: HistoryFacts[],
  typeOf: Map<string, OrderType>,
  refOf: Map<string, string>,
  sendsBefore: SendReport | undefined,
  sendsAfter: SendReport | undefined,
): PerTypeReport[] {
  const out: PerTypeReport[] = [];
  for (const type of Object.keys(workflowTypeByOrderType) as OrderType[]) {
    const mine = histories.filter((h) => typeOf.get(h.workflowId) === type);
    if (mine.length === 0) continue;
    const fromSandbox = type !== 'gift_card' && sendsAfter !== undefined;
    const sends = mine.map((h) => {
      const ref = refOf.get(h.workflowId)!;
      if (fromSandbox) return sendsAfter.refs[ref]?.attempts ?? 0;
      return Object.entries(h.attempts).reduce(
        (n, [activity, a]) => n + (/^(send|place)/.test(activity) ? a : 0),
        0,
      );
    });
    const normal = mine.flatMap((h, i) => (h.taskTimeoutsBeforeSend === 0 ? [{ h, sends: sends[i]! }] : []));
    out.push({
      type,
      orders: mine.length,
      firstTaskMissed: mine.length - normal.length,
      ...(normal.length > 0 && {
        normalShape: {
          events: summarize(normal.map(({ h }) => h.events)),
          checkActivities: summarize(normal.map(({ h }) => h.checkActivities)),
          providerCalls: summarize(normal.map(({ h, sends }) => sends + h.checkAttempts)),
        },
      }),
      events: summarize(mine.map((h) => h.events)),
      checkActivities: summarize(mine.map((h) => h.checkActivities)),
      checkAttempts: summarize(mine.map((h) => h.checkAttempts)),
      sends: summarize(sends),
      providerCalls: summarize(mine.map((h, i) => sends[i]! + h.checkAttempts)),
      timers: summarize(mine.map((h) => h.timers)),
      actions: summarize(mine.map((h) => h.actions.total)),
      actionsByKind: meanActions(mine.map((h) => h.actions)),
      sendsSource: fromSandbox ? 'sandbox' : 'history',
      ...(type === 'gift_card' && sendsBefore && sendsAfter
        ? { sandboxPlaced: sendsAfter.giftCardOrders.placed - sendsBefore.giftCardOrders.placed }
        : {}),
    });
  }
  return out;
}

/** Histories of a phase's orders (those that closed) → per-type figures. */
async function analyseOrders(
  ctx: RunContext,
  phaseName: string,
  count: number,
  sendsBefore: SendReport | undefined,
  sendsAfter: SendReport | undefined,
  owner?: string,
): Promise<{ perType: PerTypeReport[]; time: Record<string, Summary> }> {
  const { client, runId, options, stack } = ctx;
  const ids: string[] = [];
  const typeOf = new Map<string, OrderType>();
  const refOf = new Map<string, string>();
  for (let i = 0; i < count; i++) {
    const order = orderAt(runId, phaseName, options.mix, i);
    const id = orderWorkflowId(order.ref, owner);
    ids.push(id);
    typeOf.set(id, order.type);
    // The provider counts sends by the ref derived from (client, ref).
    refOf.set(id, providerRefFor(owner ?? stack.clientId, order.ref));
  }
  const closed = new Set(
    (await listWorkflows(client, workflowIdPrefix(runId, phaseName, owner)))
      .filter((w) => w.status !== 'RUNNING')
      .map((w) => w.workflowId),
  );
  const histories = await fetchHistories(
    client,
    ids.filter((id) => closed.has(id)),
    options.historyConcurrency,
  );
  return {
    perType: perType(histories, typeOf, refOf, sendsBefore, sendsAfter),
    time: timeBreakdown(histories),
  };
}

/**
 * A few orders of each type at once on an otherwise idle stack: what a normal order costs when its
 * timers fire on time (under load they fire late, and an order then needs fewer checks).
 */
async function probe(
  ctx: RunContext,
  baselineTimersMs: [number, number],
): Promise<{
  perType: PerTypeReport[];
  perTypeWithWebhooks?: PerTypeReport[];
  time: Record<string, Summary>;
  minimalTime: Record<string, Summary>;
}> {
  const { options, stack, client, runId, log } = ctx;
  const count = PROBE_PER_TYPE * options.mix.length;
  log(`probe: ${count} orders, then ${count} minimal workflows, on the idle stack…`);
  const api = apiSubmitter(stack.apiUrl, stack.apiKey, count);
  const hooks = stack.webhooks;
  let perTypeWithWebhooks: PerTypeReport[] | undefined;
  try {
    if (hooks) {
      // The same orders by the client with an endpoint: what webhooks add to an order's history.
      const hooksApi = apiSubmitter(stack.apiUrl, hooks.apiKey, count);
      try {
        const load = await closedLoop(count, count, (i) =>
          hooksApi.submit(orderAt(runId, 'probehooks', options.mix, i)),
        );
        await waitClosed(client, workflowIdPrefix(runId, 'probehooks', hooks.clientId), load.ok, {
          timeoutS: options.waitTimeoutS,
          assertAlive: () => stack.assertAlive(),
        });
        perTypeWithWebhooks = (
          await analyseOrders(ctx, 'probehooks', count, undefined, undefined, hooks.clientId)
        ).perType;
      } finally {
        await hooksApi.close();
      }
    }
    const before = await sandboxSends(stack.sandbox);
    const load = await closedLoop(count, count, (i) => api.submit(orderAt(runId, 'probe', options.mix, i)));
    await waitClosed(client, workflowIdPrefix(runId, 'probe'), load.ok, {
      timeoutS: options.waitTimeoutS,
      assertAlive: () => stack.assertAlive(),
    });
    const after = await sandboxSends(stack.sandbox);
    const orders = await analyseOrders(ctx, 'probe', count, before, after);

    const start = rawStarter(client, stack.baselineTaskQueue);
    const ids = Array.from({ length: count }, (_, i) => `bench-${runId}-probeshape-${i}`);
    await closedLoop(count, count, (i) => start('benchTopupShapeWorkflow', ids[i]!, baselineTimersMs));
    await waitClosed(client, `bench-${runId}-probeshape-`, count, {
      timeoutS: options.waitTimeoutS,
      assertAlive: () => stack.assertAlive(),
    });
    const minimal = await fetchHistories(client, ids, options.historyConcurrency);
    return { ...orders, perTypeWithWebhooks, minimalTime: timeBreakdown(minimal) };
  } finally {
    await api.close();
  }
}

const PROBE_PER_TYPE = 5;

export async function runNormal(ctx: RunContext): Promise<NormalReport> {
  const { options, stack, client, runId, log } = ctx;
  const { mix, concurrency, timeScale } = options;
  const baselineTimersMs: [number, number] = [Math.round(5_000 * timeScale), Math.round(15_000 * timeScale)];
  const start = rawStarter(client, stack.baselineTaskQueue);
  const api = apiSubmitter(stack.apiUrl, stack.apiKey, concurrency);
  const batches = batchSubmitter(stack.apiUrl, stack.apiKey, options.batchConcurrency);
  const hooks = stack.webhooks;
  const hooksApi = hooks ? apiSubmitter(stack.apiUrl, hooks.apiKey, concurrency) : undefined;
  const direct = directSubmitter(client, stack);
  const baselineId = (phaseName: string) => (i: number) => `bench-${runId}-${phaseName}-${i}`;
  const orderId = (phaseName: string) => (i: number) =>
    orderWorkflowId(orderAt(runId, phaseName, mix, i).ref);

  try {
    if (options.warmup > 0) {
      log(`warm-up: ${options.warmup} orders and baseline workflows…`);
      const n = options.warmup;
      await closedLoop(n, concurrency, (i) => api.submit(orderAt(runId, 'warm', mix, i)));
      await closedLoop(n, concurrency, (i) => direct(orderAt(runId, 'warmdirect', mix, i)));
      await closedLoop(n, concurrency, (i) => start('benchNoopWorkflow', baselineId('warmnoop')(i), []));
      await closedLoop(n, concurrency, (i) =>
        start('benchTopupShapeWorkflow', baselineId('warmshape')(i), baselineTimersMs),
      );
      for (const p of ['warm', 'warmdirect']) {
        await waitClosed(client, workflowIdPrefix(runId, p), n, { timeoutS: options.waitTimeoutS });
      }
      for (const p of ['warmnoop', 'warmshape']) {
        await waitClosed(client, `bench-${runId}-${p}-`, n, { timeoutS: options.waitTimeoutS });
      }
    }

    const normalOrders = await probe(ctx, baselineTimersMs);

    type Kind = 'rawStart' | 'api' | 'batch' | 'direct' | 'minimal' | 'webhooks';
    const runs: Record<Kind, PhaseRun[]> = {
      rawStart: [],
      api: [],
      batch: [],
      direct: [],
      minimal: [],
      webhooks: [],
    };
    let sends: { before?: SendReport; after?: SendReport } = {};
    let webhookDeliveries: WebhookDeliveryReport | undefined;
    const runPhase = async (kind: Kind, round: number): Promise<void> => {
      const tag = (base: string) => (round === 0 ? base : `${base}${round + 1}`);
      switch (kind) {
        case 'rawStart':
          runs.rawStart.push(
            await phase(
              ctx,
              'baseline (a): raw start of a no-op workflow',
              `bench-${runId}-${tag('noop')}-`,
              (i) => start('benchNoopWorkflow', baselineId(tag('noop'))(i), []),
              baselineId(tag('noop')),
            ),
          );
          return;
        case 'api': {
          const before = round === 0 ? await sandboxSends(stack.sandbox) : undefined;
          runs.api.push(
            await phase(
              ctx,
              'ours: POST /v1/orders',
              workflowIdPrefix(runId, tag('api')),
              (i) => api.submit(orderAt(runId, tag('api'), mix, i)),
              orderId(tag('api')),
            ),
          );
          if (round === 0) sends = { before, after: await sandboxSends(stack.sandbox) };
          return;
        }
        case 'batch': {
          const phaseName = tag('batch');
          runs.batch.push(
            await phase(
              ctx,
              `ours: POST /v1/orders/batch (${options.batchSize} per batch, ${options.batchConcurrency} at once)`,
              workflowIdPrefix(runId, phaseName),
              {
                load: () =>
                  batchLoop(options.orders, options.batchSize, options.batchConcurrency, (indices) =>
                    batches.submit(indices.map((i) => orderAt(runId, phaseName, mix, i))),
                  ),
              },
              orderId(phaseName),
            ),
          );
          return;
        }
        case 'webhooks': {
          if (!hooks || !hooksApi) return;
          const phaseName = tag('hooks');
          runs.webhooks.push(
            await phase(
              ctx,
              'ours with webhooks: POST /v1/orders by a client with an endpoint',
              workflowIdPrefix(runId, phaseName, hooks.clientId),
              (i) => hooksApi.submit(orderAt(runId, phaseName, mix, i)),
              (i) => orderWorkflowId(orderAt(runId, phaseName, mix, i).ref, hooks.clientId),
            ),
          );
          if (round === 0) webhookDeliveries = await deliveriesOf(ctx, phaseName, runs.webhooks[0]!.report);
          return;
        }
        case 'direct':
          if (options.skipDirect) return;
          runs.direct.push(
            await phase(
              ctx,
              'ours without HTTP: OrderService.submit in-process',
              workflowIdPrefix(runId, tag('direct')),
              (i) => direct(orderAt(runId, tag('direct'), mix, i)),
              orderId(tag('direct')),
            ),
          );
          return;
        case 'minimal':
          runs.minimal.push(
            await phase(
              ctx,
              'baseline (b): minimal workflow with a top-up shape',
              `bench-${runId}-${tag('shape')}-`,
              (i) => start('benchTopupShapeWorkflow', baselineId(tag('shape'))(i), baselineTimersMs),
              baselineId(tag('shape')),
            ),
          );
          return;
      }
    };
    // ABBA: every other round in reverse, so a drift in the machine's load hits every phase alike.
    const order: Kind[] = ['rawStart', 'api', 'batch', 'direct', 'minimal', 'webhooks'];
    for (let round = 0; round < options.rounds; round++) {
      if (options.rounds > 1) log(`round ${round + 1} of ${options.rounds}`);
      for (const kind of round % 2 === 0 ? order : [...order].reverse()) await runPhase(kind, round);
    }

    // Last: the slow endpoint's deliveries go on retrying in the background.
    const webhookFairness = hooks ? await runWebhookFairness(ctx) : undefined;

    log('reading the orders’ histories…');
    const underLoad = await analyseOrders(ctx, 'api', options.orders, sends.before, sends.after);
    // The API phase's orders, all closed by now: the closed orders the read phase reads.
    const reads =
      options.reads > 0
        ? await runReads(
            ctx,
            Array.from({ length: options.orders }, (_, i) => orderAt(runId, 'api', mix, i).ref),
          )
        : undefined;
    return {
      kind: 'normal',
      orders: options.orders,
      concurrency,
      timeScale,
      rounds: options.rounds,
      baselineTimersMs,
      batchSize: options.batchSize,
      batchConcurrency: options.batchConcurrency,
      phases: {
        rawStart: pool(runs.rawStart),
        api: pool(runs.api),
        batch: pool(runs.batch),
        direct: runs.direct.length ? pool(runs.direct) : undefined,
        minimal: pool(runs.minimal),
        webhooks: runs.webhooks.length ? pool(runs.webhooks) : undefined,
      },
      webhookDeliveries,
      webhookFairness,
      perRound:
        options.rounds > 1
          ? Array.from({ length: options.rounds }, (_, r) => ({
              rawStart: runs.rawStart[r]!.report,
              api: runs.api[r]!.report,
              batch: runs.batch[r]?.report,
              direct: runs.direct[r]?.report,
              minimal: runs.minimal[r]!.report,
              webhooks: runs.webhooks[r]?.report,
            }))
          : undefined,
      perType: normalOrders.perType,
      perTypeWithWebhooks: normalOrders.perTypeWithWebhooks,
      perTypeUnderLoad: underLoad.perType,
      time: { normal: normalOrders.time, minimal: normalOrders.minimalTime, underLoad: underLoad.time },
      reads,
    };
  } finally {
    await Promise.all([api.close(), batches.close(), hooksApi?.close()]);
  }
}

const FINAL_EVENTS = new Set(['order.fulfilled', 'order.refunded', 'order.failed']);

/**
 * What the receiver got for a webhook phase's orders: waits (bounded) until every order that
 * settled has had its final event delivered, then reads latency from the status change (the
 * event's timestamp, the workflow's clock) to arrival (the receiver's clock; one machine).
 */
async function deliveriesOf(
  ctx: RunContext,
  phaseName: string,
  report: PhaseReport,
): Promise<WebhookDeliveryReport> {
  const { stack, runId, log } = ctx;
  const receiver = stack.webhooks!.receiver;
  const prefix = refPrefix(runId, phaseName);
  const mine = () => receiver.deliveries.filter((d) => d.message?.data.ref.startsWith(prefix));
  const settled = report.wait.closed;
  const withFinal = () =>
    new Set(
      mine()
        .filter((d) => FINAL_EVENTS.has(d.message!.type))
        .map((d) => d.message!.data.ref),
    ).size;
  const t0 = Date.now();
  while (withFinal() < settled && Date.now() - t0 < 120_000) await new Promise((r) => setTimeout(r, 250));
  const waitedS = (Date.now() - t0) / 1000;
  const first = new Map<string, number>();
  for (const d of mine()) {
    if (!first.has(d.id)) first.set(d.id, d.receivedAt - Date.parse(d.message!.timestamp));
  }
  // Orders whose announcement handed an event to a delivery workflow (the first try did not settle it).
  const handedOffWorkflows = await listWorkflows(
    ctx.client,
    webhookDeliveryWorkflowId(workflowIdPrefix(runId, phaseName, stack.webhooks!.clientId)),
  );
  const handOffReasons = await handOffReasonsOf(ctx, handedOffWorkflows);
  const result: WebhookDeliveryReport = {
    orders: report.load.ok,
    handedOff: handedOffWorkflows.length,
    handOffReasons,
    ordersWithFinalEvent: withFinal(),
    events: first.size,
    deliveries: mine().length,
    // Over the whole run: a delivery that does not verify has no order to attribute it to.
    unverified: receiver.deliveries.filter((d) => !d.verified).length,
    latencyMs: summarize([...first.values()]),
    waitedS,
  };
  log(`  webhooks handed off: ${JSON.stringify(handOffReasons)}`);
  log(
    `  webhooks: ${result.events} events to ${result.ordersWithFinalEvent}/${settled} orders' final status, ` +
      `p50 ${result.latencyMs.p50} ms after the change`,
  );
  return result;
}

/** Per handed-off event: the first try's error with digits blanked (one key per kind), or `not tried`. */
async function handOffReasonsOf(
  ctx: RunContext,
  workflows: { workflowId: string; status: string }[],
): Promise<Record<string, number>> {
  const reasons: Record<string, number> = {};
  for (const w of workflows) {
    if (w.status !== 'COMPLETED') {
      reasons[`delivery workflow ${w.status}`] = (reasons[`delivery workflow ${w.status}`] ?? 0) + 1;
      continue;
    }
    const state = (await ctx.client.workflow.getHandle(w.workflowId).result()) as WebhookDeliveryState;
    const behind = new Set<string>();
    for (const { event } of state.events) {
      for (const target of event.targets) {
        const tried = event.directAttempts?.find((a) => a.endpoint === target);
        // Once an event of an order went to the workflow, the order's later events follow it there.
        const key = behind.has(target)
          ? 'after an earlier hand-off of its order'
          : tried
            ? `first try failed: ${tried.error.replace(/\d+/g, 'N')}`
            : `not tried: ${event.untried?.find((u) => u.endpoint === target)?.reason ?? 'unknown'}`;
        behind.add(target);
        reasons[key] = (reasons[key] ?? 0) + 1;
      }
    }
  }
  return reasons;
}
