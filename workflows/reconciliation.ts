/**
 * The nightly reconciliation (docs/operators.md "Statements and reconciliation"): one day of our
 * final orders against the provider's own ledger. The matching is one activity (the ledger and the
 * orders never enter the history, only what does not match); each mismatch is re-checked at the
 * provider, and an order the provider now contradicts is reopened as DISPUTED by that activity.
 *
 * Behind every client's live orders: every activity carries the lowest priority key and a fairness
 * key of its own (contract/reconciliation.ts RECONCILIATION_PRIORITY), on the orders' task queue,
 * so the worker's provider rate limit counts its calls with theirs.
 *
 * `scheduledReconciliationWorkflow` is what the Schedule starts: it works out yesterday in the
 * configured zone and runs the day as a child under the day's own ID (`reconciliation:<date>`),
 * which GET /v1/reconciliations/{date} reads. A long day continues as new with what is left to
 * re-check. Deterministic: all I/O in activities/reconciliation.ts.
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
import type { ReconciliationActivities } from '../activities/reconciliation';
import { metricCatalog } from '../contract/metrics';
import {
  RECONCILIATION_PRIORITY,
  reconciliationReportQuery,
  reconciliationWorkflowId,
  type Mismatch,
  type ReconcileDayInput,
  type ReconciliationItem,
  type ReconciliationReport,
  type ScheduledReconciliationInput,
} from '../contract/reconciliation';

const DEFAULT_LOOKBACK_MS = 24 * 60 * 60_000;
const DEFAULT_CONCURRENCY = 4;
const DEFAULT_RECHECKS_PER_RUN = 200;
/** Above a ledger page's and a visibility page's longest wait (the provider client's HTTP timeouts). */
const DEFAULT_HEARTBEAT_TIMEOUT_MS = 60_000;

const { reconciliationDayBefore } = proxyActivities<ReconciliationActivities>({
  startToCloseTimeout: 30_000,
  priority: RECONCILIATION_PRIORITY,
});
/** The matching: a long day is long to read; the heartbeat tells a killed worker's attempt apart quickly. */
function matcher(heartbeatTimeoutMs = DEFAULT_HEARTBEAT_TIMEOUT_MS) {
  return proxyActivities<ReconciliationActivities>({
    startToCloseTimeout: 60 * 60_000,
    heartbeatTimeout: heartbeatTimeoutMs,
    retry: { initialInterval: 1_000, maximumInterval: 5 * 60_000, maximumAttempts: 10 },
    priority: RECONCILIATION_PRIORITY,
  }).findReconciliationMismatches;
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

export async function reconcileDayWorkflow(input: ReconcileDayInput): Promise<ReconciliationReport> {
  let report: ReconciliationReport = input.continued?.report ?? {
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
    unexplained: [],
    ledgerRows: 0,
    items: [],
    startedAt: new Date().toISOString(),
  };
  setHandler(reconciliationReportQuery, () => report);
  let pending = input.continued?.pending;
  if (!pending) {
    // The orders of the reconciliation's own task queue: a deployment's orders share one.
    const { from, to, lookbackMs } = input;
    const found = await matcher(input.heartbeatTimeoutMs)({
      from,
      to,
      lookbackMs,
      taskQueue: workflowInfo().taskQueue,
    });
    report = {
      ...report,
      orders: found.orders,
      matched: found.matched,
      ledgerRows: found.ledgerRows,
      unexplained: found.unexplained,
    };
    count('matched', found.matched);
    count('unexplained', found.unexplained.length);
    pending = found.mismatches;
  }

  const perRun = Math.max(1, input.recheckPerRun ?? DEFAULT_RECHECKS_PER_RUN);
  const thisRun = pending.slice(0, perRun);
  let next = 0;
  const lane = async () => {
    while (next < thisRun.length) {
      const item = await recheck(thisRun[next++]!, input.date);
      report.checked++;
      report[item.outcome]++;
      report.items.push(item);
      count(item.outcome, 1);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, input.concurrency ?? DEFAULT_CONCURRENCY) }, lane));

  const rest = pending.slice(perRun);
  if (rest.length > 0) {
    // A long day: the next run goes on with what is left, the history stays short.
    const { continued: _continued, ...same } = input;
    await continueAsNew<typeof reconcileDayWorkflow>({ ...same, continued: { pending: rest, report } });
  }
  report.finishedAt = new Date().toISOString();
  return report;
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
      status: mismatch.status,
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
