/**
 * The order sweep (docs/operators.md "What Temporal's buttons do to an order"): run by a Temporal
 * Schedule every ORDER_SWEEP_INTERVAL_MS (created by `npm run temporal:setup`). Termination, a run
 * timeout or a failed run closes an order's workflow without a final status, and no workflow code
 * can intercept that; the sweep finds such orders and resumes each in a new run under the same
 * workflow ID, which looks the order up at the provider before anything else (OrderInput.resumed).
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { SweepActivities } from './sweep.activities';

const { resumeStrandedOrders } = proxyActivities<SweepActivities>({
  // Each order costs a describe, two queries of its closed run and a start.
  startToCloseTimeout: 5 * 60_000,
  retry: { maximumAttempts: 3 },
});

/** Resumes the stranded orders of the task queue it runs on (the orders' own, set by its Schedule). */
export async function orderSweepWorkflow(): Promise<{ resumed: string[] }> {
  return resumeStrandedOrders(workflowInfo().taskQueue);
}
