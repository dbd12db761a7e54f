/**
 * The order sweep's Schedule (workflows/order-sweep.ts): created or brought up to date by
 * `npm run temporal:setup`. One sweep at a time (overlap SKIP): a slow sweep is not stacked.
 */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';

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
  try {
    await client.schedule.create({
      scheduleId,
      spec,
      action,
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
      memo: { purpose: 'resume orders whose workflow closed without a final status' },
    });
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await client.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, spec, action }));
  return 'updated';
}
