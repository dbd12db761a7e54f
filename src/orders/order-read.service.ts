/**
 * The read path of `GET /v1/orders/{ref}`: an order's view from Temporal, whether or not a worker
 * runs. The caller (orders.ts) has described the workflow's current run and checked its owner;
 * this picks the cheapest source that is still the workflow's own word:
 *
 * - a run that COMPLETED returned its final view: it is read from the close event alone (one
 *   history read, no worker, no replay), decoded through the data converter (encryption included);
 * - a RUNNING one is asked (`status` query) when workers answer; when none does, the view is
 *   rebuilt from Temporal's records and marked `live: false`: the run's input (the request, and
 *   after a continue-as-new the view it carried over) with the status the workflow last published
 *   in its OrderStatus search attribute;
 * - a run that ended without a view (failed, terminated, cancelled, timed out) gets the same
 *   rebuilt view, with a timeline entry saying how the workflow ended.
 *
 * A query no worker answers costs the request its whole deadline, so after one goes unanswered the
 * next reads skip the query for a while (QueryGate) and one background query at a time checks
 * whether workers are back.
 */
import {
  WorkflowNotFoundError,
  type Client,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { temporal } from '@temporalio/proto';
import type { Logger } from 'pino';
import {
  OrderStatusAttribute,
  statusQuery,
  type OrderInput,
  type OrderView,
  type TimelineEntry,
} from '../../contract/order';
import { orderStatuses } from '../../contract/schemas';
import { GrpcStatus, grpcCode } from '../temporal';
import { closesRun } from '../temporal';
import type { Timed } from '../temporal';

/** How a view was read: from the workflow itself (`live`), or rebuilt from Temporal's records. */
export interface ReadView {
  view: OrderView;
  live: boolean;
}

/** The view of an order just accepted: what the workflow starts from (and what its input says). */
export function acceptedView(input: OrderInput): OrderView {
  const { request, acceptedAt } = input;
  return {
    ref: request.ref,
    type: request.type,
    status: 'ACCEPTED',
    request,
    acceptedAt,
    updatedAt: acceptedAt,
    timeline: [{ at: acceptedAt, status: 'ACCEPTED', event: 'Order accepted' }],
  };
}

/** A workflow result is trusted as a view only if it has a view's shape. */
export function looksLikeView(value: unknown, ref: string): value is OrderView {
  const v = value as Partial<OrderView> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    v.ref === ref &&
    typeof v.status === 'string' &&
    Array.isArray(v.timeline)
  );
}

/** How the timeline words a workflow that ended without returning its view. */
const endedWithoutView: Partial<Record<WorkflowExecutionDescription['status']['name'], string>> = {
  FAILED: 'failed',
  TERMINATED: 'was terminated',
  CANCELLED: 'was cancelled',
  TIMED_OUT: 'timed out',
};

/**
 * After a status query goes unanswered, how long reads of open orders skip it: long enough that a
 * dead worker costs one request its deadline now and then, not every request; short enough that
 * live views are back soon after a worker is (a background query checks meanwhile).
 */
export const DEFAULT_QUERY_RETRY_MS = 10_000;

/**
 * Whether to ask workflows their status: after an unanswered query, not until `retryMs` has passed
 * — unless a probe query answers first. At most one probe runs at a time.
 */
export class QueryGate {
  #skipUntil = 0;
  #probing = false;

  constructor(
    private readonly retryMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get open(): boolean {
    return this.now() >= this.#skipUntil;
  }

  unanswered(): void {
    this.#skipUntil = this.now() + this.retryMs;
  }

  answered(): void {
    this.#skipUntil = 0;
  }

  /** Runs `ask` as the one probe, unless one already runs; its outcome opens or keeps the gate. */
  probe(ask: () => Promise<unknown>): void {
    if (this.#probing) return;
    this.#probing = true;
    ask()
      .then(
        () => this.answered(),
        (err: unknown) => {
          if (isUnanswered(err)) this.unanswered();
        },
      )
      .finally(() => (this.#probing = false));
  }
}

/** No worker answered within the deadline (or the server gave up waiting for one). */
function isUnanswered(err: unknown): boolean {
  const code = grpcCode(err);
  return code === GrpcStatus.DEADLINE_EXCEEDED || code === GrpcStatus.CANCELLED;
}

/** The close event of a run known to be closed (of a running one, Temporal waits for it). */
const CLOSE_EVENT_ONLY = {
  historyEventFilterType: temporal.api.enums.v1.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
  waitNewEvent: false,
  skipArchival: true,
};

export class OrderReader {
  readonly #client: Client;
  readonly #timed: Timed;
  readonly #gate: QueryGate;

  constructor(client: Client, timed: Timed, queryRetryMs = DEFAULT_QUERY_RETRY_MS) {
    this.#client = client;
    this.#timed = timed;
    this.#gate = new QueryGate(queryRetryMs);
  }

  /**
   * The view of the run `description` describes (the current one). `ref` guards the result's
   * shape. Throws WorkflowNotFoundError when the run is gone (the caller answers 404).
   */
  async read(
    handle: WorkflowHandle,
    description: WorkflowExecutionDescription,
    ref: string,
    log: Logger,
    { asked = false }: { asked?: boolean } = {},
  ): Promise<ReadView> {
    const status = description.status.name;
    if (status === 'RUNNING') {
      // Asked already (and unanswered): straight to the records.
      const view = asked ? undefined : await this.queried(handle, log);
      return view ? { view, live: true } : { view: await this.fromRecords(description), live: false };
    }
    if (status === 'COMPLETED') {
      const result = await this.#result(description);
      if (looksLikeView(result, ref)) return { view: result, live: true };
      log.warn({ ref }, 'order view: the workflow result is not an order view; rebuilt from records');
    }
    return { view: await this.fromRecords(description), live: false };
  }

  /**
   * The current run's final view when it completed with one, from its last event alone (one RPC,
   * no describe); `open` while it runs; `other` when it ended otherwise or the result is no view.
   * Throws WorkflowNotFoundError when there is no such workflow.
   *
   * The last event, not the close event: Temporal answers a close-event read of a running workflow
   * only when it closes or the long poll times out (20 s), whatever `waitNewEvent` says.
   */
  async closedView(
    workflowId: string,
    ref: string,
    /** That run's, instead of the workflow ID's latest. */
    runId?: string,
  ): Promise<{ kind: 'completed'; view: OrderView } | { kind: 'open' | 'other' }> {
    const event = await this.#lastEvent(workflowId, runId);
    const completed = event?.workflowExecutionCompletedEventAttributes;
    if (!completed) return { kind: event && closesRun(event) ? 'other' : 'open' };
    const result = await this.#decode(completed.result?.payloads);
    return looksLikeView(result, ref) ? { kind: 'completed', view: result } : { kind: 'other' };
  }

  /**
   * A running order's view: the workflow's answer to the status query, or, when the query goes
   * unanswered or is skipped (QueryGate), undefined: the caller rebuilds it from the records.
   */
  async queried(handle: WorkflowHandle, log: Logger): Promise<OrderView | undefined> {
    if (!this.#gate.open) {
      this.#gate.probe(() => this.#timed(() => handle.query(statusQuery)));
      return undefined;
    }
    try {
      const view = await this.#timed(() => handle.query(statusQuery));
      this.#gate.answered();
      return view;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw err;
      if (isUnanswered(err)) this.#gate.unanswered();
      log.warn(
        { err, workflowId: handle.workflowId },
        'order view: status query failed; rebuilt from records',
      );
      return undefined;
    }
  }

  /** The completed run's result, from its close event: one history read, whatever the history's length. */
  async #result({ workflowId, runId }: WorkflowExecutionDescription): Promise<unknown> {
    const event = (await this.#history({ execution: { workflowId, runId }, ...CLOSE_EVENT_ONLY }))[0];
    return this.#decode(event?.workflowExecutionCompletedEventAttributes?.result?.payloads);
  }

  /**
   * What Temporal's records say without the workflow's help: the run's input (the request; after a
   * continue-as-new, the view it carried over) and the status the workflow last published.
   */
  async fromRecords(description: WorkflowExecutionDescription): Promise<OrderView> {
    const { workflowId, runId } = description;
    const started = (await this.#history({ execution: { workflowId, runId }, maximumPageSize: 1 }))[0];
    const input = (await this.#decode(started?.workflowExecutionStartedEventAttributes?.input?.payloads)) as
      OrderInput | undefined;
    if (!input?.request) throw new Error(`order view: run ${runId} of ${workflowId} has no order input`);
    const carried = input.continued?.view ?? acceptedView(input);
    const published = description.typedSearchAttributes.get(OrderStatusAttribute);
    const status = orderStatuses.find((s) => s === published) ?? carried.status;
    const view: OrderView = { ...carried, status };
    const ended = endedWithoutView[description.status.name];
    if (ended && description.closeTime) {
      const at = description.closeTime.toISOString();
      const entry: TimelineEntry = {
        at,
        status,
        event: `The order's workflow ${ended}; the status is the last it reported`,
      };
      return { ...view, updatedAt: at, timeline: [...view.timeline, entry] };
    }
    return view;
  }

  async #history(
    request: Omit<temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryRequest, 'namespace'>,
  ): Promise<temporal.api.history.v1.IHistoryEvent[]> {
    const { workflowService, options } = this.#client;
    const response = await this.#found(request.execution?.workflowId, () =>
      workflowService.getWorkflowExecutionHistory({ namespace: options.namespace, ...request }),
    );
    return response.history?.events ?? [];
  }

  /** The current run's latest event: never waits. */
  async #lastEvent(
    workflowId: string,
    runId?: string,
  ): Promise<temporal.api.history.v1.IHistoryEvent | undefined> {
    const { workflowService, options } = this.#client;
    const response = await this.#found(workflowId, () =>
      workflowService.getWorkflowExecutionHistoryReverse({
        namespace: options.namespace,
        execution: { workflowId, ...(runId && { runId }) },
        maximumPageSize: 1,
      }),
    );
    return response.history?.events?.[0];
  }

  /** A call about one workflow, timed; NOT_FOUND becomes WorkflowNotFoundError. */
  async #found<T>(workflowId: string | null | undefined, call: () => Promise<T>): Promise<T> {
    try {
      return await this.#timed(call);
    } catch (err) {
      if (grpcCode(err) === GrpcStatus.NOT_FOUND) {
        throw new WorkflowNotFoundError('order workflow not found', workflowId ?? '', undefined);
      }
      throw err;
    }
  }

  #decode(payloads: Payload[] | null | undefined): Promise<unknown> {
    if (!payloads?.length) return Promise.resolve(undefined);
    return decodeFromPayloadsAtIndex<unknown>(this.#client.options.loadedDataConverter, 0, payloads);
  }
}
