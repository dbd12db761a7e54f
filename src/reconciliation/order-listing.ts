/**
 * The orders a reconciliation matches: the final runs of the task queue's orders completed in the
 * day (and its look-back), each with its view, read a few at once; every heartbeat carries the
 * ledger read so far (a retry's cursor, src/reconciliation/ledger-reader.ts).
 */
import { heartbeat, log } from '@temporalio/activity';
import type { Client, WorkflowExecutionDescription, WorkflowHandle } from '@temporalio/client';
import {
  CompletedAtAttribute,
  finalStatuses,
  OrderStatusAttribute,
  parseOrderWorkflowId,
  statusQuery,
  workflowTypeByOrderType,
  type OrderStatus,
  type OrderView,
} from '../../contract/order';
import type { ReconcileDayInput } from '../../contract/reconciliation';
import type { LedgerProgress, MatchProgress } from './ledger-reader';

/** The order reads' heartbeats carry the ledger: sent this often at most. */
const ORDERS_HEARTBEAT_EVERY_MS = 1_000;
/** Orders' results read at once while matching. */
const READS_AT_ONCE = 8;
/** Every final status: a cancelled order the provider debited anyway is money lost too. */
const reconciledStatuses: readonly OrderStatus[] = finalStatuses;

/** The day, and the task queue whose orders are reconciled (the reconciliation's own). */
export type MatchInput = Pick<ReconcileDayInput, 'from' | 'to' | 'lookbackMs'> & { taskQueue: string };

export interface ListedOrder {
  workflowId: string;
  runId: string;
  ref: string;
  client?: string;
  view: OrderView;
  /** Completed in the day itself (not only in the look-back). */
  inDay: boolean;
  /** Not the order's latest run: its rows are explained, the order is not checked by it. */
  superseded: boolean;
  /** Superseded by a run that is open now (a dispute, a resumed run): reported as it stands. */
  reopened: boolean;
}

/**
 * A listed run's view: a completed run's result is its last event (one read, no replay); a running
 * one (a watch after a decision) answers the query; one closed otherwise (terminated) only by a
 * replay, which may fail.
 */
async function readView(run: WorkflowHandle, status: string): Promise<OrderView | undefined> {
  if (status === 'COMPLETED') return (await run.result()) as OrderView;
  return run.query(statusQuery).catch(() => undefined);
}

export async function listOrders(
  temporal: Client,
  input: MatchInput,
  from: string,
  ledger: LedgerProgress,
): Promise<ListedOrder[]> {
  // Every heartbeat carries the ledger read (and so keeps it for a retry), at most every so often.
  let lastBeat = 0;
  const beat = (progress: Omit<MatchProgress, 'ledger'>) => {
    if (Date.now() - lastBeat < ORDERS_HEARTBEAT_EVERY_MS) return;
    lastBeat = Date.now();
    heartbeat({ ...progress, ledger } satisfies MatchProgress);
  };
  const types = Object.values(workflowTypeByOrderType).map((t) => `'${t}'`);
  const statuses = reconciledStatuses.map((s) => `'${s}'`);
  const query =
    `TaskQueue = '${input.taskQueue}' AND WorkflowType IN (${types.join(', ')}) ` +
    `AND ${OrderStatusAttribute.name} IN (${statuses.join(', ')}) ` +
    `AND ${CompletedAtAttribute.name} >= '${from}' AND ${CompletedAtAttribute.name} < '${input.to}' ` +
    `AND ExecutionStatus != 'ContinuedAsNew'`;
  const listed: { workflowId: string; runId: string; status: string; completedAt?: Date }[] = [];
  for await (const execution of temporal.workflow.list({ query })) {
    listed.push({
      workflowId: execution.workflowId,
      runId: execution.runId,
      status: execution.status.name,
      completedAt: execution.typedSearchAttributes.get(CompletedAtAttribute),
    });
    beat({ phase: 'orders', listed: listed.length });
  }
  const orders: (ListedOrder | undefined)[] = new Array<ListedOrder | undefined>(listed.length);
  let next = 0;
  const dayFrom = Date.parse(input.from);
  // One describe per order, however many of its runs are listed.
  const latestOf = new Map<string, Promise<WorkflowExecutionDescription>>();
  const describeLatest = (workflowId: string) => {
    const found = latestOf.get(workflowId) ?? temporal.workflow.getHandle(workflowId).describe();
    latestOf.set(workflowId, found);
    return found;
  };
  const lane = async () => {
    while (next < listed.length) {
      const index = next++;
      const { workflowId, runId, status, completedAt } = listed[index]!;
      const run = temporal.workflow.getHandle(workflowId, runId);
      // A later run (reopened as DISPUTED, resumed by the sweep) speaks for the order now.
      const latest = await describeLatest(workflowId);
      const view = await readView(run, latest.runId === runId ? latest.status.name : status);
      if (!view) {
        // Unreadable (closed without a result and not replayable): its rows stay unexplained, reported.
        log.warn('reconciliation: an order run could not be read', { workflowId, runId });
        continue;
      }
      const parsed = parseOrderWorkflowId(workflowId);
      orders[index] = {
        workflowId,
        runId,
        ref: parsed?.ref ?? view.ref,
        ...((view.client ?? parsed?.client) !== undefined && { client: view.client ?? parsed?.client }),
        view,
        inDay: completedAt !== undefined && completedAt.getTime() >= dayFrom,
        superseded: latest.runId !== runId,
        reopened: latest.runId !== runId && latest.status.name === 'RUNNING',
      };
      beat({ phase: 'orders', read: index });
    }
  };
  await Promise.all(Array.from({ length: READS_AT_ONCE }, lane));
  return orders.filter((o) => o !== undefined);
}
