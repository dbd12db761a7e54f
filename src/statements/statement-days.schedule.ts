/**
 * The nightly precompute of statements' closed days (src/statements/statement-days.workflow.ts): created or
 * brought up to date by `npm run temporal:setup`, as the reconciliation's. Every day at `at` (UTC,
 * the statements' days) it sums the last days for every client; one at a time (overlap SKIP), and
 * a run missed while Temporal was down is caught up within a day.
 *
 * A Schedule just created is backfilled (Temporal's own backfill, one buffered run per night of the
 * last `backfillDays`), so a fresh deployment, or one whose Schedule was deleted to start over,
 * has its past days kept within minutes instead of its first statements summing them
 * (docs/operators.md "Statements and reconciliation").
 */
import { ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { upsertSchedule } from '../temporal';
import {
  SCHEDULED_STATEMENT_DAYS_WORKFLOW,
  STATEMENT_DAYS_PRIORITY,
  STATEMENT_DAYS_SCHEDULE_ID,
  type ScheduledStatementDaysInput,
} from '../../contract/statement';

export interface StatementDaysScheduleOptions {
  /** The orders' task queue: where the worker that sums them runs. */
  taskQueue: string;
  /** `HH:MM`, UTC. */
  at: string;
  /** Default STATEMENT_DAYS_SCHEDULE_ID; tests give their own. */
  scheduleId?: string;
  /** When the Schedule is created: the nights of this many past days are run (default none). */
  backfillDays?: number;
  now?: () => number;
}

const DAY_MS = 86_400_000;

/** Creates the schedule, or updates its time and task queue; says which. */
export async function ensureStatementDaysSchedule(
  client: Client,
  {
    taskQueue,
    at,
    scheduleId = STATEMENT_DAYS_SCHEDULE_ID,
    backfillDays = 0,
    now = Date.now,
  }: StatementDaysScheduleOptions,
): Promise<'created' | 'updated'> {
  const [hour, minute] = at.split(':').map(Number);
  const spec = { calendars: [{ hour: hour!, minute: minute! }], timezone: 'UTC' };
  const input: ScheduledStatementDaysInput = {};
  const action = {
    type: 'startWorkflow' as const,
    workflowType: SCHEDULED_STATEMENT_DAYS_WORKFLOW,
    workflowId: scheduleId,
    taskQueue,
    args: [input],
    priority: STATEMENT_DAYS_PRIORITY,
  };
  const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 day' as const };
  const outcome = await upsertSchedule(client, {
    scheduleId,
    spec,
    action,
    policies,
    purpose: 'sum the closed days of statements',
  });
  if (outcome === 'created' && backfillDays > 0) {
    const end = new Date(now());
    // One after another (each run lists its days once), behind every live order like the nightly one.
    await client.schedule.getHandle(scheduleId).backfill({
      start: new Date(end.getTime() - backfillDays * DAY_MS),
      end,
      overlap: ScheduleOverlapPolicy.BUFFER_ALL,
    });
  }
  return outcome;
}
