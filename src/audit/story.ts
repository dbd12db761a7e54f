/**
 * An order's story from its workflow history: what happened, in order, with timing and who did
 * it — every provider call and its answer, every status change, every decision with its sender.
 *
 * Built from the history's event types, not from what today's lifecycle happens to do, so it stays
 * true when the lifecycle changes: activities (by type, with their arguments and their result or
 * failure), local activities (their markers), signals, updates (accepted and completed), search
 * attribute upserts (the order's status lives in `OrderStatus`), markers, timers, workflow task
 * failures, and how each run ended. Task bookkeeping (workflow task scheduled/started/completed)
 * is left out. Payloads are decoded with the data converter the story is given (the codec's keys),
 * and masked afterwards by the caller (./mask.ts) unless secrets were asked for.
 */
import type { LoadedDataConverter, Payload } from '@temporalio/common';
import { ApplicationFailure, CancelledFailure, ServerFailure, TimeoutFailure } from '@temporalio/common';
import {
  decodeArrayFromPayloads,
  decodeOptionalFailureToOptionalError,
} from '@temporalio/common/lib/internal-non-workflow';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { closesRun } from '../temporal';
import type { CheckOutcome, PollOutcome, Submission } from '../../contract/activity-outcomes';
import type { DecisionOutcome, OrderView, ReviewDecision } from '../../contract/order';
import type { ProviderStatus } from '../../contract/provider';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Payloads = temporal.api.common.v1.IPayloads;
type ProtoFailure = temporal.api.failure.v1.IFailure;

/** One run of the workflow: a continue-as-new starts the next. */
export interface AuditRun {
  runId: string;
  events: HistoryEvent[];
}

export const auditEntryKinds = [
  'run_started',
  'status',
  'search_attributes',
  'activity',
  'signal',
  'update',
  'timer',
  'marker',
  'workflow_task_failed',
  'continued_as_new',
  'closed',
  'other',
] as const;
export type AuditEntryKind = (typeof auditEntryKinds)[number];

/** A failure as the story shows it: its type and message, the provider's codes in `details`. */
export interface AuditFailure {
  type: string;
  message: string;
  nonRetryable?: boolean;
  timeoutType?: string;
  details?: unknown[];
  cause?: AuditFailure;
}

/** An operator decision, from the payload of the signal or update that carried it. */
export interface AuditDecision {
  decision: unknown;
  /** Who decided, as typed (Temporal UI, CLI) or the display name the API passed on. */
  operator?: unknown;
  /** The API client that sent it (set by the API from the caller's key, not by the body). */
  decidedBy?: unknown;
  note?: unknown;
  /** Applied although the provider's answer would have refused it. */
  force?: unknown;
  /** A gift card's provider order id, brought by the operator. */
  orderId?: unknown;
}

/**
 * What the order answered a decision sent as an update (`decideReview`): applied, rechecked,
 * resumed or refused (with why), and until when the provider is watched when it was applied
 * unconfirmed. The order's view that comes with the answer is left out: the statuses and the
 * final view tell it.
 */
export interface AuditDecisionAnswer {
  decisionOutcome: string;
  refusal?: unknown;
  watchUntil?: unknown;
}

export interface AuditEntry {
  /** ISO time of the event the entry stands at (an activity: when its outcome was recorded). */
  at: string;
  kind: AuditEntryKind;
  /** 1 for the first run, +1 at each continue-as-new. */
  run: number;
  /** The history event the entry stands at, in its run. */
  eventId: number;
  [field: string]: unknown;
}

export interface OrderStory {
  runs: { runId: string; startedAt?: string; closedAt?: string; events: number }[];
  entries: AuditEntry[];
}

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
const eventMs = (event: HistoryEvent) => optionalTsToMs(event.eventTime) ?? 0;
const idOf = (value: unknown) => Number(value ?? 0);
const enumName = (values: Record<string, unknown>, value: unknown, prefix: string) => {
  const name = Object.entries(values).find(([, v]) => v === value)?.[0];
  return name ? name.replace(prefix, '') : String(value);
};

export async function buildOrderStory(runs: AuditRun[], converter: LoadedDataConverter): Promise<OrderStory> {
  const entries: AuditEntry[] = [];
  // What one run knew goes on to the next: a dispute is published by a run of its own.
  let carried: Carried = { status: undefined, providerStatus: undefined };
  for (const [index, run] of runs.entries()) {
    const built = await new RunStory(index + 1, converter, carried).build(run.events);
    carried = built.carried;
    entries.push(...foldRepeats(built.entries));
  }
  return {
    runs: runs.map((run) => ({
      runId: run.runId,
      startedAt: iso(run.events[0] ? eventMs(run.events[0]) : undefined),
      closedAt: iso(closeTime(run.events)),
      events: run.events.length,
    })),
    entries,
  };
}

function closeTime(events: HistoryEvent[]): number | undefined {
  const last = events.at(-1);
  return last && closesRun(last) ? eventMs(last) : undefined;
}

/** The order's last status and the provider's last answer, as a run ended. */
interface Carried {
  status: unknown;
  providerStatus: unknown;
}

class RunStory {
  readonly #entries: AuditEntry[] = [];
  readonly #activities = new Map<number, AuditEntry>();
  readonly #timers = new Map<number, AuditEntry>();
  readonly #updates = new Map<number, AuditEntry>();
  /** What the latest provider check read: a DISPUTED status entry says what contradicted the decision. */
  #lastProviderStatus: unknown;
  private status: unknown;

  constructor(
    private readonly run: number,
    private readonly converter: LoadedDataConverter,
    carried: Carried,
  ) {
    this.status = carried.status;
    this.#lastProviderStatus = carried.providerStatus;
  }

  async build(events: HistoryEvent[]): Promise<{ entries: AuditEntry[]; carried: Carried }> {
    for (const event of events) await this.#on(event);
    // Still open: where they began.
    this.#entries.push(...this.#activities.values(), ...this.#timers.values());
    this.#entries.sort((a, b) => a.eventId - b.eventId);
    return {
      entries: this.#entries,
      carried: { status: this.status, providerStatus: this.#lastProviderStatus },
    };
  }

  #entry(event: HistoryEvent, kind: AuditEntryKind, fields: Record<string, unknown> = {}): AuditEntry {
    return { at: iso(eventMs(event))!, kind, run: this.run, eventId: idOf(event.eventId), ...fields };
  }

  /** An entry whose place is the closing event (an activity, a timer): moved there. */
  #close(entry: AuditEntry, event: HistoryEvent, fields: Record<string, unknown>): void {
    Object.assign(entry, fields, { at: iso(eventMs(event)), eventId: idOf(event.eventId) });
    this.#entries.push(entry);
  }

  async #decode(payloads: Payloads | null | undefined): Promise<unknown[]> {
    if (!payloads?.payloads?.length) return [];
    return decodeArrayFromPayloads(this.converter, payloads.payloads as Payload[]);
  }

  async #decodeOne(payloads: Payloads | null | undefined): Promise<unknown> {
    return (await this.#decode(payloads))[0];
  }

  async #failure(failure: ProtoFailure | null | undefined): Promise<AuditFailure | undefined> {
    if (!failure) return undefined;
    return describeError(await decodeOptionalFailureToOptionalError(this.converter, failure));
  }

  /** The summary the SDK put on a timer or activity (Temporal UI metadata), when there is one. */
  async #summary(event: HistoryEvent): Promise<Record<string, unknown>> {
    const summary = event.userMetadata?.summary;
    if (!summary) return {};
    return { summary: (await decodeArrayFromPayloads(this.converter, [summary as Payload]))[0] };
  }

  /** Search attributes are never encoded: plain JSON, read with the payload converter. */
  #attributes(
    fields: Record<string, temporal.api.common.v1.IPayload> | null | undefined,
  ): Record<string, unknown> {
    return Object.fromEntries(
      Object.entries(fields ?? {}).map(([name, payload]) => {
        const value: unknown = this.converter.payloadConverter.fromPayload(payload as Payload);
        return [name, Array.isArray(value) && value.length === 1 ? value[0] : value];
      }),
    );
  }

  /** A status entry when OrderStatus changed, then the other attributes that did. */
  #searchAttributes(event: HistoryEvent, attributes: Record<string, unknown>): void {
    const { OrderStatus: status, ...others } = attributes;
    if (status !== undefined && status !== this.status) {
      this.#entries.push(
        this.#entry(event, 'status', {
          status,
          ...(this.status !== undefined ? { previous: this.status } : {}),
          // A decision the provider now contradicts: what the watch's last check read.
          ...(status === 'DISPUTED' && this.#lastProviderStatus !== undefined
            ? { providerStatus: this.#lastProviderStatus }
            : {}),
        }),
      );
      this.status = status;
    }
    if (Object.keys(others).length > 0)
      this.#entries.push(this.#entry(event, 'search_attributes', { changes: others }));
  }

  async #on(event: HistoryEvent): Promise<void> {
    const started = event.workflowExecutionStartedEventAttributes;
    if (started) {
      const attributes = this.#attributes(started.searchAttributes?.indexedFields);
      const { OrderStatus: _status, ...shown } = attributes;
      this.#entries.push(
        this.#entry(event, 'run_started', {
          workflowType: started.workflowType?.name,
          identity: started.identity || undefined,
          ...(started.continuedExecutionRunId ? { continuedFromRunId: started.continuedExecutionRunId } : {}),
          input: await this.#decode(started.input),
          searchAttributes: shown,
        }),
      );
      this.#searchAttributes(event, { OrderStatus: attributes.OrderStatus });
      return;
    }

    const upsert = event.upsertWorkflowSearchAttributesEventAttributes;
    if (upsert)
      return this.#searchAttributes(event, this.#attributes(upsert.searchAttributes?.indexedFields));

    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) {
      this.#activities.set(
        idOf(event.eventId),
        this.#entry(event, 'activity', {
          activityType: scheduled.activityType?.name,
          activityId: scheduled.activityId,
          scheduledAt: iso(eventMs(event)),
          input: await this.#decode(scheduled.input),
          outcome: 'pending',
          ...(await this.#summary(event)),
        }),
      );
      return;
    }
    const activityStarted = event.activityTaskStartedEventAttributes;
    if (activityStarted) {
      const entry = this.#activities.get(idOf(activityStarted.scheduledEventId));
      if (entry) {
        Object.assign(entry, {
          startedAt: iso(eventMs(event)),
          attempt: activityStarted.attempt,
          worker: activityStarted.identity || undefined,
          // Retries leave no event: the attempt that is recorded carries the failure before it.
          ...(activityStarted.lastFailure
            ? { lastFailure: await this.#failure(activityStarted.lastFailure) }
            : {}),
        });
      }
      return;
    }
    const completed = event.activityTaskCompletedEventAttributes;
    if (completed) {
      const result = await this.#decodeOne(completed.result);
      return this.#endActivity(event, completed.scheduledEventId, {
        outcome: 'completed',
        result,
        ...answerOf(result),
      });
    }
    const failed = event.activityTaskFailedEventAttributes;
    if (failed) {
      return this.#endActivity(event, failed.scheduledEventId, {
        outcome: 'failed',
        failure: await this.#failure(failed.failure),
      });
    }
    const timedOut = event.activityTaskTimedOutEventAttributes;
    if (timedOut) {
      return this.#endActivity(event, timedOut.scheduledEventId, {
        outcome: 'timed_out',
        failure: await this.#failure(timedOut.failure),
      });
    }
    const canceled = event.activityTaskCanceledEventAttributes;
    if (canceled) return this.#endActivity(event, canceled.scheduledEventId, { outcome: 'canceled' });
    if (event.activityTaskCancelRequestedEventAttributes) return;

    const marker = event.markerRecordedEventAttributes;
    if (marker) return this.#marker(event, marker);

    const timerStarted = event.timerStartedEventAttributes;
    if (timerStarted) {
      this.#timers.set(
        idOf(event.eventId),
        this.#entry(event, 'timer', {
          timerId: timerStarted.timerId,
          durationMs: optionalTsToMs(timerStarted.startToFireTimeout),
          startedAt: iso(eventMs(event)),
          outcome: 'pending',
          ...(await this.#summary(event)),
        }),
      );
      return;
    }
    const fired = event.timerFiredEventAttributes;
    if (fired) return this.#endTimer(event, fired.startedEventId, 'fired');
    const timerCanceled = event.timerCanceledEventAttributes;
    if (timerCanceled) return this.#endTimer(event, timerCanceled.startedEventId, 'canceled');

    const signaled = event.workflowExecutionSignaledEventAttributes;
    if (signaled) {
      const input = await this.#decode(signaled.input);
      this.#entries.push(
        this.#entry(event, 'signal', {
          name: signaled.signalName,
          // The identity Temporal recorded: the API process, or whoever sent it from the UI or CLI.
          identity: signaled.identity || undefined,
          input,
          ...decisionIn(input[0]),
        }),
      );
      return;
    }

    const accepted = event.workflowExecutionUpdateAcceptedEventAttributes;
    if (accepted) {
      const request = accepted.acceptedRequest;
      const input = await this.#decode(request?.input?.args);
      const entry = this.#entry(event, 'update', {
        name: request?.input?.name,
        updateId: request?.meta?.updateId,
        identity: request?.meta?.identity || undefined,
        input,
        ...decisionIn(input[0]),
        outcome: 'pending',
      });
      this.#updates.set(idOf(event.eventId), entry);
      this.#entries.push(entry);
      return;
    }
    const updateCompleted = event.workflowExecutionUpdateCompletedEventAttributes;
    if (updateCompleted) {
      const entry = this.#updates.get(idOf(updateCompleted.acceptedEventId));
      if (entry) {
        const outcome = updateCompleted.outcome;
        Object.assign(
          entry,
          { completedAt: iso(eventMs(event)) },
          outcome?.failure
            ? { outcome: 'failed', failure: await this.#failure(outcome.failure) }
            : { outcome: 'completed', ...decisionAnswerIn(await this.#decodeOne(outcome?.success)) },
        );
      }
      return;
    }

    const taskFailed = event.workflowTaskFailedEventAttributes;
    if (taskFailed) {
      this.#entries.push(
        this.#entry(event, 'workflow_task_failed', {
          cause: enumName(
            temporal.api.enums.v1.WorkflowTaskFailedCause,
            taskFailed.cause,
            'WORKFLOW_TASK_FAILED_CAUSE_',
          ),
          worker: taskFailed.identity || undefined,
          failure: await this.#failure(taskFailed.failure),
        }),
      );
      return;
    }

    const continued = event.workflowExecutionContinuedAsNewEventAttributes;
    if (continued) {
      this.#entries.push(this.#entry(event, 'continued_as_new', { newRunId: continued.newExecutionRunId }));
      return;
    }
    const done = event.workflowExecutionCompletedEventAttributes;
    if (done) {
      const result = await this.#decodeOne(done.result);
      const finalStatus = (result as Partial<OrderView> | undefined)?.status;
      this.#entries.push(
        this.#entry(event, 'closed', {
          outcome: 'completed',
          ...(finalStatus ? { status: finalStatus } : {}),
          result,
        }),
      );
      return;
    }
    const workflowFailed = event.workflowExecutionFailedEventAttributes;
    if (workflowFailed) {
      this.#entries.push(
        this.#entry(event, 'closed', {
          outcome: 'failed',
          failure: await this.#failure(workflowFailed.failure),
        }),
      );
      return;
    }
    if (event.workflowExecutionTimedOutEventAttributes) {
      this.#entries.push(this.#entry(event, 'closed', { outcome: 'timed_out' }));
      return;
    }
    const terminated = event.workflowExecutionTerminatedEventAttributes;
    if (terminated) {
      this.#entries.push(
        this.#entry(event, 'closed', {
          outcome: 'terminated',
          reason: terminated.reason || undefined,
          identity: terminated.identity || undefined,
        }),
      );
      return;
    }
    if (event.workflowExecutionCanceledEventAttributes) {
      this.#entries.push(this.#entry(event, 'closed', { outcome: 'canceled' }));
      return;
    }

    // Workflow task bookkeeping says nothing about the order.
    if (
      event.workflowTaskScheduledEventAttributes ||
      event.workflowTaskStartedEventAttributes ||
      event.workflowTaskCompletedEventAttributes ||
      event.workflowTaskTimedOutEventAttributes ||
      event.workflowExecutionUpdateAdmittedEventAttributes
    ) {
      return;
    }
    const attributes = Object.keys(event).find(
      (key) => key.endsWith('EventAttributes') && (event as Record<string, unknown>)[key],
    );
    this.#entries.push(
      this.#entry(event, 'other', {
        eventType: enumName(temporal.api.enums.v1.EventType, event.eventType, 'EVENT_TYPE_') || attributes,
      }),
    );
  }

  #endActivity(event: HistoryEvent, scheduledEventId: unknown, fields: Record<string, unknown>): void {
    const id = idOf(scheduledEventId);
    const entry = this.#activities.get(id);
    if (!entry) return;
    this.#activities.delete(id);
    if (fields.providerStatus !== undefined) this.#lastProviderStatus = fields.providerStatus;
    const started = Date.parse(String(entry.startedAt ?? entry.scheduledAt));
    this.#close(entry, event, { ...fields, durationMs: eventMs(event) - started });
  }

  #endTimer(event: HistoryEvent, startedEventId: unknown, outcome: 'fired' | 'canceled'): void {
    const id = idOf(startedEventId);
    const entry = this.#timers.get(id);
    if (!entry) return;
    this.#timers.delete(id);
    this.#close(entry, event, { outcome });
  }

  /**
   * Local activities leave a marker (`core_local_activity`) with their type and result; patches
   * (`core_patch`) name the change they guard. Other markers are shown with their details.
   */
  async #marker(
    event: HistoryEvent,
    marker: temporal.api.history.v1.IMarkerRecordedEventAttributes,
  ): Promise<void> {
    const details: Record<string, unknown> = {};
    for (const [key, payloads] of Object.entries(marker.details ?? {})) {
      const values = await this.#decode(payloads);
      details[key] = values.length === 1 ? values[0] : values;
    }
    if (marker.markerName === 'core_local_activity') {
      const data = (details.data ?? {}) as {
        activity_type?: unknown;
        activity_id?: unknown;
        attempt?: unknown;
      };
      const failure = await this.#failure(marker.failure);
      const answer = failure ? {} : answerOf(details.result);
      if (answer.providerStatus !== undefined) this.#lastProviderStatus = answer.providerStatus;
      this.#entries.push(
        this.#entry(event, 'activity', {
          local: true,
          activityType: data.activity_type,
          activityId: data.activity_id,
          attempt: data.attempt,
          ...(failure
            ? { outcome: 'failed', failure }
            : { outcome: 'completed', result: details.result, ...answer }),
        }),
      );
      return;
    }
    if (marker.markerName === 'core_patch') {
      const patch = (details['patch-data'] ?? details.patch_data) as { id?: unknown } | undefined;
      this.#entries.push(this.#entry(event, 'marker', { name: 'patch', patchId: patch?.id }));
      return;
    }
    this.#entries.push(this.#entry(event, 'marker', { name: marker.markerName, details }));
  }
}

/** What every provider check shows, whatever the order type (MobileCheck, InternetCheck, GiftCardOrderCheck). */
interface AnyCheck {
  status: ProviderStatus;
}
/** What the provider activities return (contract/activity-outcomes.ts): a check, a polling run, a send. */
type ProviderActivityResult = CheckOutcome<AnyCheck> | PollOutcome<AnyCheck> | Submission<AnyCheck>;

/**
 * What the provider answered, from a provider activity's result: a check that found the order
 * (its status) or did not (NOT_FOUND), every answer a polling run saw, a send that had to look
 * the order up. Any other activity's result (webhooks, the sweep) answers nothing.
 */
function answerOf(result: unknown): { providerStatus?: string; answers?: ProviderAnswerSeen[] } {
  if (typeof result !== 'object' || result === null) return {};
  const value = result as ProviderActivityResult;
  if ('observed' in value && Array.isArray(value.observed)) {
    const answers = value.observed.map((seen) => ({
      at: seen.at,
      status: seen.answer,
      ...(seen.times > 1 ? { times: seen.times } : {}),
    }));
    const last = answers.at(-1);
    return { ...(last ? { providerStatus: last.status } : {}), answers };
  }
  if ('found' in value) return value.found ? statusOf(value.check) : { providerStatus: 'NOT_FOUND' };
  if ('alreadySent' in value) return statusOf(value.check);
  return {};
}

function statusOf(check: AnyCheck | undefined): { providerStatus?: string } {
  return typeof check?.status === 'string' ? { providerStatus: check.status } : {};
}

/** One answer a polling activity saw: the provider's status (or NOT_FOUND, a failed check) and how often in a row. */
interface ProviderAnswerSeen {
  at: string;
  status: string;
  times?: number;
}

/** A decision's payload: the `resolveReview` signal's or the `decideReview` update's ReviewDecision. */
function decisionIn(payload: unknown): { decision?: AuditDecision } {
  const value = payload as Partial<ReviewDecision> | null | undefined;
  if (typeof value !== 'object' || value === null || !('decision' in value)) return {};
  const { decision, operator, decidedBy, note, force, orderId } = value;
  return {
    decision: {
      decision,
      ...(operator !== undefined ? { operator } : {}),
      ...(decidedBy !== undefined ? { decidedBy } : {}),
      ...(note !== undefined ? { note } : {}),
      ...(force !== undefined ? { force } : {}),
      ...(orderId !== undefined ? { orderId } : {}),
    },
  };
}

/**
 * An update's result; when it is a decision's answer (`{outcome, refusal?, view}`), its outcome
 * and refusal on the entry and the view left out of `result` (see AuditDecisionAnswer).
 */
function decisionAnswerIn(result: unknown): { result: unknown } & Partial<AuditDecisionAnswer> {
  const value = result as Partial<DecisionOutcome> | null | undefined;
  if (typeof value !== 'object' || value === null || typeof value.outcome !== 'string') return { result };
  const { view, ...answer } = value;
  // A watch already ended is an earlier decision's.
  const watch = view?.watch;
  const watchUntil = value.outcome === 'applied' && !watch?.ended ? watch?.until : undefined;
  return {
    result: answer,
    decisionOutcome: value.outcome,
    ...(value.refusal !== undefined ? { refusal: value.refusal } : {}),
    ...(watchUntil !== undefined ? { watchUntil } : {}),
  };
}

function describeError(err: Error | undefined): AuditFailure | undefined {
  if (!err) return undefined;
  const failure: AuditFailure = {
    type: err instanceof ApplicationFailure ? (err.type ?? 'ApplicationFailure') : err.name,
    message: err.message,
  };
  if (err instanceof ApplicationFailure) {
    if (err.nonRetryable) failure.nonRetryable = true;
    if (err.details?.length) failure.details = [...err.details];
  }
  if (err instanceof ServerFailure && err.nonRetryable) failure.nonRetryable = true;
  if (err instanceof TimeoutFailure && err.timeoutType) failure.timeoutType = err.timeoutType;
  if (err instanceof CancelledFailure && err.details.length) failure.details = [...err.details];
  const cause = describeError(err.cause instanceof Error ? err.cause : undefined);
  if (cause) failure.cause = cause;
  return failure;
}

/** The fields that make two activity entries "the same answer". */
function answerKey(entry: AuditEntry): string {
  return JSON.stringify([
    entry.activityType,
    entry.local,
    entry.outcome,
    entry.providerStatus,
    entry.result,
    entry.failure,
  ]);
}

/**
 * Identical answers in a row — the same activity type, outcome and result or failure, with only
 * timers between them (a poll that keeps reading PENDING) — fold into the first: `repeats` counts
 * the others, `lastAt` is when the last came, and the timers between them fold in too.
 */
export function foldRepeats(entries: AuditEntry[]): AuditEntry[] {
  const folded: AuditEntry[] = [];
  let lastActivity: AuditEntry | undefined;
  let timersSince: AuditEntry[] = [];
  for (const entry of entries) {
    if (entry.kind === 'timer' && lastActivity) {
      timersSince.push(entry);
      continue;
    }
    if (
      entry.kind === 'activity' &&
      lastActivity &&
      entry.outcome !== 'pending' &&
      answerKey(entry) === answerKey(lastActivity)
    ) {
      lastActivity.repeats = Number(lastActivity.repeats ?? 0) + 1;
      lastActivity.lastAt = entry.at;
      lastActivity.timersFolded = Number(lastActivity.timersFolded ?? 0) + timersSince.length;
      timersSince = [];
      continue;
    }
    folded.push(...timersSince, entry);
    timersSince = [];
    lastActivity = entry.kind === 'activity' && entry.outcome !== 'pending' ? entry : undefined;
  }
  folded.push(...timersSince);
  return folded;
}
