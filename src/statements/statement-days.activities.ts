/**
 * The nightly precompute of statements' closed days (src/statements/statement-days.workflow.ts). The summing
 * itself is the API's (src/statements/statement-days.ts), given to the worker as `statementDays`, so
 * a day kept by the night and one kept by a statement are summed by the same code.
 */
import { heartbeat } from '@temporalio/activity';
import type { StatementDaysReport } from '../../contract/statement';

/** What the worker gives: src/statements/statement-days.ts `StatementDays`. */
export interface StatementDaysSummarizer {
  summarizeRecentDays(nowMs: number, days: number, progress?: () => void): Promise<StatementDaysReport>;
}

export function createStatementDaysActivities(summarizer: StatementDaysSummarizer | undefined) {
  return {
    /** Sums the last `days` whole UTC days before `at` for every client, and keeps what changed. */
    async summarizeStatementDays(input: { at: string; days: number }): Promise<StatementDaysReport> {
      if (!summarizer) throw new Error('this worker has no Temporal client for the statements’ days');
      return summarizer.summarizeRecentDays(Date.parse(input.at), input.days, () => heartbeat());
    },
  };
}

export type StatementDaysActivities = ReturnType<typeof createStatementDaysActivities>;
