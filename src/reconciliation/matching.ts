/**
 * The matching of a day's final orders with the provider's ledger: each order's rows against its
 * status, the rows no order explains, every mismatch sorted by key and handed out in chunks.
 */
import type { Client } from '@temporalio/client';
import type { OrderStatus, OrderType } from '../../contract/order';
import {
  orderDebitTypes,
  orderRefundTypes,
  UNEXPLAINED_LISTED,
  type LedgerRow,
  type MatchChunk,
  type Mismatch,
  type MismatchKind,
} from '../../contract/reconciliation';
import { readLedger } from './ledger-reader';
import { listOrders, type MatchInput } from './order-listing';
import type { ReconciliationProvider } from './provider-checks';

/** Ledger rows named in one mismatch's evidence (the rest are counted). */
const ROWS_PER_MISMATCH = 6;
/** Sorts after every workflow ID: a chunk's order mismatches come before the rows no order explains. */
const ROW_KEY_PREFIX = '~row:';

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

/** The day's orders and ledger matched: every mismatch (orders and unexplained rows), sorted by key. */
export async function matchDay(
  provider: Pick<ReconciliationProvider, 'listTransactions'>,
  temporal: Client,
  input: MatchInput,
): Promise<Omit<MatchChunk, 'more'>> {
  const from = new Date(Date.parse(input.from) - input.lookbackMs).toISOString();
  const { rows: ledger, progress } = await readLedger(provider, from, input.to);
  const orders = await listOrders(temporal, input, from, progress);
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

export function describeRows(rows: LedgerRow[]): string {
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

/** Which check-id route a ledger row's objid is for. */
function orderTypeOfRow(row: LedgerRow): OrderType {
  if (row.type.endsWith('FLEXY')) return 'mobile_topup';
  if (row.type.endsWith('ADSL')) return 'internet_topup';
  return 'gift_card';
}
