/**
 * The nightly reconciliation's activities (src/reconciliation/reconciliation.workflow.ts): which day "yesterday" is,
 * the day's orders and the provider's ledger matched (only the mismatches leave the activity, one
 * chunk at a time), and the re-check of one mismatch at the provider — which, when the provider
 * contradicts us, reopens the order as DISPUTED with the evidence (a new run of its workflow, as
 * the sweep starts one). A ledger row no order explains is checked by its own id (check-id), and
 * traced back to the order whose ref the provider shows, when there is one.
 *
 * All reads: a retried attempt (after a worker kill) reads again and finds the same. The one write,
 * reopening an order, is recognised on a retry by the order's view (`dispute.reconciliation`).
 *
 * This file keeps the activities; their work is in the files beside it: day.ts (time zones),
 * ledger-reader.ts (the resumable ledger read), order-listing.ts (the day's orders), matching.ts
 * (orders against rows, chunks), order-runs.ts (an order's runs read), provider-checks.ts (the
 * provider's answers), reopening.ts (the verdict, reopening as DISPUTED), check-by-id.ts (a row
 * no order explains).
 */
import type { Client } from '@temporalio/client';
import { finalStatuses, orderInputQuery } from '../../contract/order';
import type {
  ItemOutcome,
  MatchChunk,
  Mismatch,
  ReconciliationDay,
  ReconciliationItem,
} from '../../contract/reconciliation';
import { recheckRow } from './check-by-id';
import { previousDay } from './day';
import { chunkOf, describeRows, matchDay } from './matching';
import type { MatchInput } from './order-listing';
import { asItStands, closedView, describeOrder } from './order-runs';
import { askProvider, type ReconciliationProvider } from './provider-checks';
import { settle } from './reopening';

export type { ReconciliationProvider } from './provider-checks';

export function createReconciliationActivities(
  provider: ReconciliationProvider | undefined,
  temporal: Client | undefined,
) {
  const client = () => {
    if (!temporal) throw new Error('this worker has no Temporal client for the reconciliation');
    return temporal;
  };
  const upstream = () => {
    if (!provider) throw new Error('this worker has no provider client for the reconciliation');
    return provider;
  };

  return {
    /** The day before the Schedule's run, in the configured zone. */
    async reconciliationDayBefore(options: { at: string; timeZone: string }): Promise<ReconciliationDay> {
      return previousDay(Date.parse(options.at), options.timeZone);
    },

    /**
     * Matches the day's final orders with the provider's ledger. Returns the day's counts and one
     * chunk of what does not match (the mismatches whose key is above `after`, at most `limit`),
     * so a day of thousands of mismatches travels in results of a bounded size. Each call reads the
     * day again: a chunk is found by its cursor, not kept anywhere between calls.
     */
    async matchReconciliationChunk(
      input: MatchInput & { after?: string; limit: number },
    ): Promise<MatchChunk> {
      return chunkOf(await matchDay(upstream(), client(), input), input.after, input.limit);
    },

    /**
     * Asks the provider about one mismatch: an order by its own check (when the provider reports
     * the other final status the order is reopened as DISPUTED), a row by its id, a reopened
     * order as it stands.
     */
    async recheckReconciled(options: { mismatch: Mismatch; date: string }): Promise<ReconciliationItem> {
      const { mismatch, date } = options;
      if (mismatch.kind === 'unexplained-row') return recheckRow(client(), upstream(), mismatch, date);
      const item = (outcome: ItemOutcome, evidence: string): ReconciliationItem => ({
        kind: mismatch.kind,
        ref: mismatch.ref,
        ...(mismatch.client !== undefined && { client: mismatch.client }),
        workflowId: mismatch.workflowId,
        ...(mismatch.status !== undefined && { status: mismatch.status }),
        outcome,
        evidence: `${evidence}; ledger: ${describeRows(mismatch.rows)}`,
      });
      const latest = await describeOrder(client(), mismatch.workflowId);
      if (!latest) return item('unreachable', 'the order’s workflow is gone');
      // Already reopened (by this reconciliation before a worker kill, an earlier one, the watch),
      // resumed by the sweep, or in its watch: reported as it stands.
      if (mismatch.kind === 'reopened' || latest.runId !== mismatch.runId || latest.status.name === 'RUNNING')
        return asItStands(client(), mismatch.workflowId, latest, item);
      // Closed: completed, or terminated (or timed out) with a final view, which the sweep leaves alone.
      const view = await closedView(client(), mismatch.workflowId, latest);
      if (!view || !finalStatuses.includes(view.status))
        return item('open', `the order's workflow closed without a final view (${latest.status.name})`);
      const input = await client()
        .workflow.getHandle(mismatch.workflowId, latest.runId)
        .query(orderInputQuery);
      const answer = await askProvider(upstream(), input, view);
      if (answer.kind === 'unreachable') return item('unreachable', answer.detail);
      return settle(
        client(),
        { workflowId: mismatch.workflowId, runId: latest.runId },
        view,
        answer.status,
        date,
        `provider status ${answer.status}; ledger: ${describeRows(mismatch.rows)}`,
        item,
      );
    },
  };
}

export type ReconciliationActivities = ReturnType<typeof createReconciliationActivities>;
