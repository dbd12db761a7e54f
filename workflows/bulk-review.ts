/**
 * A bulk decision (POST /v1/reviews/bulk, docs/operators.md "Incident runbook"): one decision put
 * to every order a filter finds in review, each through the order's own `decideReview` update —
 * the single review route's path, so each order is checked against the provider and applied or
 * refused exactly as if decided alone — with one result per order.
 *
 * Why a workflow and not Temporal's batch operations: a batch operation can signal, cancel,
 * terminate, reset or delete, not send an update, and a signal answers nothing — no per-order
 * outcome, no refusal when the provider contradicts the decision. Why not a loop in the API: the
 * fan-out of hundreds of provider-checked decisions outlives an HTTP request, and the workflow ID
 * (`bulk-review:<client>:<bulkId>`) makes the bulk idempotent: a repeated request attaches to the
 * same run and reads the same results. Each update carries the update ID `bulk:<bulkId>`, so an
 * activity retried after a worker crash cannot decide an order twice.
 *
 * Deterministic: the visibility read and the updates are activities.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { BulkReviewActivities } from '../activities/bulk-review';
import type { DecisionOutcome, OrderStatus, ReviewDecision } from './contract';

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

const { findBulkReviewTargets } = proxyActivities<BulkReviewActivities>({
  startToCloseTimeout: 5 * 60_000,
  retry: { maximumAttempts: 5 },
});
const { decideForBulk } = proxyActivities<BulkReviewActivities>({
  // One update: the order's provider check is bounded by its own activity timeout and retries.
  startToCloseTimeout: 5 * 60_000,
  retry: { maximumAttempts: 10 },
});

export async function bulkReviewWorkflow(input: BulkReviewInput): Promise<BulkReviewResult> {
  const found = await findBulkReviewTargets({
    query: input.query,
    reason: input.reason,
    maxOrders: input.maxOrders,
  });
  const results: BulkReviewItem[] = new Array<BulkReviewItem>(found.targets.length);
  let next = 0;
  // Bounded fan-out: `concurrency` lanes, each taking the next order when its last is decided.
  const lane = async () => {
    while (next < found.targets.length) {
      const index = next++;
      const target = found.targets[index]!;
      results[index] = await decideForBulk({ target, decision: input.decision, bulkId: input.bulkId });
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, input.concurrency) }, lane));
  return { bulkId: input.bulkId, matched: found.matched, truncated: found.truncated, results };
}
