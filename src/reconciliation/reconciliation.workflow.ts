/**
 * The nightly reconciliation (docs/operators.md "Statements and reconciliation"): one day of our
 * final orders against the provider's own ledger. The matching is an activity that hands over what
 * does not match one chunk at a time, by a cursor (the ledger and the orders never enter the
 * history); each mismatch is re-checked at the provider, and an order the provider now contradicts
 * is reopened as DISPUTED by that activity. A ledger row no order explains is checked by its own id.
 *
 * Behind every client's live orders: every activity carries the lowest priority key and a fairness
 * key of its own (contract/reconciliation.ts RECONCILIATION_PRIORITY), on the orders' task queue,
 * so the worker's provider rate limit counts its calls with theirs.
 *
 * `scheduledReconciliationWorkflow` is what the Schedule starts: it works out yesterday in the
 * configured zone and runs the day as a child under the day's own ID (`reconciliation:<date>`),
 * which GET /v1/reconciliations/{date} reads (each run of a day is a run of that ID, readable by its
 * run ID). A long day continues as new with the rest of its chunk, the cursor and the report, all
 * bounded. Deterministic: all I/O in src/reconciliation/reconciliation.activities.ts.
 */
import {
  ActivityFailure,
  continueAsNew,
  executeChild,
  proxyActivities,
  setHandler,
  workflowInfo,
  metricMeter,
  isCancellation,
} from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { ReconciliationActivities } from './reconciliation.activities';
import { metricCatalog } from '../../contract/metrics';
import {
  RECONCILIATION_PRIORITY,
  reconciliationReportQuery,
  reconciliationWorkflowId,
  REPORT_ITEMS_KEPT,
  type ItemOutcome,
  type ReconciliationContinuation,
  type Mismatch,
  type ReconcileDayInput,
  type ReconciliationItem,
  type ReconciliationReport,
  type ScheduledReconciliationInput,
} from '../../contract/reconciliation';

const DEFAULT_LOOKBACK_MS = 24 * 60 * 60_000;
const DEFAULT_CONCURRENCY = 4;
const DEFAULT_RECHECKS_PER_RUN = 200;
/**
 * A chunk of the largest mismatches is about 650 kB (test/reconciliation/reconcile-chunks.test.ts), and
 * a continue-as-new carries at most that beside the bounded report: well under a payload's 2 MB.
 */
const DEFAULT_MISMATCHES_PER_CHUNK = 500;
/** Above a ledger page's and a visibility page's longest wait (the provider client's HTTP timeouts). */
const DEFAULT_HEARTBEAT_TIMEOUT_MS = 60_000;

const { reconciliationDayBefore } = proxyActivities<ReconciliationActivities>({
  startToCloseTimeout: 30_000,
  priority: RECONCILIATION_PRIORITY,
});
/** The matching: a long day is long to read; the heartbeat tells a killed worker's attempt apart quickly. */
function matchers(heartbeatTimeoutMs = DEFAULT_HEARTBEAT_TIMEOUT_MS) {
  return proxyActivities<ReconciliationActivities>({
    startToCloseTimeout: 60 * 60_000,
    heartbeatTimeout: heartbeatTimeoutMs,
    retry: { initialInterval: 1_000, maximumInterval: 5 * 60_000, maximumAttempts: 10 },
    priority: RECONCILIATION_PRIORITY,
  });
}
const { recheckReconciled } = proxyActivities<ReconciliationActivities>({
  startToCloseTimeout: 60_000,
  retry: { initialInterval: 2_000, maximumInterval: 60_000, maximumAttempts: 5 },
  priority: RECONCILIATION_PRIORITY,
});

/** Set by Temporal on every workflow a Schedule starts. */
const ScheduledStartTimeAttribute = defineSearchAttributeKey(
  'TemporalScheduledStartTime',
  SearchAttributeType.DATETIME,
);

export async function scheduledReconciliationWorkflow(
  input: ScheduledReconciliationInput,
): Promise<ReconciliationReport> {
  // The time the Schedule meant this run for: a run caught up after an outage reconciles the day
  // before its own slot, not the day before it happened to start.
  const scheduledFor =
    workflowInfo().typedSearchAttributes.get(ScheduledStartTimeAttribute) ?? workflowInfo().startTime;
  const day = await reconciliationDayBefore({
    at: scheduledFor.toISOString(),
    timeZone: input.timeZone,
  });
  return executeChild(reconcileDayWorkflow, {
    workflowId: reconciliationWorkflowId(day.date),
    // A day run again (by hand, or the Schedule's catch-up) replaces its report.
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    args: [{ ...day, lookbackMs: input.lookbackMs ?? DEFAULT_LOOKBACK_MS }],
  });
}

function newReport(input: ReconcileDayInput): ReconciliationReport {
  return {
    date: input.date,
    timeZone: input.timeZone,
    from: input.from,
    to: input.to,
    orders: 0,
    matched: 0,
    checked: 0,
    agreed: 0,
    disputed: 0,
    unreachable: 0,
    open: 0,
    foreign: 0,
    unexplained: [],
    unexplainedRows: 0,
    ledgerRows: 0,
    items: [],
    itemsOmitted: 0,
    startedAt: new Date().toISOString(),
  };
}

/**
 * One day: the matching hands over its mismatches a chunk at a time by a cursor, each is
 * re-checked (a ledger row no order explains by its own id), and the report keeps counts and only
 * the items that are not agreed. A long day continues as new with the rest of its chunk, the cursor
 * and the report.
 */
export async function reconcileDayWorkflow(input: ReconcileDayInput): Promise<ReconciliationReport> {
  const { continued } = input;
  const report = continued?.report ?? newReport(input);
  setHandler(reconciliationReportQuery, () => report);
  const limit = Math.max(1, input.mismatchesPerChunk ?? DEFAULT_MISMATCHES_PER_CHUNK);
  const match = (after: string | undefined) =>
    matchers(input.heartbeatTimeoutMs).matchReconciliationChunk({
      from: input.from,
      to: input.to,
      lookbackMs: input.lookbackMs,
      // The orders of the reconciliation's own task queue: a deployment's orders share one.
      taskQueue: workflowInfo().taskQueue,
      limit,
      ...(after !== undefined && { after }),
    });
  let pending: Mismatch[];
  /** Where the next chunk starts; undefined once the last chunk was handed over. */
  let after: string | undefined;
  if (continued) {
    pending = continued.chunk;
    after = continued.after;
  } else {
    const found = await match(undefined);
    // The day's counts are the first pass's: later chunks are read after re-checks reopened orders.
    Object.assign(report, {
      orders: found.orders,
      matched: found.matched,
      ledgerRows: found.ledgerRows,
      unexplained: found.unexplained,
      unexplainedRows: found.unexplainedRows,
    });
    count('matched', found.matched);
    count('unexplained', found.unexplainedRows);
    pending = found.mismatches;
    after = found.more ? found.mismatches.at(-1)?.key : undefined;
  }

  const concurrency = Math.max(1, input.concurrency ?? DEFAULT_CONCURRENCY);
  let budget = Math.max(1, input.recheckPerRun ?? DEFAULT_RECHECKS_PER_RUN);
  for (;;) {
    const thisRun = pending.slice(0, budget);
    pending = pending.slice(thisRun.length);
    budget -= thisRun.length;
    let next = 0;
    const lane = async () => {
      while (next < thisRun.length) {
        record(report, await recheck(thisRun[next++]!, input.date));
      }
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
    if (pending.length > 0 || after === undefined || budget === 0) break;
    const found = await match(after);
    pending = found.mismatches;
    after = found.more ? found.mismatches.at(-1)?.key : undefined;
  }

  if (pending.length > 0 || after !== undefined) {
    // A long day: the next run goes on with the rest of the chunk and the cursor, the history stays short.
    const { continued: _continued, ...same } = input;
    const next: ReconciliationContinuation = {
      chunk: pending,
      ...(after !== undefined && { after }),
      report,
    };
    await continueAsNew<typeof reconcileDayWorkflow>({ ...same, continued: next });
  }
  report.finishedAt = new Date().toISOString();
  return report;
}

/** Counts a re-check; keeps its item only when it is not agreed, and only so many. */
function record(report: ReconciliationReport, item: ReconciliationItem): void {
  report.checked++;
  countOutcome(report, item.outcome);
  count(item.outcome, 1);
  if (item.outcome === 'agreed') return;
  if (report.items.length < REPORT_ITEMS_KEPT) report.items.push(item);
  else report.itemsOmitted = (report.itemsOmitted ?? 0) + 1;
}

/**
 * One re-check's outcome in the report's counts. The outcomes added later have optional counts
 * (`foreign`, `secondTopUps`), absent from the reports of runs that never met one, which the API
 * still reads.
 */
function countOutcome(report: ReconciliationReport, outcome: ItemOutcome): void {
  if (outcome === 'foreign') report.foreign = (report.foreign ?? 0) + 1;
  else if (outcome === 'second-top-up') report.secondTopUps = (report.secondTopUps ?? 0) + 1;
  else report[outcome]++;
}

/** One mismatch re-checked; a check that kept failing is reported unreachable, not fatal to the day. */
async function recheck(mismatch: Mismatch, date: string): Promise<ReconciliationItem> {
  try {
    return await recheckReconciled({ mismatch, date });
  } catch (err) {
    if (isCancellation(err)) throw err;
    const cause = err instanceof ActivityFailure && err.cause ? err.cause.message : String(err);
    return {
      kind: mismatch.kind,
      ref: mismatch.ref,
      ...(mismatch.client !== undefined && { client: mismatch.client }),
      workflowId: mismatch.workflowId,
      ...(mismatch.status !== undefined && { status: mismatch.status }),
      ...(mismatch.kind === 'unexplained-row' && { row: mismatch.rows[0] }),
      outcome: 'unreachable',
      evidence: `the re-check kept failing: ${cause}`,
    };
  }
}

let outcomes: ReturnType<typeof metricMeter.createCounter> | undefined;

/** reconciliation_orders_total{outcome}: the SDK drops it while replaying, so each is counted once. */
function count(outcome: string, n: number): void {
  if (n <= 0) return;
  outcomes ??= metricMeter.createCounter(
    metricCatalog.reconciliationOrders.name,
    undefined,
    metricCatalog.reconciliationOrders.help,
  );
  outcomes.add(n, { outcome });
}
