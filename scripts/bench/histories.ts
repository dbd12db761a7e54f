/**
 * What Temporal knows about a phase's workflows: waiting until they have closed (visibility count),
 * their close times and order status (visibility list), and per workflow the history: events,
 * activities scheduled by type (the provider checks), attempts, timers and when the send finished.
 */
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { temporal } from '@temporalio/proto';
import pLimit from 'p-limit';
import { OrderStatusAttribute } from '../../contract/order';
import { billableActions, type BillableActions } from './billable-actions';
import { summarize, type Summary } from './stats';

const EventType = temporal.api.enums.v1.EventType;

/** Closed for good: a run that continued as new is not the end of its workflow. */
const CLOSED = 'ExecutionStatus != "Running" AND ExecutionStatus != "ContinuedAsNew"';

export interface WaitResult {
  closed: number;
  /** Still running, parked in NEEDS_REVIEW for an operator: settled, but not final. */
  inReview: number;
  timedOut: boolean;
  waitedS: number;
}

/**
 * Polls visibility until `expected` workflows of the prefix have settled — closed, or (orders)
 * waiting in NEEDS_REVIEW, which only an operator or a recheck much later can end — or `timeoutS`
 * has passed.
 */
export async function waitClosed(
  client: Client,
  workflowIdPrefix: string,
  expected: number,
  {
    timeoutS,
    intervalMs = 1_000,
    assertAlive = () => {},
    progress,
  }: {
    timeoutS: number;
    intervalMs?: number;
    assertAlive?: () => void;
    progress?: (closed: number) => void;
  },
): Promise<WaitResult> {
  const t0 = Date.now();
  const mine = `WorkflowId STARTS_WITH "${workflowIdPrefix}"`;
  const closedQuery = `${mine} AND ${CLOSED}`;
  const reviewQuery = `${mine} AND ExecutionStatus = "Running" AND ${OrderStatusAttribute.name} = "NEEDS_REVIEW"`;
  let closed = 0;
  let inReview = 0;
  let lastProgress = Date.now();
  while (Date.now() - t0 < timeoutS * 1000) {
    assertAlive();
    closed = (await client.workflow.count(closedQuery)).count;
    inReview = closed < expected ? (await client.workflow.count(reviewQuery)).count : 0;
    if (closed + inReview >= expected) {
      return { closed, inReview, timedOut: false, waitedS: (Date.now() - t0) / 1000 };
    }
    if (progress && Date.now() - lastProgress >= 10_000) {
      progress(closed);
      lastProgress = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return { closed, inReview, timedOut: true, waitedS: (Date.now() - t0) / 1000 };
}

export interface ClosedWorkflow {
  workflowId: string;
  workflowType: string;
  status: string;
  /** The order's OrderStatus search attribute (orders only). */
  orderStatus?: string;
  startMs: number;
  closeMs?: number;
  historyLength: number;
}

/** Every workflow of the prefix from visibility (running ones too). */
export async function listWorkflows(client: Client, workflowIdPrefix: string): Promise<ClosedWorkflow[]> {
  const out: ClosedWorkflow[] = [];
  for await (const info of client.workflow.list({ query: `WorkflowId STARTS_WITH "${workflowIdPrefix}"` })) {
    if (info.status.name === 'CONTINUED_AS_NEW') continue;
    out.push({
      workflowId: info.workflowId,
      workflowType: info.type,
      status: info.status.name,
      orderStatus: info.typedSearchAttributes.get(OrderStatusAttribute),
      startMs: info.startTime.getTime(),
      closeMs: info.closeTime?.getTime(),
      historyLength: info.historyLength,
    });
  }
  return out;
}

export interface HistoryFacts {
  workflowId: string;
  events: number;
  /** ActivityTaskScheduled events by activity type. */
  scheduled: Record<string, number>;
  /** Attempts by activity type (retries inside one scheduled activity count here, not above). */
  attempts: Record<string, number>;
  timers: number;
  /**
   * Provider calls visible in the history: send/place activities (local ones by their markers) and
   * check activities. `checkAttempts` counts the provider checks: each attempt of a check
   * activity, and for a polling activity the checks its result reports (its attempts include a
   * first one that only waits for the first check to be due).
   */
  sendActivities: number;
  checkActivities: number;
  checkAttempts: number;
  /** When the send / placement activity completed (the provider's clock started just before). */
  sendCompletedMs?: number;
  /**
   * Workflow tasks that timed out before the send completed: a worker too starved to finish its
   * task in time, which the server hands out again only after the task's timeout.
   */
  taskTimeoutsBeforeSend: number;
  startMs?: number;
  closeMs?: number;
  continuedAsNew: boolean;
  /** Temporal Cloud's billable actions of this run (billable-actions.ts). */
  actions: BillableActions;
  /** Where the order's time went, ms summed over its tasks (see TimeBreakdown). */
  time: TimeBreakdown;
}

/**
 * Time an order spent, from its history: waiting in task queues (the worker had no free slot or
 * poller, or the server was slow to hand the task over), running tasks, and timers firing late.
 */
export interface TimeBreakdown {
  /** Workflow tasks: scheduled → started, and started → completed (worker run + round trip). */
  workflowTaskQueueMs: number;
  workflowTaskRunMs: number;
  /** Activities: scheduled → started (last attempt), started → completed. */
  activityQueueMs: number;
  activityRunMs: number;
  /** Timers: fired − started − their duration. */
  timerLateMs: number;
}

const isSend = (activityType: string) => /^(bench)?(send|place)/i.test(activityType);
const isCheck = (activityType: string) => /^(bench)?(check|poll)/i.test(activityType);
const isPoll = (activityType: string) => /^poll/.test(activityType);
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

export async function historyFacts(client: Client, workflowId: string): Promise<HistoryFacts> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const converter = client.options.loadedDataConverter;
  const events = history.events ?? [];
  const typeBySchedule = new Map<string, string>();
  const facts: HistoryFacts = {
    workflowId,
    events: events.length,
    scheduled: {},
    attempts: {},
    timers: 0,
    sendActivities: 0,
    checkActivities: 0,
    checkAttempts: 0,
    taskTimeoutsBeforeSend: 0,
    continuedAsNew: false,
    actions: billableActions([]),
    time: {
      workflowTaskQueueMs: 0,
      workflowTaskRunMs: 0,
      activityQueueMs: 0,
      activityRunMs: 0,
      timerLateMs: 0,
    },
  };
  let heartbeats = 0;
  const timeOf = new Map<string, number>();
  const timerDue = new Map<string, number>();
  const since = (eventId: unknown, at: number | undefined) => {
    const then = timeOf.get(String(eventId));
    return then === undefined || at === undefined ? 0 : at - then;
  };
  for (const event of events) {
    const at = event.eventTime ? tsToMs(event.eventTime) : undefined;
    if (at !== undefined) timeOf.set(String(event.eventId), at);
    switch (event.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
        facts.time.workflowTaskQueueMs += since(
          event.workflowTaskStartedEventAttributes?.scheduledEventId,
          at,
        );
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
        if (facts.sendCompletedMs === undefined) facts.taskTimeoutsBeforeSend++;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
        facts.time.workflowTaskRunMs += since(event.workflowTaskCompletedEventAttributes?.startedEventId, at);
        break;
      case EventType.EVENT_TYPE_TIMER_FIRED: {
        const started = event.timerFiredEventAttributes?.startedEventId;
        const due = timerDue.get(String(started));
        if (due !== undefined && at !== undefined) facts.time.timerLateMs += Math.max(0, at - due);
        break;
      }
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        facts.startMs = at;
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: {
        const type = event.activityTaskScheduledEventAttributes?.activityType?.name ?? 'unknown';
        typeBySchedule.set(String(event.eventId), type);
        facts.scheduled[type] = (facts.scheduled[type] ?? 0) + 1;
        if (isSend(type)) facts.sendActivities++;
        if (isCheck(type)) facts.checkActivities++;
        break;
      }
      case EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED: {
        const attrs = event.activityTaskStartedEventAttributes;
        const type = typeBySchedule.get(String(attrs?.scheduledEventId)) ?? 'unknown';
        const attempt = attrs?.attempt ?? 1;
        facts.time.activityQueueMs += since(attrs?.scheduledEventId, at);
        facts.attempts[type] = (facts.attempts[type] ?? 0) + attempt;
        if (isCheck(type) && !isPoll(type)) facts.checkAttempts += attempt;
        break;
      }
      case EventType.EVENT_TYPE_MARKER_RECORDED: {
        const attrs = event.markerRecordedEventAttributes;
        if (attrs?.markerName !== LOCAL_ACTIVITY_MARKER) break;
        const data = await decodeFromPayloadsAtIndex<{ activity_type?: string; attempt?: number }>(
          converter,
          0,
          attrs.details?.data?.payloads,
        );
        const type = data.activity_type ?? 'unknown';
        facts.attempts[type] = (facts.attempts[type] ?? 0) + (data.attempt ?? 1);
        if (isSend(type)) {
          facts.sendActivities++;
          if (facts.sendCompletedMs === undefined) facts.sendCompletedMs = at;
        }
        break;
      }
      case EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: {
        const attrs = event.activityTaskCompletedEventAttributes;
        facts.time.activityRunMs += since(attrs?.startedEventId, at);
        const type = typeBySchedule.get(String(attrs?.scheduledEventId));
        if (type && isSend(type) && facts.sendCompletedMs === undefined) facts.sendCompletedMs = at;
        if (type && isPoll(type)) {
          const outcome = await decodeFromPayloadsAtIndex<{ checks?: number; heartbeats?: number }>(
            converter,
            0,
            attrs?.result?.payloads,
          );
          facts.checkAttempts += outcome.checks ?? 0;
          heartbeats += outcome.heartbeats ?? 0;
        }
        break;
      }
      case EventType.EVENT_TYPE_TIMER_STARTED: {
        facts.timers++;
        const duration = event.timerStartedEventAttributes?.startToFireTimeout;
        if (at !== undefined && duration) timerDue.set(String(event.eventId), at + tsToMs(duration));
        break;
      }
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
        facts.continuedAsNew = true;
        facts.closeMs = at;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
        facts.closeMs = at;
        break;
    }
  }
  facts.actions = billableActions(events, { heartbeats });
  return facts;
}

export async function fetchHistories(
  client: Client,
  workflowIds: readonly string[],
  concurrency: number,
  progress?: (done: number) => void,
): Promise<HistoryFacts[]> {
  let done = 0;
  const limit = pLimit(concurrency);
  return Promise.all(
    workflowIds.map((workflowId) =>
      limit(async () => {
        const facts = await historyFacts(client, workflowId);
        if (++done % 1_000 === 0) progress?.(done);
        return facts;
      }),
    ),
  );
}

/** Per order, ms: where the time went (mean, p50, p99 …), and how long until the send had completed. */
export function timeBreakdown(histories: readonly HistoryFacts[]): Record<string, Summary> {
  const pick = (f: (h: HistoryFacts) => number | undefined) =>
    summarize(
      histories.flatMap((h) => {
        const v = f(h);
        return v === undefined ? [] : [v];
      }),
    );
  return {
    'start → send completed': pick((h) =>
      h.sendCompletedMs !== undefined && h.startMs !== undefined ? h.sendCompletedMs - h.startMs : undefined,
    ),
    'workflow tasks waiting': pick((h) => h.time.workflowTaskQueueMs),
    'workflow tasks running': pick((h) => h.time.workflowTaskRunMs),
    'activities waiting': pick((h) => h.time.activityQueueMs),
    'activities running': pick((h) => h.time.activityRunMs),
    'timers late': pick((h) => h.time.timerLateMs),
  };
}
