/**
 * The sweep's activity (src/orders/sweep.workflow.ts): finds every order whose latest workflow run
 * closed without a final status (terminated, timed out, failed, or cancelled by older code) and
 * starts a new run under the same workflow ID with the closed run's input and last view, marked
 * `resumed` (src/orders/reopen.ts): the new run looks the order up at the provider and never sends again unless the
 * provider certainly never had it (the settle rules of "Never send twice").
 */
import { log } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import {
  finalStatuses,
  orderInputQuery,
  OrderStatusAttribute,
  statusQuery,
  workflowTypeByOrderType,
} from '../../contract/order';
import { ownSearchAttributes, reopenedInput, reopenOrder } from './reopen';

/** The closed-run statuses a sweep resumes, as visibility queries name them. */
const strandedStatuses = ['Terminated', 'TimedOut', 'Failed', 'Canceled'];
const strandedNames: readonly string[] = ['TERMINATED', 'TIMED_OUT', 'FAILED', 'CANCELLED'];

export function strandedOrdersQuery(taskQueue: string): string {
  const types = Object.values(workflowTypeByOrderType).map((t) => `'${t}'`);
  const statuses = strandedStatuses.map((s) => `'${s}'`);
  const final = finalStatuses.map((s) => `'${s}'`);
  return (
    `TaskQueue = '${taskQueue}' AND WorkflowType IN (${types.join(', ')}) ` +
    `AND ExecutionStatus IN (${statuses.join(', ')}) AND ${OrderStatusAttribute.name} NOT IN (${final.join(', ')})`
  );
}

export function createSweepActivities(temporal: Client | undefined) {
  return {
    async resumeStrandedOrders(taskQueue: string): Promise<{ resumed: string[] }> {
      if (!temporal) throw new Error('this worker has no Temporal client for the sweep');
      const resumed: string[] = [];
      for await (const closed of temporal.workflow.list({ query: strandedOrdersQuery(taskQueue) })) {
        const stillStranded = async () => {
          const latest = await temporal.workflow.getHandle(closed.workflowId).describe();
          // A later run exists (resumed by another sweep, or a new order under a reused ID): not ours.
          return latest.runId === closed.runId && strandedNames.includes(latest.status.name)
            ? latest
            : undefined;
        };
        if (!(await stillStranded())) continue;
        const run = temporal.workflow.getHandle(closed.workflowId, closed.runId);
        // A closed run answers queries by replaying its history on a worker.
        const input = await run.query(orderInputQuery);
        const view = await run.query(statusQuery).catch(() => undefined);
        if (view && finalStatuses.includes(view.status)) continue;
        // Again right before the start: the queries take a worker's replay, time enough for another
        // sweep (a second worker's, a manual trigger) to resume the order and that run to close.
        const latest = await stillStranded();
        if (!latest) continue;
        const { started } = await reopenOrder(temporal, {
          workflowId: closed.workflowId,
          latest,
          input: reopenedInput(
            input,
            view,
            { resumed: { closedAs: latest.status.name, at: new Date().toISOString() } },
            // The closed run's continuation goes on: the new run starts where the closed one was.
            'carried',
          ),
          searchAttributes: ownSearchAttributes(latest.typedSearchAttributes),
        });
        if (!started) continue;
        log.warn('order resumed after its workflow closed without a final status', {
          workflowId: closed.workflowId,
          closedAs: latest.status.name,
        });
        resumed.push(closed.workflowId);
      }
      return { resumed };
    },
  };
}

export type SweepActivities = ReturnType<typeof createSweepActivities>;
