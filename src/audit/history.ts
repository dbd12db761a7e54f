/**
 * An order's whole history: every run of its workflow, oldest first, joined across
 * continue-as-new (each run's start names the run it continues).
 */
import type { Client } from '@temporalio/client';
import type { AuditRun } from './story';
import { untimed, type Timed } from '../temporal';

/**
 * A run continues as new after about 2,000 events (src/orders/lifecycle/state.workflow.ts), so this many
 * runs is far more history than an order makes; past it the story starts at the oldest run read.
 */
export const MAX_RUNS = 100;

/** `runId`: the latest run, as `describe` named it. `timed` puts each Temporal call under a deadline. */
export async function fetchRuns(
  client: Client,
  workflowId: string,
  runId: string,
  timed: Timed = untimed,
): Promise<AuditRun[]> {
  const runs: AuditRun[] = [];
  for (let next: string | undefined = runId; next && runs.length < MAX_RUNS;) {
    const history = await timed(() => client.workflow.getHandle(workflowId, next).fetchHistory());
    const events = history.events ?? [];
    runs.unshift({ runId: next, events });
    next = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  return runs;
}
