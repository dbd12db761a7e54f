/**
 * The order sweep's Schedule (src/orders/sweep.workflow.ts): created or brought up to date by
 * `npm run temporal:setup`. One sweep at a time (overlap SKIP): a slow sweep is not stacked.
 */
import { ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { upsertSchedule } from '../temporal';

export const ORDER_SWEEP_SCHEDULE_ID = 'order-sweep';
export const orderSweepWorkflowType = 'orderSweepWorkflow';

export interface OrderSweepScheduleOptions {
  /** The orders' task queue: the sweep runs there and resumes the orders of that queue. */
  taskQueue: string;
  intervalMs: number;
  /** Default ORDER_SWEEP_SCHEDULE_ID; tests give their own. */
  scheduleId?: string;
}

/** Creates the schedule, or updates its interval and task queue; says which. */
export async function ensureOrderSweepSchedule(
  client: Client,
  { taskQueue, intervalMs, scheduleId = ORDER_SWEEP_SCHEDULE_ID }: OrderSweepScheduleOptions,
): Promise<'created' | 'updated'> {
  const spec = { intervals: [{ every: intervalMs }] };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: orderSweepWorkflowType,
    workflowId: scheduleId,
    taskQueue,
  };
  return upsertSchedule(client, {
    scheduleId,
    spec,
    action,
    policies: { overlap: ScheduleOverlapPolicy.SKIP },
    purpose: 'resume orders whose workflow closed without a final status',
  });
}
