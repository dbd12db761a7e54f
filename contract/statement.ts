/**
 * Closed days of statements, summed once and kept (docs/operators.md "Statements and
 * reconciliation"): one client's closed orders of one UTC day, per type and final status, stored
 * as the memo of a `statementDayWorkflow` run under the day's own ID. The API reads these instead
 * of listing every order (src/statements/statement.service.ts); the nightly Schedule (`statement-days`) and the
 * API itself, for a day it finds missing or out of date, write them (src/statements/statement-days.ts).
 */

export const STATEMENT_DAY_WORKFLOW = 'statementDayWorkflow';
export const SCHEDULED_STATEMENT_DAYS_WORKFLOW = 'scheduledStatementDaysWorkflow';
export const STATEMENT_DAYS_SCHEDULE_ID = 'statement-days';
/** The memo key of a day's summary. */
export const STATEMENT_DAY_MEMO = 'statementDay';

/**
 * Whose orders a summary sums: a client ID (the orders' `OrderClient`), or this for the orders
 * with no `OrderClient` (accepted before clients; the default client's). Not a valid client ID.
 */
export const NO_CLIENT_KEY = '-';

/** One ID per client and day (YYYY-MM-DD, UTC): the newest run speaks for the day. */
export function statementDayWorkflowId(key: string, date: string): string {
  return `statement-day:${key}:${date}`;
}

/** Sums of one line of a statement: orders and what they are worth (src/statements/statement.service.ts documents each). */
export interface StatementSums {
  orders: number;
  amount?: number;
  unpriced?: number;
  value?: number;
  cards?: number;
  products?: { productId: string; typeId: string; orders: number; cards: number }[];
  unknown?: number;
  debited?: number;
  debitUnrecorded?: number;
  partial?: {
    orders: number;
    cardsOrdered: number;
    cardsDelivered: number;
    cardsRefunded: number;
    deliveredAmount?: number;
    refundedAmount?: number;
  };
}

export interface StatementDayLine extends StatementSums {
  type: string;
  status: string;
}

/** A day's closed orders of one key, summed: what the memo holds. */
export interface StatementDaySummary {
  key: string;
  /** YYYY-MM-DD, UTC. */
  date: string;
  /**
   * Closed final order runs of the day listed (an order's earlier runs included, though only its
   * latest is summed in `lines`): compared with a visibility count before the summary is trusted.
   */
  orders: number;
  lines: StatementDayLine[];
  /** ISO instant the listing began: runs started since then make the summary out of date. */
  computedAt: string;
  /**
   * The summing rule it was written under (src/statements/statement-days.ts STATEMENT_DAY_RULE): a
   * summary of another, or without one, is summed again.
   */
  rule?: string;
}

/**
 * Kept days are housekeeping: the nightly precompute, and every kept day's workflow (written by it
 * or by a statement), run behind every client's orders — batch items (4) included — at the lowest
 * priority, as the reconciliation, with a fairness key of their own.
 */
export const STATEMENT_DAYS_PRIORITY = { priorityKey: 5, fairnessKey: 'statements', fairnessWeight: 1 };

/** What the Schedule's workflow is started with. */
export interface ScheduledStatementDaysInput {
  /** The last N UTC days before the run are summed or checked (default 3: the watch after a decision closes runs a day late). */
  days?: number;
}

export interface StatementDaysReport {
  /** The days looked at, oldest first. */
  dates: string[];
  /** Closed orders listed. */
  orders: number;
  /** Summaries written (new, changed, or the same figures no longer trusted by their check). */
  written: number;
  /** Summaries found up to date. */
  unchanged: number;
}
