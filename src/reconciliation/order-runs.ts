/**
 * An order's runs as the reconciliation reads them: the latest described, a closed run's last
 * view, and an order whose latest run is open reported as it stands.
 */
import { WorkflowNotFoundError, type Client, type WorkflowExecutionDescription } from '@temporalio/client';
import { statusQuery, type OrderView } from '../../contract/order';
import type { ItemOutcome, ReconciliationItem } from '../../contract/reconciliation';

/** The latest run of an order, described; undefined when it never existed. */
export async function describeOrder(
  temporal: Client,
  workflowId: string,
): Promise<WorkflowExecutionDescription | undefined> {
  try {
    return await temporal.workflow.getHandle(workflowId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

/** A closed run's last view: its result when it completed, else a replay (undefined if it fails). */
export async function closedView(temporal: Client, workflowId: string, latest: WorkflowExecutionDescription) {
  const run = temporal.workflow.getHandle(workflowId, latest.runId);
  if (latest.status.name === 'COMPLETED') return (await run.result()) as OrderView;
  return run.query(statusQuery).catch(() => undefined);
}

/**
 * An order whose latest run is open (or closed again since the matching): reported as it stands.
 * A dispute, by this reconciliation or an earlier one or by the watch, counts as disputed with its
 * evidence, so a re-run of a day reports what the first run found.
 */
export async function asItStands(
  temporal: Client,
  workflowId: string,
  latest: WorkflowExecutionDescription,
  item: (outcome: ItemOutcome, evidence: string) => ReconciliationItem,
): Promise<ReconciliationItem> {
  const handle = temporal.workflow.getHandle(workflowId, latest.runId);
  const view: OrderView | undefined =
    latest.status.name === 'COMPLETED'
      ? ((await handle.result()) as OrderView)
      : await handle.query(statusQuery).catch(() => undefined);
  if (view?.status === 'DISPUTED') {
    const by = view.dispute?.reconciliation
      ? `the reconciliation of ${view.dispute.reconciliation}`
      : 'the watch after a decision';
    return item(
      'disputed',
      `DISPUTED since ${view.review?.since ?? '?'} (by ${by}): ${view.review?.evidence ?? view.review?.reason ?? ''}`,
    );
  }
  return item(
    'open',
    `the order's latest run is ${latest.status.name} (${view?.status ?? 'status unknown'})`,
  );
}
