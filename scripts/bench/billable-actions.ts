/**
 * Billable actions of one workflow run, counted from its history by Temporal Cloud's published
 * rules (https://docs.temporal.io/cloud/actions; docs/contributors.md "Cost per order"). The
 * history does not show everything Cloud bills: recorded activity heartbeats are passed in (the
 * polling activity reports its own), and queries, rejected updates and workflow-task heartbeats
 * of long local activities leave no event at all.
 */
import type { LoadedDataConverter } from '@temporalio/common';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';
/** Upserts of this search attribute alone (patching's version marker) are not billed. */
const CHANGE_VERSION = 'TemporalChangeVersion';

export interface BillableActions {
  /** Workflow started (client start, continue-as-new, schedule); a child workflow start is 2. */
  starts: number;
  /** Each activity attempt: the schedule and every retry. */
  activityAttempts: number;
  /** Heartbeats that reached the server (passed in: no history event). */
  heartbeats: number;
  /** One per workflow task that recorded local activities, plus their retries. */
  localActivityTasks: number;
  timers: number;
  searchAttributeUpserts: number;
  signals: number;
  /** Accepted updates (a rejected one is billed too but never written to history). */
  updates: number;
  /** Resets, options updates, Nexus operations. */
  other: number;
  total: number;
}

export function billableActions(
  events: readonly HistoryEvent[],
  { heartbeats = 0 }: { heartbeats?: number } = {},
): BillableActions {
  const count: Omit<BillableActions, 'total'> = {
    starts: 0,
    activityAttempts: 0,
    heartbeats,
    localActivityTasks: 0,
    timers: 0,
    searchAttributeUpserts: 0,
    signals: 0,
    updates: 0,
    other: 0,
  };
  const tasksWithLocalActivities = new Set<string>();
  for (const event of events) {
    switch (event.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        count.starts++;
        break;
      case EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
        // The intent and the attempt to start it.
        count.starts += 2;
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        count.activityAttempts++;
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
        // Written once, for the last attempt: the attempts before it were retries.
        count.activityAttempts += Math.max(0, (event.activityTaskStartedEventAttributes?.attempt ?? 1) - 1);
        break;
      case EventType.EVENT_TYPE_MARKER_RECORDED: {
        const attrs = event.markerRecordedEventAttributes;
        if (attrs?.markerName === LOCAL_ACTIVITY_MARKER) {
          tasksWithLocalActivities.add(String(attrs.workflowTaskCompletedEventId));
        }
        break;
      }
      case EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
        count.localActivityTasks +=
          event.workflowTaskCompletedEventAttributes?.meteringMetadata
            ?.nonfirstLocalActivityExecutionAttempts ?? 0;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
        if (
          event.workflowTaskFailedEventAttributes?.cause ===
          temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW
        ) {
          count.other++;
        }
        break;
      case EventType.EVENT_TYPE_TIMER_STARTED:
        count.timers++;
        break;
      case EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: {
        const fields = event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
        const names = Object.keys(fields ?? {});
        if (names.length === 0 || names.some((name) => name !== CHANGE_VERSION)) {
          count.searchAttributeUpserts++;
        }
        break;
      }
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
        count.signals++;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
        count.updates++;
        break;
      // A signal to another workflow is billed in the signaled one's history.
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED:
      case EventType.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED:
      case EventType.EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED:
        count.other++;
        break;
    }
  }
  count.localActivityTasks += tasksWithLocalActivities.size;
  const total = Object.values(count).reduce((sum, n) => sum + n, 0);
  return { ...count, total };
}

/** Mean actions per workflow, by category and in all, over many runs. */
export function meanActions(counts: readonly BillableActions[]): BillableActions | undefined {
  if (counts.length === 0) return undefined;
  const keys = Object.keys(counts[0]!) as (keyof BillableActions)[];
  return Object.fromEntries(
    keys.map((key) => [
      key,
      Math.round((counts.reduce((s, c) => s + c[key], 0) / counts.length) * 100) / 100,
    ]),
  ) as unknown as BillableActions;
}

/**
 * The heartbeats the order's polling recorded, from what each polling activity returned
 * (PollProgress.heartbeats). A polling that failed or timed out returned nothing: not counted.
 */
export async function pollHeartbeats(
  events: readonly HistoryEvent[],
  converter: LoadedDataConverter,
): Promise<number> {
  const polls = new Set<string>();
  let heartbeats = 0;
  for (const event of events) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled && /^poll/.test(scheduled.activityType?.name ?? '')) polls.add(String(event.eventId));
    const completed = event.activityTaskCompletedEventAttributes;
    if (completed && polls.has(String(completed.scheduledEventId))) {
      const outcome = await decodeFromPayloadsAtIndex<{ heartbeats?: number }>(
        converter,
        0,
        completed.result?.payloads,
      );
      heartbeats += outcome.heartbeats ?? 0;
    }
  }
  return heartbeats;
}

/** Issue 23's limit for a normal order. */
export const MAX_ACTIONS = 5;

/** The report's lines: each order type's mean actions by kind, and what a read costs. */
export function actionLines(perType: readonly { type: string; actionsByKind?: BillableActions }[]): string[] {
  const lines = [
    'BILLABLE ACTIONS PER NORMAL ORDER  (Temporal Cloud rules, docs/contributors.md "Cost per order")',
  ];
  for (const { type, actionsByKind } of perType) {
    if (!actionsByKind) continue;
    const kinds = Object.entries(actionsByKind)
      .filter(([kind, n]) => kind !== 'total' && n > 0)
      .map(([kind, n]) => `${kind} ${n}`);
    lines.push(`  ${type}: ${actionsByKind.total} = ${kinds.join(' + ')}`);
  }
  lines.push('  a read (GET) of an open order: 1 more (the status query); of a closed one: none');
  return lines;
}
