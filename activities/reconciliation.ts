/**
 * The nightly reconciliation's activities (workflows/reconciliation.ts): which day "yesterday" is,
 * the day's orders and the provider's ledger matched (only the mismatches leave the activity), and
 * the re-check of one mismatch at the provider — which, when the provider contradicts us, reopens
 * the order as DISPUTED with the evidence (a new run of its workflow, as the sweep starts one).
 *
 * All reads: a retried attempt (after a worker kill) reads again and finds the same. The one write,
 * reopening an order, is recognised on a retry by the order's view (`dispute.reconciliation`).
 */
import { heartbeat, log } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { ProviderClient } from '../src/provider/client';
import { isProviderError } from '../src/provider/errors';
import {
  CompletedAtAttribute,
  defaultOrderTimings,
  orderInputQuery,
  OrderStatusAttribute,
  parseOrderWorkflowId,
  statusQuery,
  workflowTypeByOrderType,
  type OrderInput,
  type OrderStatus,
  type ReconciledDispute,
  type OrderView,
  type ProviderStatus,
} from '../contract/order';
import {
  orderDebitTypes,
  orderRefundTypes,
  type ItemOutcome,
  type LedgerRow,
  type Mismatch,
  type MismatchKind,
  type ReconcileDayInput,
  type ReconciliationDay,
  type ReconciliationItem,
} from '../contract/reconciliation';

export type ReconciliationProvider = Pick<
  ProviderClient,
  'listTransactions' | 'checkMobileTopup' | 'checkInternetTopup' | 'checkGiftCardOrder'
>;

const LEDGER_PAGE_SIZE = 100;
/** Orders' results read at once while matching. */
const READS_AT_ONCE = 8;
const reconciledStatuses: readonly OrderStatus[] = ['FULFILLED', 'PARTIALLY_FULFILLED', 'REFUNDED', 'FAILED'];
const DAY_MS = 24 * 60 * 60_000;

/** The date (YYYY-MM-DD) an instant falls on in `timeZone`. */
export function dateIn(instant: number, timeZone: string): string {
  // en-CA writes dates as YYYY-MM-DD.
  return new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).format(instant);
}

/** How far `timeZone` is ahead of UTC at `instant`, in ms. */
function offsetAt(instant: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  }).formatToParts(instant);
  const part = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  const asUtc = Date.UTC(
    part('year'),
    part('month') - 1,
    part('day'),
    part('hour'),
    part('minute'),
    part('second'),
  );
  return asUtc - Math.floor(instant / 1000) * 1000;
}

/** The instant a date's midnight is in `timeZone` (DST-safe: the offset is read at that midnight). */
function midnight(date: string, timeZone: string): number {
  const utcMidnight = Date.parse(`${date}T00:00:00Z`);
  const first = utcMidnight - offsetAt(utcMidnight, timeZone);
  return utcMidnight - offsetAt(first, timeZone);
}

/** A business day in a time zone, as the instants [from, to). Throws a RangeError on an unknown zone. */
export function reconciliationDayOf(date: string, timeZone: string): ReconciliationDay {
  const next = new Date(Date.parse(`${date}T00:00:00Z`) + DAY_MS).toISOString().slice(0, 10);
  return {
    date,
    timeZone,
    from: new Date(midnight(date, timeZone)).toISOString(),
    to: new Date(midnight(next, timeZone)).toISOString(),
  };
}

/** The day before the one `at` falls on, in `timeZone`. */
export function previousDay(at: number, timeZone: string): ReconciliationDay {
  const today = dateIn(at, timeZone);
  const yesterday = new Date(Date.parse(`${today}T00:00:00Z`) - DAY_MS).toISOString().slice(0, 10);
  return reconciliationDayOf(yesterday, timeZone);
}

/** What the provider's ledger holds for one order (rows keyed by objid: the topupId or orderId). */
interface OrderRows {
  debits: LedgerRow[];
  refunds: LedgerRow[];
}

/** One order's mismatch, or undefined when its ledger rows say what its status says. */
export function mismatchOf(status: OrderStatus, rows: OrderRows): MismatchKind | undefined {
  const debited = rows.debits.length > 0;
  const refunded = rows.refunds.length > 0;
  switch (status) {
    case 'FULFILLED':
      if (refunded) return 'refund-of-fulfilled';
      return debited ? undefined : 'fulfilled-without-debit';
    case 'PARTIALLY_FULFILLED':
      // The undelivered part is refunded: a refund is expected, the debit must be there.
      return debited ? undefined : 'fulfilled-without-debit';
    case 'REFUNDED':
    case 'FAILED':
      return debited && !refunded ? 'debit-without-refund' : undefined;
    default:
      return undefined;
  }
}

/** The day, and the task queue whose orders are reconciled (the reconciliation's own). */
export type MatchInput = Pick<ReconcileDayInput, 'from' | 'to' | 'lookbackMs'> & { taskQueue: string };

interface ListedOrder {
  workflowId: string;
  runId: string;
  ref: string;
  client?: string;
  view: OrderView;
  /** Completed in the day itself (not only in the look-back). */
  inDay: boolean;
  /** Not the order's latest run: its rows are explained, the order is not checked by it. */
  superseded: boolean;
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

export function createReconciliationActivities(
  provider: ReconciliationProvider | undefined,
  temporal: Client | undefined,
) {
  const client = () => {
    if (!temporal) throw new Error('this worker has no Temporal client for the reconciliation');
    return temporal;
  };
  const upstream = () => {
    if (!provider) throw new Error('this worker has no provider client for the reconciliation');
    return provider;
  };

  async function readLedger(from: string, to: string): Promise<LedgerRow[]> {
    const rows = new Map<string, LedgerRow>();
    for (let page = 1; ; page++) {
      const { items, pagination } = await upstream().listTransactions({
        page,
        pageSize: LEDGER_PAGE_SIZE,
        range: { from, to },
      });
      for (const row of items) {
        rows.set(row._id, {
          id: row._id,
          type: row.type,
          amount: row.amount,
          time: row.time,
          ...(row.objid !== undefined && { objid: row.objid }),
        });
      }
      heartbeat({ ledgerPage: page });
      if (items.length === 0 || !pagination || page >= pagination.totalPages) break;
    }
    return [...rows.values()];
  }

  async function listOrders(input: MatchInput, from: string): Promise<ListedOrder[]> {
    const types = Object.values(workflowTypeByOrderType).map((t) => `'${t}'`);
    const statuses = reconciledStatuses.map((s) => `'${s}'`);
    const query =
      `TaskQueue = '${input.taskQueue}' AND WorkflowType IN (${types.join(', ')}) ` +
      `AND ${OrderStatusAttribute.name} IN (${statuses.join(', ')}) ` +
      `AND ${CompletedAtAttribute.name} >= '${from}' AND ${CompletedAtAttribute.name} < '${input.to}' ` +
      `AND ExecutionStatus != 'ContinuedAsNew'`;
    const listed: { workflowId: string; runId: string; status: string; completedAt?: Date }[] = [];
    for await (const execution of client().workflow.list({ query })) {
      listed.push({
        workflowId: execution.workflowId,
        runId: execution.runId,
        status: execution.status.name,
        completedAt: execution.typedSearchAttributes.get(CompletedAtAttribute),
      });
      if (listed.length % 500 === 0) heartbeat({ listed: listed.length });
    }
    const orders: (ListedOrder | undefined)[] = new Array<ListedOrder | undefined>(listed.length);
    let next = 0;
    const dayFrom = Date.parse(input.from);
    const lane = async () => {
      while (next < listed.length) {
        const index = next++;
        const { workflowId, runId, status, completedAt } = listed[index]!;
        const run = client().workflow.getHandle(workflowId, runId);
        // A later run (reopened as DISPUTED, resumed by the sweep) speaks for the order now.
        const latest = await client().workflow.getHandle(workflowId).describe();
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
        };
        heartbeat({ read: index });
      }
    };
    await Promise.all(Array.from({ length: READS_AT_ONCE }, lane));
    return orders.filter((o) => o !== undefined);
  }

  return {
    /** The day before the Schedule's run, in the configured zone. */
    async reconciliationDayBefore(options: { at: string; timeZone: string }): Promise<ReconciliationDay> {
      return previousDay(Date.parse(options.at), options.timeZone);
    },

    /**
     * Matches the day's final orders with the provider's ledger. Returns the counts and only what
     * does not match: mismatched orders (re-checked next) and ledger rows of the day no order explains.
     */
    async findReconciliationMismatches(input: MatchInput): Promise<{
      orders: number;
      matched: number;
      ledgerRows: number;
      mismatches: Mismatch[];
      unexplained: LedgerRow[];
    }> {
      const from = new Date(Date.parse(input.from) - input.lookbackMs).toISOString();
      const ledger = await readLedger(from, input.to);
      const orders = await listOrders(input, from);
      const byObjid = new Map<string, OrderRows>();
      for (const row of ledger) {
        if (row.objid === undefined) continue;
        const entry = byObjid.get(row.objid) ?? { debits: [], refunds: [] };
        if (orderDebitTypes.includes(row.type)) entry.debits.push(row);
        else if (orderRefundTypes.includes(row.type)) entry.refunds.push(row);
        byObjid.set(row.objid, entry);
      }
      const dayFrom = Date.parse(input.from);
      const inDay = (row: LedgerRow) => Date.parse(row.time) >= dayFrom;
      const explained = new Set<string>();
      const mismatches: Mismatch[] = [];
      let counted = 0;
      let matched = 0;
      for (const order of orders) {
        const reference = order.view.providerReference;
        const rows = (reference !== undefined && byObjid.get(reference)) || { debits: [], refunds: [] };
        if (reference !== undefined) explained.add(reference);
        if (order.superseded) continue;
        // An order settled in the look-back is checked only for what the ledger says of it today.
        if (!order.inDay && ![...rows.debits, ...rows.refunds].some(inDay)) continue;
        counted++;
        const kind = mismatchOf(order.view.status, rows);
        if (!kind) {
          matched++;
          continue;
        }
        mismatches.push({
          kind,
          workflowId: order.workflowId,
          runId: order.runId,
          ref: order.ref,
          ...(order.client !== undefined && { client: order.client }),
          orderType: order.view.type,
          status: order.view.status,
          ...(reference !== undefined && { providerReference: reference }),
          rows: [...rows.debits, ...rows.refunds],
        });
      }
      const moneyTypes = [...orderDebitTypes, ...orderRefundTypes];
      const unexplained = ledger.filter(
        (row) =>
          inDay(row) &&
          moneyTypes.includes(row.type) &&
          (row.objid === undefined || !explained.has(row.objid)),
      );
      return {
        orders: counted,
        matched,
        ledgerRows: ledger.filter(inDay).length,
        mismatches,
        unexplained,
      };
    },

    /**
     * Asks the provider about one mismatched order; when it reports the other final status, the
     * order is reopened as DISPUTED with the evidence (a new run of its workflow).
     */
    async recheckReconciled(options: { mismatch: Mismatch; date: string }): Promise<ReconciliationItem> {
      const { mismatch, date } = options;
      const item = (outcome: ItemOutcome, evidence: string): ReconciliationItem => ({
        kind: mismatch.kind,
        ref: mismatch.ref,
        ...(mismatch.client !== undefined && { client: mismatch.client }),
        workflowId: mismatch.workflowId,
        status: mismatch.status,
        outcome,
        evidence: `${evidence}; ledger: ${describeRows(mismatch.rows)}`,
      });
      const latest = await client().workflow.getHandle(mismatch.workflowId).describe();
      if (latest.runId !== mismatch.runId || latest.status.name !== 'COMPLETED') {
        // Already reopened by this reconciliation (an attempt before a worker kill), running again,
        // or closed without its result (terminated: the sweep's to resume).
        const view = await client()
          .workflow.getHandle(mismatch.workflowId, latest.runId)
          .query(statusQuery)
          .catch(() => undefined);
        if (view?.dispute?.reconciliation === date)
          return item('disputed', view.review?.evidence ?? 'disputed');
        return item(
          'open',
          `the order's workflow is ${latest.status.name} again (${view?.status ?? 'status unknown'})`,
        );
      }
      const run = client().workflow.getHandle(mismatch.workflowId, mismatch.runId);
      const input = await run.query(orderInputQuery);
      const view: OrderView = await run.result();
      const answer = await askProvider(upstream(), input, view);
      if (answer.kind === 'unreachable') return item('unreachable', answer.detail);
      const { status } = answer;
      const providerSays = `provider status ${status}`;
      const ours = view.status;
      const verdict = reconcileStatus(view, status);
      if (verdict.kind === 'overridden')
        return item('agreed', `${providerSays}, which an operator saw and forced past`);
      if (verdict.kind !== 'contradicted') {
        return verdict.kind === 'agreed'
          ? item('agreed', providerSays)
          : item('unreachable', `${providerSays}, not final`);
      }
      const { providerStatus } = verdict;
      const evidence = `${providerSays}; ledger: ${describeRows(mismatch.rows)}`;
      try {
        await client().workflow.start(latest.type, {
          workflowId: mismatch.workflowId,
          taskQueue: latest.taskQueue,
          args: [reopenedInput(input, view, { date, providerStatus, evidence })],
          // This one start only: the closed run's ID is taken again for the dispute's run.
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          memo: latest.memo,
          typedSearchAttributes: latest.typedSearchAttributes,
        });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        return item('open', 'the order was started again meanwhile');
      }
      log.warn('reconciliation: order reopened as DISPUTED', {
        workflowId: mismatch.workflowId,
        status: ours,
        providerStatus: status,
      });
      return item('disputed', providerSays);
    },
  };
}

export type ReconciliationActivities = ReturnType<typeof createReconciliationActivities>;

type ProviderAnswer = { kind: 'status'; status: ProviderStatus } | { kind: 'unreachable'; detail: string };

/** The order's own check (check-ref for a top-up, the orderId for a gift card), one call. */
async function askProvider(
  provider: ReconciliationProvider,
  input: OrderInput,
  view: OrderView,
): Promise<ProviderAnswer> {
  const ref = input.providerRef ?? input.request.ref;
  try {
    switch (input.request.type) {
      case 'mobile_topup':
        return { kind: 'status', status: (await provider.checkMobileTopup(ref)).status };
      case 'internet_topup':
        return { kind: 'status', status: (await provider.checkInternetTopup(ref)).status };
      case 'gift_card':
        if (view.providerReference === undefined)
          return {
            kind: 'unreachable',
            detail: 'a gift card without the provider’s orderId cannot be checked',
          };
        return { kind: 'status', status: (await provider.checkGiftCardOrder(view.providerReference)).status };
    }
  } catch (err) {
    if (isProviderError(err, 'not_found'))
      return { kind: 'unreachable', detail: 'the provider does not know the order' };
    if (isProviderError(err, 'refused'))
      return { kind: 'unreachable', detail: 'the provider refused the check' };
    // Not reached, rate-limited, unclear: the activity's retries ask again (the workflow counts the last failure).
    throw err;
  }
}

/**
 * The provider's final status against the order's: the same (agreed); another (contradicted, the
 * order reopens as DISPUTED) — partial fills included, as the watch reopens on them; or one an
 * operator saw and forced past (overridden: the decision stands, as the watch lets it stand).
 */
export function reconcileStatus(
  view: Pick<OrderView, 'status' | 'review'>,
  status: ProviderStatus,
):
  | { kind: 'agreed' | 'not-final' | 'overridden' }
  | { kind: 'contradicted'; providerStatus: ReconciledDispute['providerStatus'] } {
  if (!isFinalProviderStatus(status)) return { kind: 'not-final' };
  const ours: OrderStatus = view.status;
  const agrees =
    (status === 'FULFILLED' && ours === 'FULFILLED') ||
    (status === 'PARTIALLY_FILLED' && ours === 'PARTIALLY_FULFILLED') ||
    (status === 'REFUNDED' && (ours === 'REFUNDED' || ours === 'FAILED'));
  if (agrees) return { kind: 'agreed' };
  const resolution = view.review?.resolution;
  if (resolution?.forcedPast !== undefined && resolution.provider?.status === status)
    return { kind: 'overridden' };
  // Ours PARTIALLY_FULFILLED against a FULFILLED answer has no dispute shape yet (decision is
  // FULFILLED or REFUNDED); it is reported agreed-in-part rather than reopened.
  if (ours === 'PARTIALLY_FULFILLED' && status === 'FULFILLED') return { kind: 'agreed' };
  if (ours !== 'FULFILLED' && ours !== 'PARTIALLY_FULFILLED' && ours !== 'REFUNDED' && ours !== 'FAILED')
    return { kind: 'not-final' };
  return { kind: 'contradicted', providerStatus: status };
}

function isFinalProviderStatus(status: ProviderStatus): status is ReconciledDispute['providerStatus'] {
  return status === 'FULFILLED' || status === 'REFUNDED' || status === 'PARTIALLY_FILLED';
}

function describeRows(rows: LedgerRow[]): string {
  if (rows.length === 0) return 'no row for the order';
  return rows.map((r) => `${r.type} ${r.amount} at ${r.time} (${r.id})`).join(', ');
}

/** The closed run's input with its last view, marked as reopened by the reconciliation. */
function reopenedInput(input: OrderInput, view: OrderView, reconciled: ReconciledDispute): OrderInput {
  // The closed run's own continuation (a watch, its event sequence) is over: only its last view goes on.
  const { continued: _continued, resumed: _resumed, ...rest } = input;
  const { deadlineMs } = { ...defaultOrderTimings[input.request.type], ...input.timings };
  return {
    ...rest,
    reconciled,
    continued: {
      view,
      deadlineAt: Date.now() + deadlineMs,
      nextCheckMs: 0,
      // Webhook events go on above the closed run's (its last sequence is not in its view; each
      // announced event has its timeline entry), so the delivery workflow does not take them for repeats.
      eventSequence: view.timeline.length,
    },
  };
}
