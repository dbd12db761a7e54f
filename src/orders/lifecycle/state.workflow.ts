/**
 * An order's state and its transitions, shared by every phase (send, polling, review, watch): the
 * view the status query answers, the deadline, the decisions waiting, the watch, and the one way
 * each status change is made — noted in the timeline, published to search attributes and
 * announced to the client's webhooks.
 *
 * Deterministic workflow code: no I/O, no Node built-ins; Date.now() is the SDK's replay-safe clock.
 */
import {
  ApplicationFailure,
  log,
  proxyLocalActivities,
  setCurrentDetails,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { TypedSearchAttributes } from '@temporalio/common';
import type { AnnounceActivity } from '../../webhooks/workflows';
import { nextCheckDelayMs, type Submission } from '../../../contract/activity-outcomes';
import { decidedByWhom } from '../../../contract/review-decision';
import type { ReviewDecision } from '../../../contract/schemas';
import { statusEventType } from '../../../contract/event-types';
import type { AnnounceOutcome, DurableEndpoints, OrderEvent } from '../../../contract/webhooks';
import {
  decisionStatuses,
  defaultOrderTimings,
  type DecisionOutcome,
  type DecisionRefusal,
  type DecisionWatch,
  type OrderContinuation,
  type OrderInput,
  type OrderRequest,
  type OrderStatus,
  type OrderTimings,
  type OrderType,
  type OrderView,
  type ReviewResolution,
} from '../../../contract/order';
import { countDecisionOutcome } from './decision-metrics.workflow';
import { orderDetails, type ReviewNotice } from '../../../contract/ui-metadata';
import { interpretCheck } from './interpret.workflow';
import { recordSettlement } from './debit.workflow';
import { publishSearchAttributes, reviewRunAttributes } from './search-attributes.workflow';
import { assertLegalMove } from './transitions.workflow';
import type {
  AdaptedOrder,
  Interpretation,
  OpenStatus,
  OrderAdapter,
  ProviderCheck,
  QueuedDecision,
} from './types.workflow';

/** First retry of a failed provider call; further ones back off to the polling cap. */
export const RETRY_INITIAL_INTERVAL_MS = 1_000;

/**
 * Temporal warns at 10,240 events; continuing as new well before keeps replays fast and leaves
 * room for a burst of signals. A normal order uses about 15.
 */
const DEFAULT_HISTORY_EVENT_LIMIT = 2_000;
/** The view's timeline keeps its first entry and the latest ones; the history keeps everything. */
const MAX_TIMELINE_ENTRIES = 100;
/**
 * A fresh workflow's first task sees exactly its first three events (started, task scheduled,
 * task started). A longer history at the first activation means an earlier task failed or timed
 * out — possibly after its local-activity send reached the provider — or a signal came first.
 */
const FIRST_TASK_HISTORY_LENGTH = 3;
/**
 * Announcing an event is a local activity, so it costs the order one marker event and no task: it
 * tries each endpoint once itself (at most a few seconds) and hands the rest to the order's delivery
 * workflow with one signal-with-start. Retried until that is done: a lost event is a missed webhook.
 */
const announcer = proxyLocalActivities<AnnounceActivity>({
  startToCloseTimeout: 30_000,
  retry: { initialInterval: 1_000, backoffCoefficient: 2, maximumInterval: 60_000 },
});

export class Order<R extends OrderRequest, C extends ProviderCheck> {
  readonly request: R;
  readonly order: AdaptedOrder<R>;
  readonly timings: OrderTimings;
  readonly view: OrderView;
  /** Epoch ms after which a still-open order goes to NEEDS_REVIEW as stuck (renewed when polling resumes). */
  deadlineAt: number;
  /** Polling: how long to wait before the next check. */
  nextCheckMs: number;
  /**
   * Epoch ms: checks at the provider's pace end here (polling.ts). Set when this run first polls;
   * not carried over continue-as-new, so a run that continues an open order paces again.
   */
  pacedUntil: number | undefined = undefined;
  /** Valid operator decisions received in review, oldest first. */
  readonly decisions: QueuedDecision[] = [];
  /** This is the workflow's first task, never tried before (FIRST_TASK_HISTORY_LENGTH). */
  readonly freshFirstTask: boolean;
  /** Set while an operator's decision is watched. */
  watch: DecisionWatch | undefined;
  /** Webhook events: the last sequence number announced, and the announcements in flight, in order. */
  eventSequence: number;
  announcing: Promise<void> = Promise.resolve();
  /**
   * Endpoints already behind in the delivery workflow for this order: their later events follow
   * there, in sequence, without a direct try. `all` for an order whose earlier events were
   * announced before direct delivery existed (their delivery workflow has them).
   */
  webhookDurable: DurableEndpoints;
  /** When Temporal was asked to cancel this run (cancellation.ts), if it was. */
  cancelRequestedAt: string | undefined;
  /** HELD: the account workflow let the order go (hold.ts). */
  resumeRequested = false;
  /** In review because the provider's records could not be searched: where to look again (records.workflow.ts). */
  recordsWindow: OrderContinuation['recordsWindow'];

  constructor(
    readonly orderType: OrderType,
    readonly adapter: OrderAdapter<R, C>,
    readonly input: OrderInput,
    /** The review this run was started to show, if any. */
    readonly shownReview?: ReviewNotice,
  ) {
    if (input.request.type !== orderType) {
      throw ApplicationFailure.nonRetryable(
        `a ${input.request.type} order cannot run as ${orderType}`,
        'WrongOrderType',
      );
    }
    this.request = input.request as R;
    this.order = {
      request: this.request,
      providerRef: input.providerRef ?? input.request.ref,
      acceptedAt: input.acceptedAt,
    };
    this.timings = { ...defaultOrderTimings[orderType], ...input.timings };
    const carried = input.continued;
    this.view = carried?.view ?? {
      ref: input.request.ref,
      type: orderType,
      status: 'ACCEPTED',
      request: input.request,
      acceptedAt: input.acceptedAt,
      updatedAt: input.acceptedAt,
      timeline: [{ at: input.acceptedAt, status: 'ACCEPTED', event: 'Order accepted' }],
    };
    // Orders (and runs) from before the view named its owner gain it here: no command, no event.
    if (input.clientId) this.view.client = input.clientId;
    this.deadlineAt = carried?.deadlineAt ?? Date.now() + this.timings.deadlineMs;
    this.nextCheckMs = carried?.nextCheckMs ?? this.timings.firstCheckMs;
    // A run the sweep started after a closed one may follow a send: it looks the order up first.
    this.freshFirstTask = !input.resumed && workflowInfo().historyLength <= FIRST_TASK_HISTORY_LENGTH;
    this.watch = carried?.watch;
    this.recordsWindow = carried?.recordsWindow;
    this.eventSequence = carried?.eventSequence ?? 0;
    // A run resumed by the sweep cannot know what the closed run handed off: all to the delivery workflow.
    this.webhookDurable =
      carried?.webhookDurable ?? (this.eventSequence > 0 || input.resumed !== undefined ? 'all' : []);
    if (input.resumed) {
      this.note(
        `Resumed by the sweep: the workflow run before closed as ${input.resumed.closedAs} without a final status; ` +
          'the provider is asked before anything is sent',
      );
    }
    // Not a command: Temporal UI reads it through the metadata query, so no history changes.
    setCurrentDetails(orderDetails(this.view));
  }

  isOpen(): boolean {
    const { status } = this.view;
    return status === 'SUBMITTED' || status === 'PROCESSING' || status === 'QUEUED';
  }

  takesDecisions(): boolean {
    return decisionStatuses.includes(this.view.status);
  }

  /** Top-ups are looked up by our ref; a gift card only by the provider's orderId. */
  canLookUp(): boolean {
    return this.adapter.submitRetry === 'lookup' || this.view.providerReference !== undefined;
  }

  toReview(reason: string, evidence: string, refundMessage?: string): void {
    this.view.review = {
      reason,
      evidence,
      ...(refundMessage && { refundMessage }),
      since: new Date().toISOString(),
    };
    log.warn('order needs review', { reason, evidence });
    // Published by the review's own run: this one closes without it, so the review queue (by
    // OrderStatus) lists the order once.
    this.transition('NEEDS_REVIEW', `Needs review: ${reason}`, {
      publish: !this.reviewGetsOwnRun('NEEDS_REVIEW'),
    });
  }

  finish(
    status: Extract<OrderStatus, 'FULFILLED' | 'PARTIALLY_FULFILLED' | 'REFUNDED' | 'FAILED' | 'CANCELLED'>,
    event: string,
    outcome: Pick<OrderView, 'result' | 'failure'> & {
      resolution?: Omit<ReviewResolution, 'at'> | ReviewDecision;
    },
  ): void {
    const now = new Date().toISOString();
    if (outcome.result) this.view.result = { ...this.view.result, ...outcome.result };
    if (outcome.failure) this.view.failure = outcome.failure;
    if (outcome.resolution && this.view.review)
      this.view.review.resolution = { ...outcome.resolution, at: now };
    this.view.completedAt = now;
    this.transition(status, event);
    recordSettlement(this.view);
  }

  transition(
    status: OrderStatus,
    event: string,
    { at, publish = true }: { at?: string; publish?: boolean } = {},
  ): void {
    // The lifecycle's table (transitions.workflow.ts): a move not in it fails the workflow task.
    assertLegalMove(this.view.status, status);
    if (status === 'QUEUED' && this.view.status !== 'QUEUED') {
      // Delivery within 12–48 h (documented): checked at that pace, stuck only after a deadline of its own.
      this.deadlineAt = Date.now() + this.timings.queuedDeadlineMs;
      this.nextCheckMs = this.timings.queuedRecheckMs;
    }
    this.view.status = status;
    this.note(event, at);
    if (publish) this.publishStatus();
    log.info('order status changed', { status, event });
    // Decisions that arrived while the order was settled (or went back to polling): recorded, not acted on.
    if (!this.takesDecisions()) this.refuseQueued();
    if (status !== 'ACCEPTED') this.announce(statusEventType(status), undefined, at);
  }

  /**
   * Hands the event to the order's webhook delivery (docs/integrators.md "Webhooks") without waiting for it:
   * announcements run one after another, in order, and run() waits for the last before it ends.
   * Only for a client that had endpoints: any other order's history is as it was, not one event more.
   */
  announce(type: OrderEvent['type'], decision?: OrderEvent['decision'], at?: string): void {
    if (!this.input.webhooks || !this.input.clientId) return;
    const event: OrderEvent = {
      sequence: ++this.eventSequence,
      type,
      // The workflow learns of PROCESSING when polling ends: the event keeps the provider's time.
      timestamp: at ?? new Date().toISOString(),
      client: this.input.clientId,
      ...(this.input.providerRef ? { providerRef: this.input.providerRef } : {}),
      // A copy: the view changes on while the announcement waits its turn.
      view: JSON.parse(JSON.stringify(this.view)) as OrderView,
      ...(decision ? { decision } : {}),
    };
    this.announcing = this.announcing.then(() =>
      announcer
        .announceOrderEvent(event, this.webhookDurable)
        .then((outcome) => this.announced(outcome))
        .catch((err: unknown) => {
          log.error('webhook event not announced', { type, sequence: event.sequence, error: String(err) });
        }),
    );
  }

  /** A marker recorded before announcements had an outcome (void) handed every endpoint off. */
  private announced(outcome: AnnounceOutcome | undefined | void): void {
    if (this.webhookDurable === 'all') return;
    if (!outcome || !Array.isArray(outcome.handedOff)) {
      this.webhookDurable = 'all';
      return;
    }
    const behind = outcome.handedOff.filter((e) => !(this.webhookDurable as string[]).includes(e));
    if (behind.length > 0) this.webhookDurable = [...this.webhookDurable, ...behind];
  }

  /** A timeline entry; `event` never holds a phone number or card code. */
  note(event: string, at = new Date().toISOString()): void {
    this.view.updatedAt = at;
    this.view.timeline.push({ at, status: this.view.status, event });
    if (this.view.timeline.length > MAX_TIMELINE_ENTRIES) this.view.timeline.splice(1, 1);
    setCurrentDetails(orderDetails(this.view));
  }

  /** Keeps the order's search attributes current; no event when the starter already set them. */
  publishStatus(): void {
    publishSearchAttributes(this.view, this.orderType, this.takesDecisions());
  }

  /** Polling and review can last long; a fresh run with the state carried over keeps history bounded. */
  historyIsLong(): boolean {
    const { historyLength, continueAsNewSuggested } = workflowInfo();
    return (
      continueAsNewSuggested || historyLength >= (this.input.historyEventLimit ?? DEFAULT_HISTORY_EVENT_LIMIT)
    );
  }

  /**
   * Whether the review the order is in should be shown by a run of its own: it takes decisions
   * and this run was not started for this review. Temporal UI shows a run's input as the workflow
   * page opens, so the operator reads why and copies a decision without a click.
   */
  reviewGetsOwnRun(status: OrderStatus = this.view.status): boolean {
    if (!decisionStatuses.includes(status) || !this.view.review) return false;
    const shown = this.shownReview;
    return !(shown?.status === status && shown.inReviewSince === this.view.review.since);
  }

  /** This run's search attributes with the review's status and since when. */
  reviewAttributes(notice: ReviewNotice): TypedSearchAttributes {
    return reviewRunAttributes(this.view, notice);
  }

  onSubmitted(submission: Submission<C>): void {
    if (submission.providerReference) this.view.providerReference = submission.providerReference;
    this.transition(
      'SUBMITTED',
      submission.alreadySent
        ? 'The provider already had this order from an earlier attempt; not sent again'
        : 'Sent to the provider',
    );
    if (submission.check) this.observe(submission.check);
  }

  notThisOrder(check: C): string | undefined {
    return this.adapter.notThisOrder?.(check, this.order, this.view.providerReference);
  }

  /** What a check answer means for this order; one that is not this order's means review. */
  meaningOf(check: C): Interpretation {
    const problem = this.notThisOrder(check);
    if (problem) {
      return {
        kind: 'review',
        reason: "the provider's answer under this ref is not this order's",
        evidence: problem,
      };
    }
    return this.interpret(check);
  }

  interpret(check: C): Interpretation {
    return interpretCheck(this.adapter, this.request, check);
  }

  /**
   * What both ways of polling do with an answer: a final one finishes the order, one that needs
   * review sends it there; an open one is the caller's (`onOpen`, with the status it means).
   */
  actOnCheck(check: C, onOpen: (status: OpenStatus) => void): void {
    this.view.providerStatus = check.status;
    const meaning = this.meaningOf(check);
    switch (meaning.kind) {
      case 'final':
        return this.finish(meaning.status, `The provider reports ${check.status}`, {
          result: meaning.result,
        });
      case 'review':
        return this.toReview(meaning.reason, meaning.evidence, meaning.refundMessage);
      case 'open':
        return onOpen(meaning.status);
    }
  }

  /** Acts on a check outside the polling activity (a send's look-up, a resumed order): every answer counts. */
  observe(check: C): void {
    const previous = this.view.providerStatus;
    this.actOnCheck(check, (status) => {
      this.nextCheckMs =
        status === 'QUEUED'
          ? this.timings.queuedRecheckMs
          : nextCheckDelayMs(this.timings, this.nextCheckMs, check.status, previous);
      if (status !== this.view.status) this.transition(status, `The provider reports ${check.status}`);
    });
  }

  /** Answers an update waiting for this decision (a signal's sender waits for nothing). */
  answer(queued: QueuedDecision, outcome: DecisionOutcome['outcome'], refusal?: DecisionRefusal): void {
    // A copy: the view keeps changing after the answer is given.
    const view = JSON.parse(JSON.stringify(this.view)) as OrderView;
    queued.outcome = { outcome, ...(refusal && { refusal }), view };
    countDecisionOutcome(this.orderType, queued.decision.decision, outcome, refusal?.kind);
  }

  /** Decisions still queued when the order leaves review: recorded, not acted on. */
  refuseQueued(): void {
    const status = this.view.status;
    for (const late of this.decisions.splice(0)) {
      this.note(
        `Review decision ${late.decision.decision} by ${decidedByWhom(late.decision)} ignored: the order is already ${status}`,
      );
      this.answer(late, 'refused', {
        kind: 'not-in-review',
        reason: `the order is already ${status}`,
        forceable: false,
      });
    }
  }

  retryPolicy(nonRetryableErrorTypes: string[] = []): ActivityOptions['retry'] {
    return {
      initialInterval: Math.min(RETRY_INITIAL_INTERVAL_MS, this.timings.maxIntervalMs),
      backoffCoefficient: 2,
      maximumInterval: this.timings.maxIntervalMs,
      nonRetryableErrorTypes,
    };
  }

  backoff(intervalMs: number, factor: number): number {
    return Math.min(this.timings.maxIntervalMs, intervalMs * factor);
  }
}
