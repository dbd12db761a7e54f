/**
 * The provider's ledger over a range, read page by page in an activity, resumable: each page's
 * heartbeat carries the rows read so far (up to a size), so a retried attempt (after a worker
 * kill) goes on after the last page its predecessor's heartbeat carried.
 */
import { activityInfo, heartbeat, log } from '@temporalio/activity';
import type { LedgerRow } from '../../contract/reconciliation';
import type { ReconciliationProvider } from './provider-checks';

const LEDGER_PAGE_SIZE = 100;
/**
 * The ledger rows a heartbeat carries at most, as JSON characters: below the payload size Temporal
 * warns about, so a retry resumes the read of an ordinary day (docs/operators.md "Size and restarts").
 */
const LEDGER_CARRIED_CHARS = 400_000;

/**
 * The ledger over [from, to), page by page. A retried attempt (after a worker kill) goes on
 * after the last page its predecessor's heartbeat carried, with the rows it carried.
 */
export async function readLedger(
  provider: Pick<ReconciliationProvider, 'listTransactions'>,
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
    const { items, pagination } = await provider.listTransactions({
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
export interface LedgerProgress {
  from: string;
  to: string;
  page: number;
  done: boolean;
  /** Absent once they outgrew LEDGER_CARRIED_CHARS: a retry then reads the ledger from page 1. */
  rows?: CompactRow[];
}

/** The matching's heartbeat details: where it is, and the ledger read so far (a retry's cursor). */
export interface MatchProgress {
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
