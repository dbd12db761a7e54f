/** What the chaos verdict asks Temporal directly: how many order workflows exist, and what hit one. */
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { ProviderFailureType } from '../../contract/activity-outcomes';
import { fetchRuns } from '../../src/audit/history';
import { orderWorkflowId, workflowTypeByOrderType } from '../../contract/order';

const orderTypes = Object.values(workflowTypeByOrderType)
  .map((type) => `'${type}'`)
  .join(', ');

const { EventType } = temporal.api.enums.v1;
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

/** Events that show an order was hit by trouble: a provider call failed or timed out, or a worker vanished. */
const troubleEvents = new Map<number, string>([
  [EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED, 'an activity failed'],
  [EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, 'an activity timed out'],
  [EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, 'a workflow task failed'],
  [EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, 'a workflow task timed out'],
]);

export class TemporalProbe {
  private constructor(
    private readonly connection: Connection,
    private readonly client: Client,
  ) {}

  static async connect(address: string, namespace: string): Promise<TemporalProbe> {
    const connection = await Connection.connect({ address });
    return new TemporalProbe(connection, new Client({ connection, namespace }));
  }

  /**
   * Order workflows, one per order: runs that continued as new count once. Visibility trails the
   * workflows a little, so the count is read until it reaches `expected` or `withinMs` passes.
   */
  async countOrders(expected: number, withinMs = 15_000): Promise<number> {
    const deadline = Date.now() + withinMs;
    for (;;) {
      const { count } = await this.client.workflow.count(
        // Order workflows only: an order's webhook delivery workflow is not an order.
        `WorkflowType IN (${orderTypes}) AND ExecutionStatus != 'ContinuedAsNew'`,
      );
      if (count === expected || Date.now() >= deadline) return count;
      await sleep(500);
    }
  }

  /**
   * The first sign of trouble in the order's history (every run: an order in review waits in a run
   * of its own, after the one that was hit), or undefined if it ran clean.
   * The lean lifecycle hides two things from the event types: a local activity's failure (the
   * first send) is in its marker, and a polling activity is retried by design (each retry is a
   * check of an open order), so only its last attempt's failure other than "still open" counts.
   */
  async troubleOf(ref: string): Promise<string | undefined> {
    const workflowId = orderWorkflowId(ref);
    // The raw describe: this client has no codec, and the SDK's would decode the (encrypted) memo.
    const { workflowExecutionInfo } = await this.client.workflowService.describeWorkflowExecution({
      namespace: this.client.options.namespace,
      execution: { workflowId },
    });
    const runs = await fetchRuns(this.client, workflowId, workflowExecutionInfo?.execution?.runId ?? '');
    const typeBySchedule = new Map<string, string>();
    for (const event of runs.flatMap((run) => run.events)) {
      const trouble = event.eventType ? troubleEvents.get(event.eventType) : undefined;
      if (trouble) return trouble;
      const marker = event.markerRecordedEventAttributes;
      if (marker?.markerName === LOCAL_ACTIVITY_MARKER && marker.failure) return 'a local activity failed';
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (scheduled) typeBySchedule.set(String(event.eventId), scheduled.activityType?.name ?? '');
      const started = event.activityTaskStartedEventAttributes;
      if (!started) continue;
      const attempt = started.attempt ?? 1;
      if (!/^poll/.test(typeBySchedule.get(String(started.scheduledEventId)) ?? '')) {
        if (attempt > 1) return `an activity was retried (attempt ${attempt})`;
      } else if (
        started.lastFailure &&
        started.lastFailure.applicationFailureInfo?.type !== ProviderFailureType.stillOpen
      ) {
        // Only the last attempt's previous failure is recorded: a check that failed just before.
        return 'a check failed while polling';
      }
    }
    return undefined;
  }

  close(): Promise<void> {
    return this.connection.close();
  }
}
