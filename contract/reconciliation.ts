/**
 * The nightly reconciliation's names and shapes (workflows/reconciliation.ts, its activities in
 * activities/reconciliation.ts, GET /v1/reconciliations/{date}): one day of our final orders
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
  /**
   * Set only by the workflow itself when it continues as new: the mismatches still to re-check
   * and the report so far. Starters leave it unset.
   */
  continued?: { pending: Mismatch[]; report: ReconciliationReport };
}

/** Why an order (or a ledger row) did not match. */
export type MismatchKind =
  /** An order we call FULFILLED or PARTIALLY_FULFILLED with no debit in the ledger. */
  | 'fulfilled-without-debit'
  /** A refund in the ledger for an order we call FULFILLED. */
  | 'refund-of-fulfilled'
  /** An order we call REFUNDED or FAILED with a debit the ledger never refunded. */
  | 'debit-without-refund';

export interface LedgerRow {
  id: string;
  type: string;
  amount: number;
  time: string;
  objid?: string;
}

/** An order whose ledger rows do not say what its status says: re-checked at the provider. */
export interface Mismatch {
  kind: MismatchKind;
  workflowId: string;
  runId: string;
  ref: string;
  client?: string;
  orderType: OrderType;
  status: OrderStatus;
  providerReference?: string;
  /** The ledger rows found for the order (evidence). */
  rows: LedgerRow[];
}

export type ItemOutcome =
  /** The provider's check agrees with our status after all (e.g. a ledger lag). */
  | 'agreed'
  /** The provider reports the other final status: the order was moved to DISPUTED. */
  | 'disputed'
  /** The provider could not be asked, or does not know the order. */
  | 'unreachable'
  /** The order's workflow was running again (a review, a watch, a dispute already): left to it. */
  | 'open';

export interface ReconciliationItem {
  kind: MismatchKind;
  ref: string;
  client?: string;
  workflowId: string;
  status: OrderStatus;
  outcome: ItemOutcome;
  /** What the provider said, in words, and the ledger rows. */
  evidence: string;
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
  /** Debit and refund rows of the day no order explains (reported; nothing to re-check them by). */
  unexplained: LedgerRow[];
  /** Ledger rows of the day read. */
  ledgerRows: number;
  items: ReconciliationItem[];
  startedAt: string;
  finishedAt?: string;
}

/** The report so far, while a run is going. */
export const reconciliationReportQuery = defineQuery<ReconciliationReport>('report');

/** Ledger row types that move money for an order (spec/provider-v3-documented.md). */
export const orderDebitTypes: readonly string[] = ['FLEXY', 'ADSL', 'ORDER'];
export const orderRefundTypes: readonly string[] = ['REFUND-FLEXY', 'REFUND-ADSL', 'REFUND-ORDER'];

/** Temporal priority of every reconciliation activity: behind every client's live orders (1–5, 5 last). */
export const RECONCILIATION_PRIORITY = { priorityKey: 5, fairnessKey: 'reconciliation', fairnessWeight: 1 };

export type { OrderStatus };
