/**
 * The reconciliation under another client's flood (`--noisy M --noisy-reconcile N`,
 * docs/benchmarks.md "The other runs"): a day of N orders of client A, closed, and
 * N/10 debits no order explains (re-checked at the provider); the
 * reconciliation of that day alone; then client B's trickle (one order every 2 s) on the idle
 * stack, during a flood of M orders by A, and during another flood of M with the reconciliation of
 * the day running (priority 5, fairness key `reconciliation`). For B: acceptance → sent and → final;
 * for the reconciliation: its duration alone and under the flood, and what it read.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import {
  RECONCILE_DAY_WORKFLOW,
  reconciliationWorkflowId,
  type ReconcileDayInput,
  type ReconciliationReport,
} from '../../contract/reconciliation';
import { Pool } from 'undici';
import { loadConfig } from '../../src/config';
import { ProviderClient } from '../../src/provider/client';
import { waitClosed } from './histories';
import { apiSubmitter, batchSubmitter } from './load';
import { orderAt, workflowIdPrefix } from './orders';
import { figures, trickle, type TrickleFigures } from './run-noisy';
import type { RunContext } from './run-normal';

const B_EVERY_MS = 2_000;
const BATCH = 500;
const IDLE_MS = 20_000;
/**
 * Debits no order explains in the day, sent with our key outside the service (one per 10 orders):
 * each is re-checked at the provider by its id, a call counted by the worker's rate limit with the
 * live orders' — and the same in both reconciliations, which change nothing.
 */
const STRAYS_PER_ORDER = 0.1;

/** `n` top-ups sent straight to the sandbox under refs no order has. */
async function sendStrays(sandboxUrl: string, runId: string, n: number): Promise<void> {
  const pool = new Pool(new URL(sandboxUrl).origin, { connections: 4 });
  const provider = new ProviderClient({
    baseUrl: sandboxUrl,
    apiKey: loadConfig({}).SANDBOX_KEY,
    dispatcher: pool,
    headersTimeoutMs: 10_000,
    bodyTimeoutMs: 10_000,
  });
  try {
    for (let i = 0; i < n; i++)
      await provider.sendMobileTopup({
        plan_code: 'PREPAID_MOBILIS',
        MSSIDN: '0550000000',
        amount: 100,
        ref: `stray-${runId}-${i}`,
      });
  } finally {
    await pool.close();
  }
}

export interface ReconciliationRun {
  seconds: number;
  orders: number;
  matched: number;
  ledgerRows: number;
  checked: number;
  foreign: number;
}

export interface NoisyReconcileReport {
  kind: 'noisy-reconcile';
  day: number;
  flood: number;
  dayClosedS: number;
  reconcileAlone: ReconciliationRun;
  idle: TrickleFigures;
  flooded: TrickleFigures;
  floodedReconciling: TrickleFigures;
  reconcileFlooded: ReconciliationRun;
  floodClosedS: number;
  floodReconcilingClosedS: number;
}

async function reconcile(
  client: Client,
  taskQueue: string,
  from: number,
  to: number,
): Promise<ReconciliationRun> {
  const input: ReconcileDayInput = {
    date: '2000-01-01',
    timeZone: 'UTC',
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    lookbackMs: 0,
  };
  const t0 = Date.now();
  const report = (await client.workflow.execute(RECONCILE_DAY_WORKFLOW, {
    workflowId: reconciliationWorkflowId(`bench-${randomUUID()}`),
    taskQueue,
    args: [input],
  })) as ReconciliationReport;
  return {
    seconds: (Date.now() - t0) / 1000,
    orders: report.orders,
    matched: report.matched,
    ledgerRows: report.ledgerRows,
    checked: report.checked,
    foreign: report.foreign ?? 0,
  };
}

export async function runNoisyReconcile(ctx: RunContext): Promise<NoisyReconcileReport> {
  const { options, stack, runId, log, client } = ctx;
  const another = stack.clients?.another;
  const taskQueue = stack.taskQueue;
  const sandboxUrl = stack.sandbox?.url;
  if (!another || !taskQueue || !sandboxUrl)
    throw new Error('--noisy-reconcile needs the stack the bench starts');
  const day = options.noisyReconcile ?? 2_000;
  const flood = options.noisy ?? 1_000;
  const b = apiSubmitter(stack.apiUrl, another.apiKey, 4);
  const batches = batchSubmitter(stack.apiUrl, stack.apiKey, 1);
  const wait = { timeoutS: options.waitTimeoutS, assertAlive: stack.assertAlive, intervalMs: 500 };
  const submitA = async (phase: string, n: number) => {
    for (let start = 0; start < n; start += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, n - start) }, (_, i) =>
        orderAt(runId, phase, options.mix, start + i),
      );
      const failed = (await batches.submit(batch)).filter((o) => o !== 'ok').length;
      if (failed) log(`${phase}: ${failed} not accepted`);
    }
  };
  const trickleB = (phase: string, until: () => boolean) =>
    trickle(
      async (i) => {
        const outcome = await b.submit(orderAt(runId, phase, options.mix, i));
        if (outcome !== 'ok') log(`${phase} #${i}: ${outcome}`);
        return outcome;
      },
      B_EVERY_MS,
      until,
    );
  const bIds = (phase: string) => workflowIdPrefix(runId, phase, another.id);

  try {
    log(`noisy-reconcile: a day of ${day} orders`);
    const dayFrom = Date.now();
    await submitA('day', day);
    await sendStrays(sandboxUrl, runId, Math.round(day * STRAYS_PER_ORDER));
    await waitClosed(client, workflowIdPrefix(runId, 'day'), day, wait);
    const dayTo = Date.now();
    const dayClosedS = (dayTo - dayFrom) / 1000;
    log(`noisy-reconcile: the day closed in ${dayClosedS.toFixed(1)} s; reconciling it alone`);
    const reconcileAlone = await reconcile(client, taskQueue, dayFrom, dayTo);

    log('noisy-reconcile: idle stack, B every 2 s for 20 s');
    const idleEnd = Date.now() + IDLE_MS;
    const idleB = await trickleB('idle-b', () => Date.now() >= idleEnd);
    await waitClosed(client, bIds('idle-b'), idleB, wait);

    const floodPhase = async (phase: string, withReconciliation: boolean) => {
      log(`noisy-reconcile: A floods ${flood}${withReconciliation ? ', the day reconciled meanwhile' : ''}`);
      const t0 = Date.now();
      let accepted = false;
      let reconciled: ReconciliationRun | undefined;
      const floodRun = submitA(`${phase}-flood`, flood).then(() => (accepted = true));
      const reconciliation = withReconciliation
        ? reconcile(client, taskQueue, dayFrom, dayTo).then((r) => (reconciled = r))
        : Promise.resolve(undefined);
      const trickled = await trickleB(
        `${phase}-b`,
        () => accepted && Date.now() - t0 >= 20_000 && (!withReconciliation || reconciled !== undefined),
      );
      await Promise.all([floodRun, reconciliation]);
      await waitClosed(client, workflowIdPrefix(runId, `${phase}-flood`), flood, wait);
      const closedS = (Date.now() - t0) / 1000;
      await waitClosed(client, bIds(`${phase}-b`), trickled, wait);
      return { trickled, closedS, reconciled };
    };
    const plain = await floodPhase('flood', false);
    const withRec = await floodPhase('floodrec', true);
    return {
      kind: 'noisy-reconcile',
      day,
      flood,
      dayClosedS,
      reconcileAlone,
      idle: await figures(ctx, bIds('idle-b'), idleB),
      flooded: await figures(ctx, bIds('flood-b'), plain.trickled),
      floodedReconciling: await figures(ctx, bIds('floodrec-b'), withRec.trickled),
      reconcileFlooded: withRec.reconciled!,
      floodClosedS: plain.closedS,
      floodReconcilingClosedS: withRec.closedS,
    };
  } finally {
    await Promise.allSettled([b.close(), batches.close()]);
  }
}

const s = (ms: number) => (ms / 1000).toFixed(2);
const row = (label: string, f: TrickleFigures) =>
  `${label.padEnd(40)} ${String(f.orders).padStart(3)}  sent p50/p99/max ${s(f.sentMs.p50)}/${s(f.sentMs.p99)}/${s(f.sentMs.max)} s` +
  `  final p50/p99/max ${s(f.finalMs.p50)}/${s(f.finalMs.p99)}/${s(f.finalMs.max)} s`;
const rec = (label: string, r: ReconciliationRun) =>
  `${label.padEnd(40)} ${r.seconds.toFixed(1)} s (orders ${r.orders}, matched ${r.matched}, ledger rows ${r.ledgerRows}, re-checked ${r.checked}, foreign ${r.foreign})`;

export function formatNoisyReconcile(r: NoisyReconcileReport, header: string[]): string {
  return [
    ...header,
    '',
    `a day of ${r.day} orders (closed in ${r.dayClosedS.toFixed(1)} s); A floods ${r.flood} orders (batches of ${BATCH})`,
    rec('  the reconciliation, alone', r.reconcileAlone),
    rec("  the reconciliation, during A's flood", r.reconcileFlooded),
    row('  B, idle stack', r.idle),
    row("  B, during A's flood", r.flooded),
    row("  B, during A's flood + the reconciliation", r.floodedReconciling),
    `  A's flood all closed in ${r.floodClosedS.toFixed(1)} s; with the reconciliation ${r.floodReconcilingClosedS.toFixed(1)} s`,
  ].join('\n');
}
