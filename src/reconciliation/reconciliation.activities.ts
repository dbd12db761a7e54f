/**
 * The nightly reconciliation's activities (src/reconciliation/reconciliation.workflow.ts): which day "yesterday" is,
 * the day's orders and the provider's ledger matched (only the mismatches leave the activity, one
 * chunk at a time), and the re-check of one mismatch at the provider — which, when the provider
 * contradicts us, reopens the order as DISPUTED with the evidence (a new run of its workflow, as
 * the sweep starts one). A ledger row no order explains is checked by its own id (check-id), and
 * traced back to the order whose ref the provider shows, when there is one.
 *
 * All reads: a retried attempt (after a worker kill) reads again and finds the same. The one write,
 * reopening an order, is recognised on a retry by the order's view (`dispute.reconciliation`).
 */
import { activityInfo, heartbeat, log } from '@temporalio/activity';
import {
  WorkflowNotFoundError,
  type Client,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import type { ProviderClient } from '../provider';
import { isProviderError } from '../provider';
import { disputedSearchAttributes, reopenedInput, reopenOrder } from '../orders';
import {
  CompletedAtAttribute,
  finalStatuses,
  orderInputQuery,
  OrderStatusAttribute,
  orderWorkflowId,
  parseOrderWorkflowId,
  PROVIDER_REF_MEMO,
  statusQuery,
  workflowTypeByOrderType,
  type OrderInput,
  type OrderStatus,
  type OrderType,
  type ReconciledDispute,
  type OrderView,
  type ProviderStatus,
} from '../../contract/order';
import {
  orderDebitTypes,
  orderRefundTypes,
  UNEXPLAINED_LISTED,
  type ItemOutcome,
  type LedgerRow,
  type MatchChunk,
  type Mismatch,
  type MismatchKind,
  type ReconcileDayInput,
  type ReconciliationDay,
  type ReconciliationItem,
  type TopUpSeen,
} from '../../contract/reconciliation';

export type ReconciliationProvider = Pick<
  ProviderClient,
  | 'listTransactions'
  | 'checkMobileTopup'
  | 'checkInternetTopup'
  | 'checkGiftCardOrder'
  | 'checkMobileTopupById'
  | 'checkInternetTopupById'
>;

const LEDGER_PAGE_SIZE = 100;
/**
 * The ledger rows a heartbeat carries at most, as JSON characters: below the payload size Temporal
 * warns about, so a retry resumes the read of an ordinary day (docs/operators.md "Size and restarts").
 */
const LEDGER_CARRIED_CHARS = 400_000;
/** The order reads' heartbeats carry the ledger: sent this often at most. */
const ORDERS_HEARTBEAT_EVERY_MS = 1_000;
/** Orders' results read at once while matching. */
const READS_AT_ONCE = 8;
/** Every final status: a cancelled order the provider debited anyway is money lost too. */
const reconciledStatuses: readonly OrderStatus[] = finalStatuses;
/** Ledger rows named in one mismatch's evidence (the rest are counted). */
const ROWS_PER_MISMATCH = 6;
/** Sorts after every workflow ID: a chunk's order mismatches come before the rows no order explains. */
const ROW_KEY_PREFIX = '~row:';
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
    case 'CANCELLED':
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

  /**
   * The ledger over [from, to), page by page. A retried attempt (after a worker kill) goes on
   * after the last page its predecessor's heartbeat carried, with the rows it carried.
   */
  async function readLedger(
    from: string,
    to: string,
  ): Promise<{ rows: LedgerRow[]; progress: LedgerProgress }> {
    const rows = new Map<string, LedgerRow>();
    const carried = resumableLedger(activityInfo().heartbeatDetails, from, to);
    let progress: LedgerProgress = carried ?? { from, to, page: 0, done: false, rows: [] };
    const compact: CompactRow[] = [...(progress.rows ?? [])];
    for (const row of compact) rows.set(row[0], fromCompact(row));
    let size = JSON.stringify(compact).length;
    if (carried)
      log.info('reconciliation: the ledger read goes on after its last page', { page: carried.page });
    while (!progress.done) {
      const page = progress.page + 1;
      const { items, pagination } = await upstream().listTransactions({
        page,
        pageSize: LEDGER_PAGE_SIZE,
        range: { from, to },
      });
      for (const item of items) {
        const row: LedgerRow = {
          id: item._id,
          type: item.type,
          amount: item.amount,
          time: item.time,
          ...(item.objid !== undefined && { objid: item.objid }),
        };
        rows.set(row.id, row);
        if (size <= LEDGER_CARRIED_CHARS) {
          const small = toCompact(row);
          compact.push(small);
          size += JSON.stringify(small).length + 1;
        }
      }
      const done = items.length === 0 || !pagination || page >= pagination.totalPages;
      // Past the budget the rows are no longer carried: a retry would read the ledger from page 1.
      progress = { from, to, page, done, ...(size <= LEDGER_CARRIED_CHARS && { rows: compact }) };
      heartbeat({ phase: 'ledger', ledger: progress } satisfies MatchProgress);
    }
    return { rows: [...rows.values()], progress };
  }

  async function listOrders(input: MatchInput, from: string, ledger: LedgerProgress): Promise<ListedOrder[]> {
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
    for await (const execution of client().workflow.list({ query })) {
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
      const found = latestOf.get(workflowId) ?? client().workflow.getHandle(workflowId).describe();
      latestOf.set(workflowId, found);
      return found;
    };
    const lane = async () => {
      while (next < listed.length) {
        const index = next++;
        const { workflowId, runId, status, completedAt } = listed[index]!;
        const run = client().workflow.getHandle(workflowId, runId);
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

  /** The day's orders and ledger matched: every mismatch (orders and unexplained rows), sorted by key. */
  async function matchDay(input: MatchInput): Promise<Omit<MatchChunk, 'more'>> {
    const from = new Date(Date.parse(input.from) - input.lookbackMs).toISOString();
    const { rows: ledger, progress } = await readLedger(from, input.to);
    const orders = await listOrders(input, from, progress);
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
    // Orders whose latest run is listed itself (final, or final in its watch) speak through it.
    const reported = new Set(orders.filter((o) => !o.superseded).map((o) => o.workflowId));
    const mismatches: Mismatch[] = [];
    let counted = 0;
    let matched = 0;
    for (const order of orders) {
      const reference = order.view.providerReference;
      const rows = (reference !== undefined && byObjid.get(reference)) || { debits: [], refunds: [] };
      if (reference !== undefined) explained.add(reference);
      // An order settled in the look-back is checked only for what the ledger says of it today.
      const ofTheDay = order.inDay || [...rows.debits, ...rows.refunds].some(inDay);
      let kind: MismatchKind | undefined;
      if (order.superseded) {
        // Its open run speaks for it (a re-run of the day finds the disputes the first run opened).
        if (!order.reopened || !ofTheDay || reported.has(order.workflowId)) continue;
        reported.add(order.workflowId);
        kind = 'reopened';
      } else {
        if (!ofTheDay) continue;
        kind = mismatchOf(order.view.status, rows);
      }
      counted++;
      if (!kind) {
        matched++;
        continue;
      }
      mismatches.push({
        kind,
        key: order.workflowId,
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
        inDay(row) && moneyTypes.includes(row.type) && (row.objid === undefined || !explained.has(row.objid)),
    );
    for (const row of unexplained) {
      mismatches.push({
        kind: 'unexplained-row',
        key: `${ROW_KEY_PREFIX}${row.id}`,
        workflowId: '',
        runId: '',
        ref: '',
        orderType: orderTypeOfRow(row),
        rows: [row],
      });
    }
    mismatches.sort((a, b) => (a.key! < b.key! ? -1 : a.key! > b.key! ? 1 : 0));
    return {
      orders: counted,
      matched,
      ledgerRows: ledger.filter(inDay).length,
      unexplainedRows: unexplained.length,
      unexplained,
      mismatches,
    };
  }

  /** The latest run of an order, described; undefined when it never existed. */
  async function describeOrder(workflowId: string): Promise<WorkflowExecutionDescription | undefined> {
    try {
      return await client().workflow.getHandle(workflowId).describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  }

  /** A closed run's last view: its result when it completed, else a replay (undefined if it fails). */
  async function closedView(workflowId: string, latest: WorkflowExecutionDescription) {
    const run = client().workflow.getHandle(workflowId, latest.runId);
    if (latest.status.name === 'COMPLETED') return (await run.result()) as OrderView;
    return run.query(statusQuery).catch(() => undefined);
  }

  /**
   * An order whose latest run is open (or closed again since the matching): reported as it stands.
   * A dispute, by this reconciliation or an earlier one or by the watch, counts as disputed with its
   * evidence, so a re-run of a day reports what the first run found.
   */
  async function asItStands(
    workflowId: string,
    latest: WorkflowExecutionDescription,
    item: (outcome: ItemOutcome, evidence: string) => ReconciliationItem,
  ): Promise<ReconciliationItem> {
    const handle = client().workflow.getHandle(workflowId, latest.runId);
    const view: OrderView | undefined =
      latest.status.name === 'COMPLETED'
        ? ((await handle.result()) as OrderView)
        : await handle.query(statusQuery).catch(() => undefined);
    if (view?.status === 'DISPUTED') {
      const by = view.dispute?.reconciliation
        ? `the reconciliation of ${view.dispute.reconciliation}`
        : 'the watch after a decision';
      return item(
        'disputed',
        `DISPUTED since ${view.review?.since ?? '?'} (by ${by}): ${view.review?.evidence ?? view.review?.reason ?? ''}`,
      );
    }
    return item(
      'open',
      `the order's latest run is ${latest.status.name} (${view?.status ?? 'status unknown'})`,
    );
  }

  /**
   * The provider's answer `status` against a closed order's final view: agreed, or the order is
   * reopened as DISPUTED. The start is safe against a change since the order was read: the latest
   * run is described again right before it and must still be the one read, and the start fails if
   * any run of the order is open (conflict policy FAIL).
   */
  async function settle(
    order: { workflowId: string; runId: string },
    view: OrderView,
    status: ProviderStatus,
    date: string,
    evidence: string,
    item: (outcome: ItemOutcome, evidence: string) => ReconciliationItem,
  ): Promise<ReconciliationItem> {
    const providerSays = `provider status ${status}`;
    const verdict = reconcileStatus(view, status);
    if (verdict.kind === 'overridden')
      return item('agreed', `${providerSays}, which an operator saw and forced past`);
    if (verdict.kind !== 'contradicted') {
      return verdict.kind === 'agreed'
        ? item('agreed', providerSays)
        : item('unreachable', `${providerSays}, not final`);
    }
    const run = client().workflow.getHandle(order.workflowId, order.runId);
    const input = await run.query(orderInputQuery);
    const latest = await describeOrder(order.workflowId);
    if (!latest) return item('unreachable', 'the order’s workflow is gone');
    // Changed since it was read: a decision needs a running order, so only another start can have.
    if (latest.runId !== order.runId || latest.status.name === 'RUNNING')
      return asItStands(order.workflowId, latest, item);
    const { started } = await reopenOrder(client(), {
      workflowId: order.workflowId,
      latest,
      input: reopenedInput(
        input,
        view,
        { reconciled: { date, providerStatus: verdict.providerStatus, evidence } },
        // The closed run's own continuation (a watch, its event sequence) is over: only its last view goes on.
        'closed',
      ),
      // As the new run will publish them: listed DISPUTED, not final, from its start.
      searchAttributes: disputedSearchAttributes(latest),
    });
    if (!started) return item('open', 'the order was started again meanwhile');
    log.warn('reconciliation: order reopened as DISPUTED', {
      workflowId: order.workflowId,
      status: view.status,
      providerStatus: status,
    });
    return item('disputed', providerSays);
  }

  /**
   * A ledger row no order explains, checked by its own id: the provider's ref leads back to an
   * order of ours (one whose view never named this id: a cancelled order the provider debited
   * anyway), which is then settled against it; otherwise it is foreign.
   */
  async function recheckRow(mismatch: Mismatch, date: string): Promise<ReconciliationItem> {
    const row = mismatch.rows[0]!;
    const item = (
      outcome: ItemOutcome,
      evidence: string,
      order?: { workflowId: string; ref: string; client?: string; status?: OrderStatus },
    ): ReconciliationItem => ({
      kind: 'unexplained-row',
      ref: order?.ref ?? '',
      ...(order?.client !== undefined && { client: order.client }),
      workflowId: order?.workflowId ?? '',
      ...(order?.status !== undefined && { status: order.status }),
      row,
      outcome,
      evidence: `${evidence}; ledger: ${describeRows([row])}`,
    });
    if (row.objid === undefined) return item('unreachable', 'the row names no provider id');
    const answer = await askById(upstream(), mismatch.orderType, row.objid);
    if (answer.kind === 'unreachable') return item('unreachable', answer.detail);
    const providerSays = `the provider's ${mismatch.orderType} ${row.objid} is ${answer.status}`;
    const order = answer.ref !== undefined ? await orderByProviderRef(answer.ref) : undefined;
    if (!order) {
      const where = answer.ref !== undefined ? `ref ${answer.ref}` : 'no ref';
      return item(
        'foreign',
        `${providerSays} (${where}${answer.createdAt ? `, created ${answer.createdAt}` : ''}), no order of ours has it`,
      );
    }
    const parsed = parseOrderWorkflowId(order.workflowId);
    const ours = {
      workflowId: order.workflowId,
      ref: parsed?.ref ?? '',
      ...(parsed?.client && { client: parsed.client }),
    };
    const { latest } = order;
    if (latest.status.name === 'RUNNING')
      return asItStands(order.workflowId, latest, (o, e) => item(o, e, ours));
    const view = await closedView(order.workflowId, latest);
    if (!view || !finalStatuses.includes(view.status))
      return item('open', `the order's workflow closed without a final view (${latest.status.name})`, ours);
    const named = { ...ours, status: view.status };
    if (view.providerReference !== undefined && view.providerReference !== row.objid) {
      // Money sent twice for one order. Not reopened: the order's own top-up is what its status
      // speaks of; the second is a matter for operators and the provider (docs/operators.md).
      const own = await askById(upstream(), mismatch.orderType, view.providerReference);
      const secondTopUp = {
        order: seen(view.providerReference, own),
        second: seen(row.objid, answer),
      };
      log.warn('reconciliation: a second top-up under the ref of an order', {
        workflowId: order.workflowId,
        order: view.providerReference,
        second: row.objid,
      });
      return {
        ...item(
          'second-top-up',
          `a second top-up under the ref of order ${order.workflowId}: the provider's ` +
            `${mismatch.orderType} ${describeSeen(secondTopUp.second)}, the order's own ` +
            describeSeen(secondTopUp.order),
          named,
        ),
        secondTopUp,
      };
    }
    return settle(
      { workflowId: order.workflowId, runId: latest.runId },
      view,
      answer.status,
      date,
      `${providerSays}, an id the order never named; ledger: ${describeRows([row])}`,
      (o, e) => item(o, e, named),
    );
  }

  /**
   * The order a provider ref was sent for. Our refs are `<client>.<ref>.<hash>` (src/orders/
   * provider-ref.ts), recorded in the order's memo, which confirms the match; an order from before
   * them sent its own ref. A ref whose readable part was cut short leads nowhere: reported foreign.
   */
  async function orderByProviderRef(
    ref: string,
  ): Promise<{ workflowId: string; latest: WorkflowExecutionDescription } | undefined> {
    const candidates: { workflowId: string; sentAs?: string }[] = [];
    const parts = /^([^.]+)\.(.+)\.[0-9a-f]+$/.exec(ref);
    if (parts) {
      // The default client's orders have the unscoped ID.
      candidates.push(
        { workflowId: orderWorkflowId(parts[2]!, parts[1]!), sentAs: ref },
        { workflowId: orderWorkflowId(parts[2]!), sentAs: ref },
      );
    }
    candidates.push({ workflowId: orderWorkflowId(ref) });
    for (const { workflowId, sentAs } of candidates) {
      const latest = await describeOrder(workflowId);
      if (!latest || !Object.values<string>(workflowTypeByOrderType).includes(latest.type)) continue;
      const recorded = latest.memo?.[PROVIDER_REF_MEMO];
      if (recorded === sentAs) return { workflowId, latest };
    }
    return undefined;
  }

  return {
    /** The day before the Schedule's run, in the configured zone. */
    async reconciliationDayBefore(options: { at: string; timeZone: string }): Promise<ReconciliationDay> {
      return previousDay(Date.parse(options.at), options.timeZone);
    },

    /**
     * Matches the day's final orders with the provider's ledger. Returns the day's counts and one
     * chunk of what does not match (the mismatches whose key is above `after`, at most `limit`),
     * so a day of thousands of mismatches travels in results of a bounded size. Each call reads the
     * day again: a chunk is found by its cursor, not kept anywhere between calls.
     */
    async matchReconciliationChunk(
      input: MatchInput & { after?: string; limit: number },
    ): Promise<MatchChunk> {
      return chunkOf(await matchDay(input), input.after, input.limit);
    },

    /**
     * Asks the provider about one mismatch: an order by its own check (when the provider reports
     * the other final status the order is reopened as DISPUTED), a row by its id, a reopened
     * order as it stands.
     */
    async recheckReconciled(options: { mismatch: Mismatch; date: string }): Promise<ReconciliationItem> {
      const { mismatch, date } = options;
      if (mismatch.kind === 'unexplained-row') return recheckRow(mismatch, date);
      const item = (outcome: ItemOutcome, evidence: string): ReconciliationItem => ({
        kind: mismatch.kind,
        ref: mismatch.ref,
        ...(mismatch.client !== undefined && { client: mismatch.client }),
        workflowId: mismatch.workflowId,
        ...(mismatch.status !== undefined && { status: mismatch.status }),
        outcome,
        evidence: `${evidence}; ledger: ${describeRows(mismatch.rows)}`,
      });
      const latest = await describeOrder(mismatch.workflowId);
      if (!latest) return item('unreachable', 'the order’s workflow is gone');
      // Already reopened (by this reconciliation before a worker kill, an earlier one, the watch),
      // resumed by the sweep, or in its watch: reported as it stands.
      if (mismatch.kind === 'reopened' || latest.runId !== mismatch.runId || latest.status.name === 'RUNNING')
        return asItStands(mismatch.workflowId, latest, item);
      // Closed: completed, or terminated (or timed out) with a final view, which the sweep leaves alone.
      const view = await closedView(mismatch.workflowId, latest);
      if (!view || !finalStatuses.includes(view.status))
        return item('open', `the order's workflow closed without a final view (${latest.status.name})`);
      const input = await client()
        .workflow.getHandle(mismatch.workflowId, latest.runId)
        .query(orderInputQuery);
      const answer = await askProvider(upstream(), input, view);
      if (answer.kind === 'unreachable') return item('unreachable', answer.detail);
      return settle(
        { workflowId: mismatch.workflowId, runId: latest.runId },
        view,
        answer.status,
        date,
        `provider status ${answer.status}; ledger: ${describeRows(mismatch.rows)}`,
        item,
      );
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
    (status === 'REFUNDED' && (ours === 'REFUNDED' || ours === 'FAILED' || ours === 'CANCELLED'));
  if (agrees) return { kind: 'agreed' };
  const resolution = view.review?.resolution;
  if (resolution?.forcedPast !== undefined && resolution.provider?.status === status)
    return { kind: 'overridden' };
  // Ours PARTIALLY_FULFILLED against a FULFILLED answer has no dispute shape yet (decision is
  // FULFILLED or REFUNDED); it is reported agreed-in-part rather than reopened.
  if (ours === 'PARTIALLY_FULFILLED' && status === 'FULFILLED') return { kind: 'agreed' };
  if (!finalStatuses.includes(ours)) return { kind: 'not-final' };
  return { kind: 'contradicted', providerStatus: status };
}

function isFinalProviderStatus(status: ProviderStatus): status is ReconciledDispute['providerStatus'] {
  return status === 'FULFILLED' || status === 'REFUNDED' || status === 'PARTIALLY_FILLED';
}

function describeRows(rows: LedgerRow[]): string {
  if (rows.length === 0) return 'no row for the order';
  const named = rows.slice(0, ROWS_PER_MISMATCH).map((r) => `${r.type} ${r.amount} at ${r.time} (${r.id})`);
  const more = rows.length - named.length;
  return named.join(', ') + (more > 0 ? ` and ${more} more` : '');
}

/**
 * One chunk of a day's matching: the mismatches (sorted by key) after `after`, at most `limit`,
 * each naming at most ROWS_PER_MISMATCH rows; the unexplained rows listed with the first chunk only.
 */
export function chunkOf(day: Omit<MatchChunk, 'more'>, after: string | undefined, limit: number): MatchChunk {
  const rest = after === undefined ? day.mismatches : day.mismatches.filter((m) => m.key! > after);
  return {
    ...day,
    unexplained: after === undefined ? day.unexplained.slice(0, UNEXPLAINED_LISTED) : [],
    mismatches: rest.slice(0, limit).map((m) => ({ ...m, rows: m.rows.slice(0, ROWS_PER_MISMATCH) })),
    more: rest.length > limit,
  };
}

/** A ledger row as a heartbeat carries it: [id, type, amount, time, objid]. */
type CompactRow = [string, string, number, string] | [string, string, number, string, string];

function toCompact(row: LedgerRow): CompactRow {
  return row.objid === undefined
    ? [row.id, row.type, row.amount, row.time]
    : [row.id, row.type, row.amount, row.time, row.objid];
}

function fromCompact([id, type, amount, time, objid]: CompactRow): LedgerRow {
  return { id, type, amount, time, ...(objid !== undefined && { objid }) };
}

/** How far the ledger read of [from, to) got: its last page, whether it was the last, the rows read. */
interface LedgerProgress {
  from: string;
  to: string;
  page: number;
  done: boolean;
  /** Absent once they outgrew LEDGER_CARRIED_CHARS: a retry then reads the ledger from page 1. */
  rows?: CompactRow[];
}

/** The matching's heartbeat details: where it is, and the ledger read so far (a retry's cursor). */
interface MatchProgress {
  phase: 'ledger' | 'orders';
  ledger: LedgerProgress;
  listed?: number;
  read?: number;
}

/** The ledger progress a previous attempt's heartbeat carried, if a retry can go on from it. */
function resumableLedger(details: unknown, from: string, to: string): LedgerProgress | undefined {
  const ledger = (details as Partial<MatchProgress> | undefined)?.ledger;
  if (!ledger || ledger.from !== from || ledger.to !== to || !Array.isArray(ledger.rows)) return undefined;
  return ledger;
}

/** Which check-id route a ledger row's objid is for. */
function orderTypeOfRow(row: LedgerRow): OrderType {
  if (row.type.endsWith('FLEXY')) return 'mobile_topup';
  if (row.type.endsWith('ADSL')) return 'internet_topup';
  return 'gift_card';
}

type IdAnswer =
  | { kind: 'status'; status: ProviderStatus; ref?: string; createdAt?: string; amount?: number }
  | { kind: 'unreachable'; detail: string };

/** A top-up as its check by id answered (its id alone when the provider could not be asked). */
function seen(providerReference: string, answer: IdAnswer): TopUpSeen {
  if (answer.kind === 'unreachable') return { providerReference };
  return {
    providerReference,
    status: answer.status,
    ...(answer.amount !== undefined && { amount: answer.amount }),
  };
}

function describeSeen(topUp: TopUpSeen): string {
  const amount = topUp.amount === undefined ? 'amount unknown' : `${topUp.amount} DZD`;
  return `${topUp.providerReference} (${topUp.status ?? 'status unknown'}, ${amount})`;
}

/** A ledger row's own id asked at the provider (check-id; a gift card's checkOrder), one call. */
async function askById(provider: ReconciliationProvider, type: OrderType, id: string): Promise<IdAnswer> {
  try {
    switch (type) {
      case 'mobile_topup':
      case 'internet_topup': {
        const check =
          type === 'mobile_topup'
            ? await provider.checkMobileTopupById(id)
            : await provider.checkInternetTopupById(id);
        return {
          kind: 'status',
          status: check.status,
          ref: check.ref,
          createdAt: check.created_at,
          ...(check.topup_amount !== undefined && { amount: check.topup_amount }),
        };
      }
      case 'gift_card': {
        // Gift-card orders carry no ref of ours: such a row cannot lead back to an order.
        const check = await provider.checkGiftCardOrder(id);
        return { kind: 'status', status: check.status, createdAt: check.time };
      }
    }
  } catch (err) {
    if (isProviderError(err, 'not_found'))
      return { kind: 'unreachable', detail: `the provider does not know ${id}` };
    if (isProviderError(err, 'refused'))
      return { kind: 'unreachable', detail: 'the provider refused the check' };
    throw err;
  }
}
