/**
 * The nightly reconciliation's names and shapes (src/reconciliation/reconciliation.workflow.ts, its activities in
 * src/reconciliation/reconciliation.activities.ts, GET /v1/reconciliations/{date}): one day of our final orders
 * against the provider's own ledger (GET /v3/account/transactions).
 */
import { defineQuery } from '@temporalio/workflow';
import type { OrderStatus, OrderType } from './order';

export const RECONCILE_DAY_WORKFLOW = 'reconcileDayWorkflow';
export const SCHEDULED_RECONCILIATION_WORKFLOW = 'scheduledReconciliationWorkflow';
export const RECONCILIATION_SCHEDULE_ID = 'order-reconciliation';

/** One workflow ID per day: the route finds a day's report without a search. */
export function reconciliationWorkflowId(date: string): string {
  return `reconciliation:${date}`;
}

/** What the Schedule's workflow is started with: which day is "yesterday" depends on the zone. */
export interface ScheduledReconciliationInput {
  /** IANA time zone of the business day, e.g. `Africa/Algiers`. */
  timeZone: string;
  /** How far back orders and ledger rows are read to explain the day (ms); default a day. */
  lookbackMs?: number;
}

export interface ReconciliationDay {
  /** YYYY-MM-DD in `timeZone`. */
  date: string;
  timeZone: string;
  /** ISO instants: the day is [from, to). */
  from: string;
  to: string;
}

export interface ReconcileDayInput extends ReconciliationDay {
  /**
   * Orders completed and ledger rows written this long before the day are read too, only to
   * explain the day's rows: a refund today of an order settled yesterday, a debit yesterday of
   * an order that settled today after a review.
   */
  lookbackMs: number;
  /** Re-checks in flight at once (each one provider call). */
  concurrency?: number;
  /** The matching activity's heartbeat timeout (default a minute; lowered by tests of a worker kill). */
  heartbeatTimeoutMs?: number;
  /** Re-checks per run before the run continues as new (default 200; lowered by tests). */
  recheckPerRun?: number;
  /** Mismatches the matching hands over at once, at most (default 500; lowered by tests). */
  mismatchesPerChunk?: number;
  /**
   * Set only by the workflow itself when it continues as new: the rest of the chunk being
   * re-checked and the matching's cursor. Starters leave it unset.
   */
  continued?: ReconciliationContinuation;
}

/** What a run hands to the next: every field bounded, whatever the day's size. */
export interface ReconciliationContinuation {
  /** The rest of the matching's current chunk, still to re-check (at most a chunk). */
  chunk: Mismatch[];
  /** The key of the chunk's last mismatch: the matching goes on after it; absent when it was the last chunk. */
  after?: string;
  report: ReconciliationReport;
}

/** What one matching call hands over: the day's counts and one chunk of what does not match. */
export interface MatchChunk {
  orders: number;
  matched: number;
  ledgerRows: number;
  /** Debit and refund rows of the day no order explains, all of them (the report keeps a few). */
  unexplainedRows: number;
  /** The first of them (first chunk only). */
  unexplained: LedgerRow[];
  /** Sorted by `key`, every key above the call's `after`, at most `limit`. */
  mismatches: Mismatch[];
  /** More mismatches after this chunk's last key. */
  more: boolean;
}

/** Why an order (or a ledger row) did not match. */
export type MismatchKind =
  /** An order we call FULFILLED or PARTIALLY_FULFILLED with no debit in the ledger. */
  | 'fulfilled-without-debit'
  /** A refund in the ledger for an order we call FULFILLED. */
  | 'refund-of-fulfilled'
  /** An order we call REFUNDED, FAILED or CANCELLED with a debit the ledger never refunded. */
  | 'debit-without-refund'
  /**
   * An order whose final run was followed by a run that is open again (a dispute, by this or an
   * earlier reconciliation or by the watch; a resumed run): reported as it stands, not re-checked.
   */
  | 'reopened'
  /** A debit or refund row no order explains: checked at the provider by its own id (`objid`). */
  | 'unexplained-row';

export interface LedgerRow {
  id: string;
  type: string;
  amount: number;
  time: string;
  objid?: string;
}

/**
 * An order whose ledger rows do not say what its status says (re-checked at the provider by its
 * own check), or a ledger row no order explains (`unexplained-row`: checked by the row's objid;
 * `workflowId` … `status` are then empty, the row is in `rows`).
 */
export interface Mismatch {
  kind: MismatchKind;
  /** The matching's sort key and cursor: the workflow ID, or `~row:<ledger id>` for a row. */
  key?: string;
  workflowId: string;
  runId: string;
  ref: string;
  client?: string;
  orderType: OrderType;
  /** The order's status (absent for an unexplained row). */
  status?: OrderStatus;
  providerReference?: string;
  /** The ledger rows found for the order (evidence; the first few). */
  rows: LedgerRow[];
}

export type ItemOutcome =
  /** The provider's check agrees with our status after all (e.g. a ledger lag). */
  | 'agreed'
  /** The provider reports the other final status: the order was moved to DISPUTED. */
  | 'disputed'
  /** The provider could not be asked, or does not know the order. */
  | 'unreachable'
  /** The order's workflow was running again (a review, a watch, a resumed run): left to it. */
  | 'open'
  /**
   * A ledger row the provider knows under an id no order of ours has (a top-up sent with our key
   * outside this service, a gift-card order we never placed).
   */
  | 'foreign'
  /**
   * A ledger row of a top-up the provider sent under the ref of an order of ours whose own top-up
   * is another one: money sent twice for one order (`ReconciliationItem.secondTopUp`).
   */
  | 'second-top-up';

export interface ReconciliationItem {
  kind: MismatchKind;
  /** The order's (empty for a row no order of ours explains). */
  ref: string;
  client?: string;
  workflowId: string;
  status?: OrderStatus;
  /** `unexplained-row`: the ledger row. */
  row?: LedgerRow;
  outcome: ItemOutcome;
  /** What the provider said, in words, and the ledger rows. */
  evidence: string;
  /** `second-top-up`: the order's own top-up and the second one, as the provider reports each. */
  secondTopUp?: { order: TopUpSeen; second: TopUpSeen };
}

/** A top-up as the provider's check by id reports it (no phone number, no card code). */
export interface TopUpSeen {
  /** The provider's topupId. */
  providerReference: string;
  /** Absent when the provider could not be asked. */
  status?: string;
  /** What was sent (`topup_amount`, DZD), when the provider says. */
  amount?: number;
}

export interface ReconciliationReport {
  date: string;
  timeZone: string;
  from: string;
  to: string;
  /** Final orders completed in the day that were matched against the ledger. */
  orders: number;
  /** Orders whose ledger rows matched their status. */
  matched: number;
  /** Orders re-checked at the provider (the mismatches). */
  checked: number;
  /** Re-checked orders the provider agreed with. */
  agreed: number;
  disputed: number;
  unreachable: number;
  /** Re-checked orders whose workflow was running again: left to it. */
  open: number;
  /** Unexplained rows the provider knows under an id no order of ours has (`foreign` items). */
  foreign?: number;
  /** Unexplained rows of a second top-up under an order's ref (`second-top-up` items). */
  secondTopUps?: number;
  /** Debit and refund rows of the day no order explains (the first `UNEXPLAINED_LISTED`). */
  unexplained: LedgerRow[];
  /** How many rows no order explains, all of them (each re-checked by its id). */
  unexplainedRows?: number;
  /** Ledger rows of the day read. */
  ledgerRows: number;
  /**
   * One entry per re-check that is not `agreed` (counted only), the first `REPORT_ITEMS_KEPT`;
   * the orders themselves carry their evidence (a dispute's `review.evidence`).
   */
  items: ReconciliationItem[];
  /** Items counted but not kept (beyond `REPORT_ITEMS_KEPT`). */
  itemsOmitted?: number;
  startedAt: string;
  finishedAt?: string;
}

/** Report items kept (disputed, unreachable, open, foreign, second-top-up); the rest are counted in `itemsOmitted`. */
export const REPORT_ITEMS_KEPT = 500;
/** Unexplained rows listed in the report (all are counted and re-checked). */
export const UNEXPLAINED_LISTED = 100;

/** The report so far, while a run is going. */
export const reconciliationReportQuery = defineQuery<ReconciliationReport>('report');

/** Ledger row types that move money for an order (spec/provider-v3-documented.md). */
export const orderDebitTypes: readonly string[] = ['FLEXY', 'ADSL', 'ORDER'];
export const orderRefundTypes: readonly string[] = ['REFUND-FLEXY', 'REFUND-ADSL', 'REFUND-ORDER'];

/** Temporal priority of every reconciliation activity: behind every client's live orders (1–5, 5 last). */
export const RECONCILIATION_PRIORITY = { priorityKey: 5, fairnessKey: 'reconciliation', fairnessWeight: 1 };

export type { OrderStatus };
