/**
 * The nightly reconciliation's Schedule (src/reconciliation/reconciliation.workflow.ts): created or brought up to
 * date by `npm run temporal:setup`. Every day at RECONCILE_AT in RECONCILE_TIME_ZONE it starts the
 * reconciliation of the day before; one at a time (overlap SKIP), and a run missed while Temporal
 * was down is caught up within a day.
 */
import { ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { upsertSchedule } from '../temporal';
import {
  RECONCILIATION_PRIORITY,
  RECONCILIATION_SCHEDULE_ID,
  SCHEDULED_RECONCILIATION_WORKFLOW,
  type ScheduledReconciliationInput,
} from '../../contract/reconciliation';

export interface ReconciliationScheduleOptions {
  /** The orders' task queue: the reconciliation's calls share its provider rate limit. */
  taskQueue: string;
  /** `HH:MM`. */
  at: string;
  timeZone: string;
  /** Default RECONCILIATION_SCHEDULE_ID; tests give their own. */
  scheduleId?: string;
}

/** Creates the schedule, or updates its time, zone and task queue; says which. */
export async function ensureReconciliationSchedule(
  client: Client,
  { taskQueue, at, timeZone, scheduleId = RECONCILIATION_SCHEDULE_ID }: ReconciliationScheduleOptions,
): Promise<'created' | 'updated'> {
  const [hour, minute] = at.split(':').map(Number);
  const spec = { calendars: [{ hour: hour!, minute: minute! }], timezone: timeZone };
  const input: ScheduledReconciliationInput = { timeZone };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: SCHEDULED_RECONCILIATION_WORKFLOW,
    workflowId: scheduleId,
    taskQueue,
    args: [input],
    priority: RECONCILIATION_PRIORITY,
  };
  const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 day' as const };
  return upsertSchedule(client, {
    scheduleId,
    spec,
    action,
    policies,
    purpose: 'reconcile the day before against the provider ledger',
  });
}
