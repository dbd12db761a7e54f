/**
 * A bulk decision's names and shapes (POST /v1/reviews/bulk; the workflow is src/reviews/bulk-review.workflow.ts),
 * shared by the API that starts it, the workflow and its activities.
 */
import type { DecisionOutcome, OrderStatus, ReviewDecision } from './order';

export const BULK_REVIEW_WORKFLOW = 'bulkReviewWorkflow';

export function bulkReviewWorkflowId(client: string, bulkId: string): string {
  return `bulk-review:${client}:${bulkId}`;
}

export interface BulkReviewInput {
  bulkId: string;
  /** The visibility query of the orders to decide (built and checked by the API: reach, filter). */
  query: string;
  /** Keep only orders whose review reason contains this text (case-insensitive); read from each order's view. */
  reason?: string;
  /** The decision, with `decidedBy` and the bulk ID in its note. */
  decision: ReviewDecision;
  /** At most this many orders; more matching is reported as `truncated`. */
  maxOrders: number;
  /** Decisions in flight at once. */
  concurrency: number;
}

export interface BulkReviewTarget {
  workflowId: string;
  ref: string;
  client?: string;
}

export interface BulkReviewItem extends BulkReviewTarget {
  /**
   * The update's outcome (`applied`, `rechecked`, `resumed`, `refused`), or `rejected` (the order
   * was no longer in review, or the decision cannot apply to it), `not-found` (no running order).
   */
  outcome: DecisionOutcome['outcome'] | 'rejected' | 'not-found';
  /** The order's status after the decision, when it answered. */
  status?: OrderStatus;
  /** Why it was refused or rejected. */
  reason?: string;
  refusal?: DecisionOutcome['refusal'];
}

export interface BulkReviewResult {
  bulkId: string;
  /** Orders the filter matched (up to maxOrders + 1). */
  matched: number;
  /** More orders matched than maxOrders: decide the rest with another bulk ID. */
  truncated: boolean;
  results: BulkReviewItem[];
}
