/**
 * Statements' kept days (contract/statement.ts, docs/operators.md "Statements and reconciliation").
 *
 * `statementDayWorkflow` is a day's summary: its memo, set by whoever starts it, is what it keeps;
 * it ends at once, and visibility keeps the memo of the closed run. `scheduledStatementDaysWorkflow`
 * is what the nightly Schedule starts: the last days summed for every client in one activity (the
 * orders never enter the history, only the report). Deterministic: all I/O in
 * src/statements/statement-days.activities.ts.
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { StatementDaysActivities } from './statement-days.activities';
import {
  STATEMENT_DAYS_PRIORITY,
  type ScheduledStatementDaysInput,
  type StatementDaysReport,
} from '../../contract/statement';

/** Days looked at each night: yesterday, and the two before it, whose watches have closed since. */
const DEFAULT_DAYS = 3;

const { summarizeStatementDays } = proxyActivities<StatementDaysActivities>({
  startToCloseTimeout: 60 * 60_000,
  heartbeatTimeout: 60_000,
  retry: { initialInterval: 1_000, maximumInterval: 5 * 60_000, maximumAttempts: 10 },
  priority: STATEMENT_DAYS_PRIORITY,
});

/** Set by Temporal on every workflow a Schedule starts. */
const ScheduledStartTimeAttribute = defineSearchAttributeKey(
  'TemporalScheduledStartTime',
  SearchAttributeType.DATETIME,
);

export async function statementDayWorkflow(): Promise<void> {
  // The summary is the memo; nothing to do.
}

export async function scheduledStatementDaysWorkflow(
  input: ScheduledStatementDaysInput = {},
): Promise<StatementDaysReport> {
  const scheduledFor =
    workflowInfo().typedSearchAttributes.get(ScheduledStartTimeAttribute) ?? workflowInfo().startTime;
  return summarizeStatementDays({ at: scheduledFor.toISOString(), days: input.days ?? DEFAULT_DAYS });
}
