/**
 * A bulk decision (POST /v1/reviews/bulk, docs/operators.md "Incident runbook: many orders in review at once"): one decision put
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
import type { BulkReviewActivities } from './bulk-review.activities';
import type { BulkReviewInput, BulkReviewItem, BulkReviewResult } from '../../contract/bulk-review';

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
