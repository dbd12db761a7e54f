/**
 * The bulk decision's activities (src/reviews/bulk-review.workflow.ts): find the orders in review a filter
 * matches, and put the decision to one order through its `decideReview` update — the same update
 * the single review route sends, under the update ID `bulk:<bulkId>` so a retry is the same update.
 */
import { heartbeat } from '@temporalio/activity';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  decideReviewUpdate,
  parseOrderWorkflowId,
  statusQuery,
  type ReviewDecision,
} from '../../contract/order';
import type { BulkReviewItem, BulkReviewTarget } from '../../contract/bulk-review';

/** Orders whose view is read at once when a reason filter needs it. */
const REASON_READS_AT_ONCE = 8;

export function createBulkReviewActivities(temporal: Client | undefined) {
  const client = () => {
    if (!temporal) throw new Error('this worker has no Temporal client for bulk decisions');
    return temporal;
  };
  return {
    async findBulkReviewTargets(options: {
      query: string;
      reason?: string;
      maxOrders: number;
    }): Promise<{ targets: BulkReviewTarget[]; matched: number; truncated: boolean }> {
      const candidates: BulkReviewTarget[] = [];
      const seen = new Set<string>();
      // Without a reason filter, one more than the maximum tells whether more matched.
      const wanted = options.reason === undefined ? options.maxOrders + 1 : Number.POSITIVE_INFINITY;
      for await (const execution of client().workflow.list({ query: options.query })) {
        if (seen.has(execution.workflowId)) continue;
        seen.add(execution.workflowId);
        const parsed = parseOrderWorkflowId(execution.workflowId);
        candidates.push({
          workflowId: execution.workflowId,
          ref: parsed?.ref ?? execution.workflowId,
          ...(parsed?.client ? { client: parsed.client } : {}),
        });
        if (candidates.length >= wanted) break;
        if (candidates.length % 100 === 0) heartbeat();
      }
      const matching =
        options.reason === undefined ? candidates : await withReason(client(), candidates, options.reason);
      return {
        targets: matching.slice(0, options.maxOrders),
        matched: matching.length,
        truncated: matching.length > options.maxOrders,
      };
    },

    async decideForBulk({
      target,
      decision,
      bulkId,
    }: {
      target: BulkReviewTarget;
      decision: ReviewDecision;
      bulkId: string;
    }): Promise<BulkReviewItem> {
      const handle = client().workflow.getHandle(target.workflowId);
      try {
        const { outcome, refusal, view } = await handle.executeUpdate(decideReviewUpdate, {
          args: [decision],
          updateId: `bulk:${bulkId}`,
        });
        return {
          ...target,
          outcome,
          status: view.status,
          ...(refusal ? { refusal, reason: refusal.reason } : {}),
        };
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return { ...target, outcome: 'not-found' };
        // The validator's rejection: settled meanwhile, or the decision cannot apply to this order.
        if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
          return { ...target, outcome: 'rejected', reason: err.cause.message };
        }
        throw err;
      }
    },
  };
}

export type BulkReviewActivities = ReturnType<typeof createBulkReviewActivities>;

/** The candidates whose review reason contains `reason` (case-insensitive), read from each order's view. */
async function withReason(
  temporal: Client,
  candidates: BulkReviewTarget[],
  reason: string,
): Promise<BulkReviewTarget[]> {
  const needle = reason.toLowerCase();
  const keep: boolean[] = new Array<boolean>(candidates.length).fill(false);
  let next = 0;
  const lane = async () => {
    while (next < candidates.length) {
      const index = next++;
      const view = await temporal.workflow
        .getHandle(candidates[index]!.workflowId)
        .query(statusQuery)
        .catch(() => undefined);
      keep[index] = view?.review?.reason.toLowerCase().includes(needle) ?? false;
      heartbeat();
    }
  };
  await Promise.all(Array.from({ length: REASON_READS_AT_ONCE }, lane));
  return candidates.filter((_, i) => keep[i]);
}
