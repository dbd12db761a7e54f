/**
 * The lifecycle every order goes through, whatever its type: submit to the provider, poll on a
 * schedule that follows the provider, end FULFILLED / REFUNDED / FAILED, or wait in NEEDS_REVIEW
 * for an operator (re-checking the provider now and then). A small per-type adapter says how to
 * submit, how to check and what a fulfilled order delivers; nothing else differs between types.
 *
 * Operator decisions (signal `resolveReview` or update `decideReview`) wait in one queue that the
 * main loop works through, so a decision never races a recheck or another decision. Each
 * FULFILLED / REFUNDED decision is checked against the provider first (decision-rules.ts); one the
 * provider has not confirmed is then watched, and a later contradiction reopens the order as
 * DISPUTED.
 *
 * Deterministic workflow code: no I/O, no Node built-ins; Date.now() is the SDK's replay-safe clock.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  log,
  makeContinueAsNewFunc,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  TimeoutFailure,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair, TypedSearchAttributes } from '@temporalio/common';
import type { OrderActivities } from '../activities';
import {
  nextCheckDelayMs,
  ProviderFailureType,
  type CheckOutcome,
  type PollOutcome,
  type PollPlan,
  type PollProgress,
  type ProviderFailureDetails,
  type Submission,
} from '../activities/outcomes.types';
import { checkReviewDecision, decidedByWhom, type ReviewDecisionCheck } from '../src/orders/review-decision';
import type { ReviewDecision } from '../src/orders/schemas';
import { REVIEW_DECISION_EVENT, statusEventType } from '../src/webhooks/event-types';
import { WEBHOOK_EVENTS_PATCH, type OrderEvent } from './webhook-contract';
import {
  AcceptedAtAttribute,
  decideReviewUpdate,
  DecisionRejection,
  decisionStatuses,
  defaultOrderTimings,
  finalStatuses,
  LEAN_LIFECYCLE,
  OrderStatusAttribute,
  OrderTypeAttribute,
  resolveReviewSignal,
  ReviewSinceAttribute,
  statusQuery,
  type DecisionOutcome,
  type DecisionRefusal,
  type DecisionWatch,
  type OrderInput,
  type OrderRequest,
  type OrderResult,
  type OrderStatus,
  type OrderTimings,
  type OrderType,
  type OrderView,
  type ProviderAnswer,
  type ReviewResolution,
  type ProviderStatus,
} from './contract';
import { contradictsLater, judgeDecision, type DecisionAnswer } from './decision-rules';
import { countDecisionOutcome, countDispute } from './decision-metrics';
import {
  handlerDescriptions,
  orderDetails,
  pastableDecisions,
  reviewNotice,
  type PastableDecision,
  type ReviewNotice,
} from './ui-metadata';

/** The part of every provider check answer the lifecycle reads; the adapter reads the rest. */
export interface ProviderCheck {
  status: ProviderStatus;
  refund_message?: string;
  suggested_offers?: { plan_code: string; amount?: number; typename?: string }[];
}

/** What the adapter knows of the order it submits or checks. */
export interface AdaptedOrder<R extends OrderRequest> {
  request: R;
  /** The ref a top-up carries to the provider (OrderInput.providerRef, or the request's ref). */
  providerRef: string;
}

/** How the lifecycle wants a submission made. */
export interface SubmitHow {
  /** Before the settle patch: an earlier submit activity of this order gave up; look the ref up first. */
  lookUpFirst?: boolean;
  /** Since the settle patch: just send, once; the lifecycle looks the ref up itself (SendOptions.sendOnly). */
  sendOnly?: boolean;
  /** The lean lifecycle's first send, a local activity: not after this (SendOptions.notAfter). */
  notAfter?: number;
}

export interface OrderAdapter<R extends OrderRequest, C extends ProviderCheck> {
  /**
   * `lookup`: the submission carries our ref, so an unclear one can be looked up (and, before the
   * settle patch, Temporal may retry it because a retry looks the ref up first).
   * `once`: it cannot be looked up, so it is never repeated and an unclear attempt goes to review.
   */
  submitRetry: 'lookup' | 'once';
  submit(activities: OrderActivities, order: AdaptedOrder<R>, how: SubmitHow): Promise<Submission<C>>;
  /** Undefined when the order cannot be looked up (e.g. a gift card with no order id). */
  check(
    activities: OrderActivities,
    order: AdaptedOrder<R>,
    providerReference: string | undefined,
  ): Promise<CheckOutcome<C>> | undefined;
  /** The lean lifecycle's polling (activities pollUntilSettled); undefined like `check`. */
  poll(
    activities: OrderActivities,
    order: AdaptedOrder<R>,
    providerReference: string | undefined,
    plan: PollPlan,
  ): Promise<PollOutcome<C>> | undefined;
  /** What a FULFILLED order delivered, or why that answer cannot be accepted as is. */
  fulfilledResult(check: C, request: R): OrderResult | { problem: string };
  /**
   * Why a check answer found under this order's ref cannot be this order's (another number or
   * amount; another topupId than the send returned), or undefined. Checked since the settle patch.
   */
  notThisOrder?(check: C, order: AdaptedOrder<R>, providerReference: string | undefined): string | undefined;
}

/**
 * An order's workflow. `review` and `decisions` are set only by the workflow itself, when it
 * continues as new into review (REVIEW_RUN_PATCH): they are there for Temporal UI to show.
 */
export type OrderWorkflow = (
  input: OrderInput,
  review?: ReviewNotice,
  ...decisions: readonly PastableDecision[]
) => Promise<OrderView>;

export function defineOrderWorkflow<R extends OrderRequest, C extends ProviderCheck>(
  orderType: R['type'],
  adapter: OrderAdapter<R, C>,
): OrderWorkflow {
  return (input, review) => new OrderLifecycle(orderType, adapter, input, review).run();
}

/**
 * Temporal warns at 10,240 events; continuing as new well before keeps replays fast and leaves
 * room for a burst of signals. A normal order uses about 40.
 */
const DEFAULT_HISTORY_EVENT_LIMIT = 2_000;
/**
 * A placement that certainly never reached the provider is tried again at most this often (and
 * never past the deadline): with the default back-off that is about a quarter of an hour.
 */
const MAX_SUBMIT_TRIES = 20;
/** The view's timeline keeps its first entry and the latest ones; the history keeps everything. */
const MAX_TIMELINE_ENTRIES = 100;
/** First retry of a failed provider call; further ones back off to the polling cap. */
const RETRY_INITIAL_INTERVAL_MS = 1_000;
/**
 * An order entering review (or a dispute) continues as new into a run of its own whose input
 * carries the review notice and the decisions (ui-metadata.ts `reviewNotice`): Temporal UI shows a
 * run's input as the workflow page opens, so the operator reads why and copies a decision without
 * a click. Asked with `patched()` in every lifecycle, lean included: histories recorded before it
 * replay in the run they entered review in (an order still in review then moves to a run of its
 * own at its next live step).
 */
const REVIEW_RUN_PATCH = 'review-in-own-run';
/** Orders started without the AcceptedAt search attribute set it themselves (publishStatus). */
const ACCEPTED_AT_PATCH = 'accepted-at-attribute';
/** lookUp's answer when the provider has no trace of the ref or order. */
const PROVIDER_DOES_NOT_KNOW = 'the provider does not know the order';
/**
 * The send path of docs/contributors.md "Never send twice: what we assume of the provider": one send per
 * activity, never repeated by Temporal, settle windows on durable timers before any new send, a
 * 409 on a fresh order's first send to review, and check answers that are not this order's never
 * adopted. Orders started before it keep the older path (a retried send looks the ref up first).
 */
export const SETTLE_PATCH = 'send-settles-before-resend';
/** How many steps of an unclear send's story the review evidence keeps (the first and the latest). */
const MAX_EVIDENCE_STEPS = 8;
/**
 * Decisions are checked against the provider, may carry force / orderId / decidedBy, and are
 * watched after they apply. Histories recorded before take the old path: applied as given.
 */
const DECISIONS_CHECKED_PATCH = 'review-decisions-checked';
/**
 * Announcing an event is one signal-with-start from the worker: a local activity, so it costs the
 * order one marker event and no task. Retried until Temporal takes it: a lost event is a missed webhook.
 */
const announcer = proxyLocalActivities<Pick<OrderActivities, 'announceOrderEvent'>>({
  startToCloseTimeout: 10_000,
  retry: { initialInterval: 1_000, backoffCoefficient: 2, maximumInterval: 60_000 },
});
/** ReviewSince is set with the status when an order enters review; histories before it replay without. */
const REVIEW_SINCE_PATCH = 'review-since-attribute';
/**
 * A fresh workflow's first task sees exactly its first three events (started, task scheduled,
 * task started). A longer history at the first activation means an earlier task failed or timed
 * out — possibly after its local-activity send reached the provider — or a signal came first.
 */
const FIRST_TASK_HISTORY_LENGTH = 3;
/**
 * The first send (a local activity) must be scheduled by the worker within this share of the
 * task timeout after its workflow task started (SendOptions.notAfter). A local activity can run
 * again without a trace only after the task was completed by a heartbeat — at 80 % of its timeout
 * — and the task after it was then lost with its worker: never before the task's start + 80 % of
 * its timeout + that next task's timeout. 70 % leaves the difference for the clocks.
 */
const LOCAL_SEND_WINDOW_SHARE = 0.7;
/** The local send's own limit once started (the call ends with it: attempt-deadline.ts). */
const LOCAL_SEND_TIMEOUT_MS = 5_000;
/** How long a local send may wait for a slot; one that never started is sent through the queue. */
const LOCAL_SEND_QUEUE_MS = 1_000;

type Interpretation =
  | { kind: 'open'; status: 'SUBMITTED' | 'PROCESSING' }
  | { kind: 'final'; status: 'FULFILLED' | 'REFUNDED'; result: OrderResult }
  | { kind: 'review'; reason: string; evidence: string };

/** What the provider said about the order, for a decision or the watch. */
type Asked<C> =
  | { kind: 'status'; check: C; meaning: Interpretation }
  | { kind: 'not-found' }
  | { kind: 'failed'; detail: string }
  | { kind: 'no-reference' };

/** A decision waiting for the main loop; an update's handler waits for `outcome`. */
interface QueuedDecision {
  decision: ReviewDecision;
  outcome?: DecisionOutcome;
}

class OrderLifecycle<R extends OrderRequest, C extends ProviderCheck> {
  private readonly request: R;
  private readonly order: AdaptedOrder<R>;
  private readonly timings: OrderTimings;
  private readonly view: OrderView;
  /** Epoch ms after which a still-open order goes to NEEDS_REVIEW as stuck (renewed when polling resumes). */
  private deadlineAt: number;
  /** Polling: how long to wait before the next check. */
  private nextCheckMs: number;
  /** Valid operator decisions received in review, oldest first. */
  private readonly decisions: QueuedDecision[] = [];
  /** This run follows SETTLE_PATCH (decided once, at its first activation). */
  private readonly settles: boolean;
  /** The lean lifecycle (OrderInput.lifecycle): local first send, one polling activity, no patch markers (but review-in-own-run). */
  private readonly lean: boolean;
  /** This is the workflow's first task, never tried before (FIRST_TASK_HISTORY_LENGTH). */
  private readonly freshFirstTask: boolean;
  /** Set while an operator's decision is watched. */
  private watch: DecisionWatch | undefined;
  /** Webhook events: the last sequence number announced, and the announcements in flight, in order. */
  private eventSequence: number;
  private announcing: Promise<void> = Promise.resolve();

  constructor(
    private readonly orderType: OrderType,
    private readonly adapter: OrderAdapter<R, C>,
    private readonly input: OrderInput,
    /** The review this run was started to show (REVIEW_RUN_PATCH), if any. */
    private readonly shownReview?: ReviewNotice,
  ) {
    if (input.request.type !== orderType) {
      throw ApplicationFailure.nonRetryable(
        `a ${input.request.type} order cannot run as ${orderType}`,
        'WrongOrderType',
      );
    }
    this.request = input.request as R;
    this.order = { request: this.request, providerRef: input.providerRef ?? input.request.ref };
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
    this.lean = input.lifecycle === LEAN_LIFECYCLE;
    this.freshFirstTask = workflowInfo().historyLength <= FIRST_TASK_HISTORY_LENGTH;
    // Asked once, before any other command: histories recorded before the patch replay the old path.
    this.settles = this.patchApplies(SETTLE_PATCH);
    this.watch = carried?.watch;
    this.eventSequence = carried?.eventSequence ?? 0;
    setHandler(statusQuery, () => this.view, { description: handlerDescriptions.status });
    setHandler(resolveReviewSignal, (decision) => this.onSignal(decision), {
      description: handlerDescriptions.resolveReview,
    });
    setHandler(decideReviewUpdate, (decision) => this.onUpdate(decision), {
      validator: (decision) => this.validateDecision(decision),
      description: handlerDescriptions.decideReview,
    });
    // Not a command: Temporal UI reads it through the metadata query, so no history changes.
    setCurrentDetails(orderDetails(this.view));
  }

  async run(): Promise<OrderView> {
    this.publishStatus();
    for (;;) {
      if (this.view.status === 'ACCEPTED') {
        await this.submit();
        continue;
      }
      if (finalStatuses.includes(this.view.status) && !this.watch) break;
      await this.continueAsNewIfDue();
      if (this.watch) await this.watchStep(this.watch);
      else if (this.takesDecisions()) await this.reviewStep();
      else await this.pollStep();
    }
    await this.announcing;
    // Decisions still queued were answered when the order left review; let their handlers return.
    await condition(allHandlersFinished);
    return this.view;
  }

  // ---- submission ----

  private async submit(): Promise<void> {
    if (this.adapter.submitRetry === 'lookup') {
      if (!this.lean) return this.settles ? this.sendSettled() : this.submitOld();
      return this.sendSettled(this.freshFirstTask ? 'local-send' : 'settle-first');
    }
    if (this.lean && !this.freshFirstTask) {
      // Its placement may have run in the task before, and a placement cannot be looked up.
      return this.toReview(
        'the placement may or may not have reached the provider',
        'the first workflow task did not complete after it may have placed the order',
      );
    }
    return this.submitOld();
  }

  /** A gift card's placement; a top-up's submission before SETTLE_PATCH (a retried send looks up first). */
  private async submitOld(): Promise<void> {
    for (let tries = 1; ; tries++) {
      try {
        const viaQueue = () =>
          this.adapter.submit(this.submitActivities(), this.order, { lookUpFirst: tries > 1 });
        const submission =
          this.lean && tries === 1 ? await this.submitLocalFirst({}, viaQueue) : await viaQueue();
        return this.onSubmitted(submission);
      } catch (err) {
        const failure = providerFailureOf(err);
        if (failure?.type === ProviderFailureType.rejected) return this.refused(failure);
        if (!failure || !isSafeToRepeat(failure.type)) {
          return this.toReview(
            'the submission may or may not have reached the provider',
            describeFailure(err),
          );
        }
        const delayMs =
          failure.details?.retryAfterMs ?? this.backoff(RETRY_INITIAL_INTERVAL_MS, 2 ** (tries - 1));
        if (tries >= MAX_SUBMIT_TRIES || Date.now() + delayMs >= this.deadlineAt) {
          return this.giveUpSubmitting(failure.message);
        }
        log.warn('submission not accepted by the provider, trying again', {
          type: failure.type,
          delayMs,
          tries,
        });
        await sleep(delayMs, { summary: 'wait, then submit again (the provider was not reached)' });
      }
    }
  }

  /** A definitive 4xx refusal of the submission: nothing was done. */
  private refused(failure: ProviderFailure): void {
    const code =
      failure.details?.code ?? (failure.details?.status ? `HTTP_${failure.details.status}` : 'REJECTED');
    this.finish('FAILED', `The provider refused the order (${code})`, {
      failure: { code, message: failure.message },
    });
  }

  /**
   * A top-up's send since SETTLE_PATCH (docs/contributors.md "Never send twice: what we assume of the provider").
   * Each send is one activity that Temporal never repeats — a timed-out attempt (a dead worker)
   * may have reached the provider — so every decision to send again is taken here, on durable
   * timers. After a send whose outcome is unknown, nothing is sent again until check-ref has not
   * found the ref twice (see settle). Sends that certainly never reached the provider (connection
   * refused, 429) are repeated after a back-off. A 409 means "someone else's top-up" when no send
   * of this order may have reached the provider yet, and "our earlier send" afterwards.
   */
  private async sendSettled(start: 'send' | 'local-send' | 'settle-first' = 'send'): Promise<void> {
    const activities = proxyActivities<OrderActivities>({
      startToCloseTimeout: this.timings.activityTimeoutMs,
      summary: 'send to the provider (once)',
      retry: { maximumAttempts: 1 },
    });
    const evidence: string[] = [];
    let mayHaveReached = false;
    let repeats = 0;
    if (start === 'settle-first') {
      mayHaveReached = true;
      evidence.push('the first workflow task did not complete: its send may have reached the provider');
      log.warn(
        'the first workflow task of a lean order did not complete: looking its ref up before any send',
      );
      if ((await this.settle(evidence, { mayResend: true })) !== 'resend') return;
    }
    for (let sends = 1; ; sends++) {
      let err: unknown;
      try {
        const viaQueue = () => this.adapter.submit(activities, this.order, { sendOnly: true });
        const submission =
          start === 'local-send' && sends === 1
            ? await this.submitLocalFirst({ sendOnly: true }, viaQueue)
            : await viaQueue();
        return this.onSubmitted(submission);
      } catch (caught) {
        err = caught;
      }
      const failure = providerFailureOf(err);
      if (failure?.type === ProviderFailureType.rejected) return this.refused(failure);
      if (failure?.type === ProviderFailureType.duplicateRef) {
        if (!mayHaveReached) {
          // No send of ours can be behind it: the ref was used before, by an order we no longer
          // hold (its workflow outlived its retention). Its outcome is not this order's.
          return this.toReview('ref already used at the provider', `send ${sends}: ${describeFailure(err)}`);
        }
        evidence.push(
          `send ${sends}: 409, the ref is already used: an earlier send of this order was committed`,
        );
        this.note('The provider answers 409 to the re-send: an earlier send was committed; looking it up');
        await this.settle(evidence, { mayResend: false, lookNow: true });
        return;
      }
      if (failure && isSafeToRepeat(failure.type)) {
        repeats++;
        const delayMs =
          failure.details?.retryAfterMs ?? this.backoff(RETRY_INITIAL_INTERVAL_MS, 2 ** (repeats - 1));
        if (repeats >= MAX_SUBMIT_TRIES || Date.now() + delayMs >= this.deadlineAt) {
          if (mayHaveReached) return this.giveUpSubmitting(failure.message);
          return this.finish('FAILED', 'The provider could not be reached; nothing was sent', {
            failure: { code: 'PROVIDER_UNREACHABLE', message: failure.message },
          });
        }
        log.warn('send not accepted by the provider, sending again', {
          type: failure.type,
          delayMs,
          repeats,
        });
        await sleep(delayMs, { summary: 'wait, then send again (the provider was not reached)' });
        continue;
      }
      // Timeout, reset, 5xx, an attempt timed out, anything else: the provider may have it.
      mayHaveReached = true;
      repeats = 0;
      evidence.push(`send ${sends}: ${describeFailure(err)}`);
      if ((await this.settle(evidence, { mayResend: true })) !== 'resend') return;
    }
  }

  /**
   * After a send whose outcome is unknown: look the ref up once a settle window has passed since
   * the send ended (`lookNow`: at once, then likewise), and again a settle window after each
   * "not found". Found → adopted, if it is this order's. Not found twice → 'resend', if
   * `mayResend`; otherwise keep looking. The deadline first → review with the evidence. Every wait
   * is a durable timer, and a look-up that fails is retried by Temporal with back-off until the
   * deadline: while the provider cannot be asked, the order waits.
   */
  private async settle(
    evidence: string[],
    { mayResend, lookNow = false }: { mayResend: boolean; lookNow?: boolean },
  ): Promise<'resend' | 'done'> {
    const settleS = Math.round(this.timings.settleMs / 100) / 10;
    if (!lookNow) {
      this.note(`Send outcome unknown; looking the ref up in ${settleS} s, nothing is sent before`);
    }
    let notFound = 0;
    let lookAt = lookNow ? Date.now() : Date.now() + this.timings.settleMs;
    for (;;) {
      const wait = Math.min(lookAt, this.deadlineAt) - Date.now();
      if (wait > 0) await sleep(wait, { summary: 'settle window: check-ref before re-sending' });
      const answer = await this.lookUp(this.deadlineAt - Date.now(), 'check-ref before re-sending');
      if (typeof answer !== 'string') {
        this.adopt(answer);
        return 'done';
      }
      evidence.push(answer === PROVIDER_DOES_NOT_KNOW ? 'check-ref: not found' : answer);
      if (Date.now() >= this.deadlineAt) {
        this.toReview(
          'the provider did not confirm by the deadline whether the top-up was sent',
          summarize(evidence),
        );
        return 'done';
      }
      if (answer === PROVIDER_DOES_NOT_KNOW) {
        notFound++;
        if (mayResend && notFound >= 2) {
          this.note(`Check-ref did not find the ref twice, ${settleS} s apart; sending again`);
          return 'resend';
        }
        this.note(`Check-ref does not find the ref; looking again in ${settleS} s`);
      }
      lookAt = Date.now() + this.timings.settleMs;
    }
  }

  /** A top-up found under our ref after an unclear send: carry on with it, unless it is not this order's. */
  private adopt(check: C): void {
    const problem = this.notThisOrder(check);
    if (problem) return this.toReview("the provider's top-up under this ref is not this order's", problem);
    this.onSubmitted({ alreadySent: true, check });
  }

  private notThisOrder(check: C): string | undefined {
    if (!this.settles) return undefined;
    return this.adapter.notThisOrder?.(check, this.order, this.view.providerReference);
  }

  /**
   * The provider stayed out of reach until the deadline. A placement that never reached it is
   * FAILED. A top-up's earlier attempts may have been sent before the outage, so its ref is looked
   * up one last time: found → carry on with it; unknown to the provider → FAILED, nothing was sent;
   * no answer → review, since nobody can say.
   */
  private async giveUpSubmitting(lastFailure: string): Promise<void> {
    const unreachable = { failure: { code: 'PROVIDER_UNREACHABLE', message: lastFailure } };
    if (this.adapter.submitRetry === 'once') {
      return this.finish('FAILED', 'The provider could not be reached; nothing was submitted', unreachable);
    }
    const answer = await this.lookUp(this.timings.activityTimeoutMs, 'last look-up before giving up');
    if (typeof answer !== 'string') {
      return this.settles ? this.adopt(answer) : this.onSubmitted({ alreadySent: true, check: answer });
    }
    if (answer === PROVIDER_DOES_NOT_KNOW) {
      return this.finish(
        'FAILED',
        'The provider could not be reached and has no trace of the order',
        unreachable,
      );
    }
    return this.toReview('the provider could not be reached to confirm whether the top-up was sent', answer);
  }

  private onSubmitted(submission: Submission<C>): void {
    if (submission.providerReference) this.view.providerReference = submission.providerReference;
    this.transition(
      'SUBMITTED',
      submission.alreadySent
        ? 'The provider already had this order from an earlier attempt; not sent again'
        : 'Sent to the provider',
    );
    if (submission.check) this.observe(submission.check);
  }

  // ---- polling ----

  private async pollStep(): Promise<void> {
    if (this.lean) return this.pollLean();
    const wait = Math.min(this.nextCheckMs, this.deadlineAt - Date.now());
    if (wait > 0) await sleep(wait, { summary: this.pollWaitSummary() });
    const answer = await this.lookUp(this.deadlineAt - Date.now(), 'status check');
    if (typeof answer === 'string') this.nextCheckMs = this.backoff(this.nextCheckMs, 2);
    else this.observe(answer);
    if (this.isOpen() && Date.now() >= this.deadlineAt) {
      const last = typeof answer === 'string' ? answer : `provider status ${answer.status}`;
      this.toReview('stuck: no final status by the deadline', last);
    }
  }

  /** What the poll's timer waits for, shown on it in Temporal UI. */
  private pollWaitSummary(): string {
    const status = this.view.providerStatus;
    return status === 'PENDING' || status === 'HANDLING' || status === undefined
      ? `wait for ${status ?? 'PENDING'} to end`
      : 'wait for the next status check';
  }

  /**
   * The lean lifecycle's polling: one activity that the server retries on the provider's schedule
   * (activities pollUntilSettled) and that returns what the provider said on the way; the view
   * takes each status change at the time the provider reported it. While it runs the view keeps
   * the status it had when it started (docs/contributors.md "The order lifecycle").
   */
  private async pollLean(): Promise<void> {
    const plan: PollPlan = {
      firstCheckMs: Math.max(0, Math.min(this.nextCheckMs, this.deadlineAt - Date.now())),
      handlingCheckMs: this.timings.handlingCheckMs,
      maxIntervalMs: this.timings.maxIntervalMs,
      until: this.deadlineAt,
      ...(this.view.providerStatus && { lastStatus: this.view.providerStatus }),
    };
    const activities = proxyActivities<OrderActivities>({
      startToCloseTimeout: this.timings.activityTimeoutMs,
      // A backstop only: the activity itself ends at the deadline with the last answer.
      scheduleToCloseTimeout: Math.max(0, this.deadlineAt - Date.now()) + 2 * this.timings.activityTimeoutMs,
      retry: this.retryPolicy(),
      summary: 'status checks until the order settles (one per attempt)',
    });
    let progress: PollProgress<C> | undefined;
    let settled = false;
    let failed: string | undefined;
    try {
      const outcome = this.adapter.poll(activities, this.order, this.view.providerReference, plan);
      if (!outcome) return this.toReview('stuck: the order cannot be looked up', 'no provider reference');
      ({ settled, ...progress } = await outcome);
    } catch (err) {
      failed = describeFailure(err);
      const timeout =
        err instanceof ActivityFailure && err.cause instanceof TimeoutFailure ? err.cause : undefined;
      progress = timeout?.lastHeartbeatDetails as PollProgress<C> | undefined;
      log.warn('polling ended without an answer', { failure: failed });
    }
    let last: string | undefined;
    for (const seen of progress?.observed ?? []) {
      last = seen.check
        ? `provider status ${seen.answer}`
        : seen.answer === 'NOT_FOUND'
          ? PROVIDER_DOES_NOT_KNOW
          : `the status check failed (${seen.failure ?? 'no answer'})`;
      if (seen.check && this.isOpen()) this.observePolled(seen.check, seen.at);
    }
    if (!this.isOpen()) return;
    if (settled) return this.publishStatus();
    if (Date.now() >= this.deadlineAt) {
      return this.toReview('stuck: no final status by the deadline', failed ?? last ?? 'no answer');
    }
    // Not settled before the deadline: only a failure of the polling itself (a bug); try again later.
    this.publishStatus();
    await sleep(this.timings.maxIntervalMs);
  }

  /** One answer the polling activity saw, at the time it saw it. */
  private observePolled(check: C, at: string): void {
    this.actOnCheck(check, (status) => {
      if (status === this.view.status) return;
      // Published with whatever status the polling ends in: one search-attribute update.
      this.transition(status, `The provider reports ${check.status}`, { at, publish: false });
    });
  }

  /** Acts on a check while polling: every answer counts. */
  private observe(check: C): void {
    const previous = this.view.providerStatus;
    this.actOnCheck(check, (status) => {
      this.nextCheckMs = nextCheckDelayMs(this.timings, this.nextCheckMs, check.status, previous);
      if (status !== this.view.status) this.transition(status, `The provider reports ${check.status}`);
    });
  }

  /**
   * What both ways of polling do with an answer: a final one finishes the order, one that needs
   * review sends it there; an open one is the caller's (`onOpen`, with the status it means).
   */
  private actOnCheck(check: C, onOpen: (status: 'SUBMITTED' | 'PROCESSING') => void): void {
    this.view.providerStatus = check.status;
    const meaning = this.meaningOf(check);
    switch (meaning.kind) {
      case 'final':
        return this.finish(meaning.status, `The provider reports ${check.status}`, {
          result: meaning.result,
        });
      case 'review':
        return this.toReview(meaning.reason, meaning.evidence);
      case 'open':
        return onOpen(meaning.status);
    }
  }

  /** What a check answer means for this order; since SETTLE_PATCH, one that is not this order's means review. */
  private meaningOf(check: C): Interpretation {
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

  private interpret(check: C): Interpretation {
    switch (check.status) {
      case 'PENDING':
        return { kind: 'open', status: 'SUBMITTED' };
      case 'HANDLING':
        return { kind: 'open', status: 'PROCESSING' };
      case 'REFUNDED':
        return { kind: 'final', status: 'REFUNDED', result: refundOf(check) };
      case 'UNKNOWN_ERROR':
        return {
          kind: 'review',
          reason: 'the provider reports UNKNOWN_ERROR',
          evidence: 'provider status UNKNOWN_ERROR',
        };
      case 'FULFILLED': {
        const result = this.adapter.fulfilledResult(check, this.request);
        return 'problem' in result
          ? {
              kind: 'review',
              reason: 'the provider reports FULFILLED with an unusable answer',
              evidence: result.problem,
            }
          : { kind: 'final', status: 'FULFILLED', result };
      }
      default:
        // QUEUED, PARTIALLY_FILLED (documented, not yet acted on) or a status nobody documented:
        // an answer a person reads, never a loop.
        return {
          kind: 'review',
          reason: `the provider reports ${check.status}, which this service does not act on`,
          evidence: `provider status ${check.status}`,
        };
    }
  }

  // ---- review ----

  private async reviewStep(): Promise<void> {
    // Entering review is published by the review's own run; one that stays here (a decision was
    // already queued, or the order is older than REVIEW_RUN_PATCH) publishes it now.
    this.publishStatus();
    // Also wake when the history grows long: signals alone (a script resending a malformed
    // decision, say) must not push it towards Temporal's limit while we wait.
    const wake = () => this.decisions.length > 0 || this.historyIsLong();
    if (this.view.status === 'DISPUTED') {
      // The provider has spoken and contradicts an operator: only an operator settles this.
      await condition(wake);
    } else if (!(await condition(wake, this.timings.reviewRecheckMs, { summary: 'review re-check' }))) {
      return this.recheck();
    }
    const queued = this.decisions.shift();
    if (!queued) return; // the loop continues as new first
    await this.decide(queued);
    // Refused decisions change nothing, so receivers hear only of those the workflow acted on.
    if (queued.outcome?.outcome !== 'refused')
      this.announce(REVIEW_DECISION_EVENT, { ...queued.decision, outcome: this.view.status });
  }

  /** In review only a final FULFILLED or REFUNDED settles the order; anything else waits for an operator. */
  private async recheck(requestedBy?: ReviewDecision): Promise<void> {
    // One attempt's worth of retries: decisions queued behind a recheck should not wait long.
    const answer = await this.lookUp(this.timings.activityTimeoutMs, 'review re-check');
    if (typeof answer !== 'string') this.view.providerStatus = answer.status;
    const meaning = typeof answer === 'string' ? undefined : this.meaningOf(answer);
    // A dispute is the provider against an operator: a recheck informs, it does not settle it.
    if (meaning?.kind === 'final' && this.view.status === 'NEEDS_REVIEW') {
      return this.finish(meaning.status, `Recheck: the provider reports ${meaning.status}`, {
        result: meaning.result,
        resolution: requestedBy,
      });
    }
    if (requestedBy) {
      const found = typeof answer === 'string' ? answer : `provider status ${answer.status}`;
      const still = this.view.status === 'NEEDS_REVIEW' ? 'in review' : this.view.status;
      this.note(`Recheck: ${found}; still ${still}`);
    }
  }

  private takesDecisions(): boolean {
    return decisionStatuses.includes(this.view.status);
  }

  /** A decision that cannot apply to this order whatever the provider says. */
  private misfit(decision: ReviewDecision): { field: string; message: string } | undefined {
    if (decision.orderId === undefined) return undefined;
    if (this.orderType !== 'gift_card') {
      return { field: 'orderId', message: 'only a gift-card order takes the provider’s orderId' };
    }
    const known = this.view.providerReference;
    if (known !== undefined && known !== decision.orderId) {
      return {
        field: 'orderId',
        message: `this order is the provider’s order ${known}, not ${decision.orderId}`,
      };
    }
    return undefined;
  }

  /** The update's validator: a rejected update is answered at once and leaves nothing in the history. */
  private validateDecision(payload: unknown): void {
    const checked = checkReviewDecision(payload);
    const errors = checked.ok
      ? [this.misfit(checked.decision)].filter((e) => e !== undefined)
      : checked.fields.map((field) => ({ field, message: 'missing or invalid' }));
    if (errors.length > 0) {
      const fields = errors.map((e) => e.field).join(', ');
      const message = `invalid review decision (${fields})`;
      throw ApplicationFailure.nonRetryable(message, DecisionRejection.invalid, { errors });
    }
    if (!this.takesDecisions()) {
      const { status } = this.view;
      throw ApplicationFailure.nonRetryable(
        `the order is ${status}; only an order in NEEDS_REVIEW or DISPUTED takes a decision`,
        DecisionRejection.notInReview,
        { status },
      );
    }
  }

  private async onUpdate(payload: ReviewDecision): Promise<DecisionOutcome> {
    const checked = checkReviewDecision(payload);
    // The validator let only valid decisions in; this keeps the cleaned (trimmed) value.
    if (!checked.ok)
      throw ApplicationFailure.nonRetryable('invalid review decision', DecisionRejection.invalid);
    const queued: QueuedDecision = { decision: checked.decision };
    this.decisions.push(queued);
    await condition(() => queued.outcome !== undefined);
    return queued.outcome as DecisionOutcome;
  }

  private onSignal(payload: unknown): void {
    // Operators type this by hand in Temporal UI: check it by the API's rule (zod-free, see review-decision.ts).
    const checked = this.checkSignalled(payload);
    if (!checked.ok) {
      const fields = checked.fields.join(', ');
      log.warn('invalid review decision ignored', { fields });
      this.note(`Invalid review decision ignored (${fields})`);
      return;
    }
    const { decision } = checked.decision;
    const who = decidedByWhom(checked.decision);
    const misfit = this.misfit(checked.decision);
    if (misfit) {
      log.warn('review decision ignored: it does not fit the order', { field: misfit.field });
      this.note(`Review decision ${decision} by ${who} ignored: ${misfit.message}`);
      return;
    }
    if (!this.takesDecisions()) {
      this.note(`Review decision ${decision} by ${who} ignored: the order is not in review`);
      return;
    }
    this.decisions.push({ decision: checked.decision });
  }

  /** Signals recorded before decisions were checked knew three fields: replayed, the others stay invalid. */
  private checkSignalled(payload: unknown): ReviewDecisionCheck {
    const checked = checkReviewDecision(payload);
    if (!checked.ok) return checked;
    // decidedBy is older than the patch: the API has sent it since clients had names.
    const newer = (['force', 'orderId'] as const).filter((f) => checked.decision[f] !== undefined);
    if (newer.length > 0 && !this.decisionsChecked()) return { ok: false, fields: [...newer] };
    return checked;
  }

  /** Works one queued decision off: RECHECK asks the provider; FULFILLED / REFUNDED is checked, then applied or refused. */
  private async decide(queued: QueuedDecision): Promise<void> {
    const { decision } = queued;
    const who = decidedByWhom(decision);
    if (!this.takesDecisions()) {
      return this.refuse(queued, {
        kind: 'not-in-review',
        reason: `the order is already ${this.view.status}`,
        forceable: false,
      });
    }
    const newOrderId =
      decision.orderId !== undefined && decision.orderId !== this.view.providerReference
        ? decision.orderId
        : undefined;
    if (decision.decision === 'RECHECK' && newOrderId === undefined) {
      this.note(`Recheck requested by ${who}`);
      await this.recheck(decision);
      return this.answer(queued, 'rechecked');
    }
    if (decision.decision !== 'RECHECK' && !this.decisionsChecked()) {
      this.finish(decision.decision, `Resolved as ${decision.decision} by ${decision.operator}`, {
        resolution: decision,
      });
      return this.answer(queued, 'applied');
    }
    const misfit = this.misfit(decision); // the order may have changed since the decision was queued
    if (misfit) return this.refuse(queued, { kind: 'invalid', reason: misfit.message, forceable: false });

    // The operator is waiting for the answer: one attempt, and they try again if it fails.
    const asked = await this.askProvider(newOrderId ?? this.view.providerReference, {
      startToCloseTimeout: this.timings.activityTimeoutMs,
      summary: 'check the decision with the provider',
      retry: { maximumAttempts: 1 },
    });
    if (decision.decision === 'RECHECK') return this.recheckOrderId(queued, asked);
    const verdict = judgeDecision({
      decision: decision.decision,
      orderType: this.orderType,
      bringsOrderId: newOrderId !== undefined,
      answer: decisionAnswerOf(asked),
    });
    switch (verdict.verdict) {
      case 'confirmed':
      case 'unconfirmed':
        return this.apply(queued, decision.decision, asked, verdict.verdict);
      case 'resume':
        if (asked.kind === 'status') return this.resumePolling(queued, asked.check);
        throw new Error('judgeDecision resumes polling only on a provider status');
      case 'refused':
        if (decision.force && verdict.forceable) {
          return this.apply(queued, decision.decision, asked, 'forced', verdict.reason);
        }
        return this.refuse(queued, {
          kind: verdict.kind,
          reason: verdict.reason,
          provider: providerAnswerOf(asked),
          forceable: verdict.forceable,
        });
    }
  }

  private apply(
    queued: QueuedDecision,
    decided: 'FULFILLED' | 'REFUNDED',
    asked: Asked<C>,
    how: 'confirmed' | 'unconfirmed' | 'forced',
    forcedPast?: string,
  ): void {
    const { decision } = queued;
    if (decision.orderId !== undefined) this.view.providerReference = decision.orderId;
    if (asked.kind === 'status') this.view.providerStatus = asked.check.status;
    const provider = providerAnswerOf(asked);
    const resolved = `Resolved as ${decided} by ${decidedByWhom(decision)}`;
    const event =
      how === 'confirmed'
        ? `${resolved}; the provider confirms it`
        : how === 'forced'
          ? `${resolved}, forced although ${forcedPast} (${provider.answer})`
          : `${resolved} (${provider.answer})`;
    if (how === 'forced') log.warn('review decision forced', { decision: decided, over: forcedPast });
    this.finish(decided, event, {
      result:
        how === 'confirmed' && asked.kind === 'status' && asked.meaning.kind === 'final'
          ? asked.meaning.result
          : undefined,
      resolution: { ...decision, provider, ...(forcedPast !== undefined && { forcedPast }) },
    });
    if (how !== 'confirmed') this.startWatch(decided, asked);
    this.answer(queued, 'applied');
  }

  private refuse(queued: QueuedDecision, refusal: DecisionRefusal): void {
    const { decision } = queued.decision;
    const because = refusal.provider ? `${refusal.reason} (${refusal.provider.answer})` : refusal.reason;
    log.warn('review decision refused', { decision, refusal: refusal.kind });
    this.note(`Review decision ${decision} by ${decidedByWhom(queued.decision)} refused: ${because}`);
    this.answer(queued, 'refused', refusal);
  }

  /** RECHECK with the provider's orderId for a gift card that had none: attach it if the provider knows it. */
  private recheckOrderId(queued: QueuedDecision, asked: Asked<C>): void {
    if (asked.kind !== 'status') {
      const unknown = asked.kind === 'not-found';
      return this.refuse(queued, {
        kind: unknown ? 'invalid' : 'unconfirmed',
        reason: unknown
          ? 'the provider does not know this orderId'
          : 'the provider could not be asked about the order',
        provider: providerAnswerOf(asked),
        forceable: false,
      });
    }
    const { decision } = queued;
    this.view.providerReference = decision.orderId;
    this.view.providerStatus = asked.check.status;
    this.note(
      `Recheck requested by ${decidedByWhom(decision)} with the provider’s order ${decision.orderId}`,
    );
    const { meaning } = asked;
    if (meaning.kind === 'open') return this.resumePolling(queued, asked.check);
    if (meaning.kind === 'final') {
      this.finish(meaning.status, `Recheck: the provider reports ${meaning.status}`, {
        result: meaning.result,
        resolution: { ...decision, provider: providerAnswerOf(asked) },
      });
    } else {
      this.note(`Recheck: provider status ${asked.check.status}; still in review`);
    }
    this.answer(queued, 'rechecked');
  }

  /** A gift card's orderId, given by an operator, is still being processed: poll it as if just placed. */
  private resumePolling(queued: QueuedDecision, check: C): void {
    const { decision } = queued;
    this.view.providerReference = decision.orderId;
    this.deadlineAt = Date.now() + this.timings.deadlineMs;
    this.nextCheckMs = this.timings.firstCheckMs;
    this.note(
      `The provider’s order ${decision.orderId}, given by ${decidedByWhom(decision)}, is ${check.status}: polling it again`,
    );
    this.observe(check);
    this.answer(queued, 'resumed');
  }

  /** Answers an update waiting for this decision (a signal's sender waits for nothing). */
  private answer(
    queued: QueuedDecision,
    outcome: DecisionOutcome['outcome'],
    refusal?: DecisionRefusal,
  ): void {
    // A copy: the view keeps changing after the answer is given.
    const view = JSON.parse(JSON.stringify(this.view)) as OrderView;
    queued.outcome = { outcome, ...(refusal && { refusal }), view };
    countDecisionOutcome(this.orderType, queued.decision.decision, outcome, refusal?.kind);
  }

  /** Decisions still queued when the order leaves review: recorded, not acted on. */
  private refuseQueued(): void {
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

  // ---- watch after a decision ----

  /** Top-ups are looked up by our ref; a gift card only by the provider's orderId. */
  private canLookUp(): boolean {
    return this.adapter.submitRetry === 'lookup' || this.view.providerReference !== undefined;
  }

  private startWatch(decision: 'FULFILLED' | 'REFUNDED', asked: Asked<C>): void {
    const { reviewWatchMs, reviewWatchFirstCheckMs } = this.timings;
    if (reviewWatchMs <= 0) return;
    if (!this.canLookUp()) {
      this.note('Not watched: the order has no provider reference to check');
      return;
    }
    const untilMs = Date.now() + reviewWatchMs;
    this.watch = {
      decision,
      ...(asked.kind === 'status' && { baseline: asked.check.status }),
      untilMs,
      nextCheckMs: reviewWatchFirstCheckMs,
    };
    const until = new Date(untilMs).toISOString();
    this.view.watch = { decision, until };
    this.note(`Watching the provider until ${until}: an answer against the decision reopens the order`);
  }

  private async watchStep(watch: DecisionWatch): Promise<void> {
    const wait = Math.min(watch.nextCheckMs, watch.untilMs - Date.now());
    if (wait > 0 && (await condition(() => this.historyIsLong(), wait, { summary: 'watch: next check' })))
      return; // continue as new first
    // Nobody waits for these: retried for up to one attempt's time, like a recheck.
    const asked = await this.askProvider(this.view.providerReference, {
      startToCloseTimeout: this.timings.activityTimeoutMs,
      summary: 'watch: does the provider still agree?',
      scheduleToCloseTimeout: this.timings.activityTimeoutMs,
      retry: this.retryPolicy(),
    });
    const at = new Date().toISOString();
    if (this.view.watch) this.view.watch.lastCheck = { at, ...providerAnswerOf(asked) };
    if (asked.kind === 'status') {
      const { status } = asked.check;
      this.view.providerStatus = status;
      if (status === watch.decision && asked.meaning.kind === 'final') {
        return this.endWatch('confirmed', `Watch: the provider confirms ${status}`, asked.meaning.result);
      }
      if (contradictsLater(watch.decision, watch.baseline, status))
        return this.disputeDecision(watch, status, asked);
    }
    if (Date.now() >= watch.untilMs) {
      return this.endWatch(
        'quiet',
        `Watch ended: the provider did not contradict ${watch.decision} (${providerAnswerOf(asked).answer})`,
      );
    }
    watch.nextCheckMs = Math.min(
      watch.nextCheckMs * 2,
      Math.max(this.timings.reviewRecheckMs, watch.nextCheckMs),
    );
  }

  private endWatch(outcome: 'confirmed' | 'quiet', event: string, result?: OrderResult): void {
    this.watch = undefined;
    if (result) this.view.result = { ...this.view.result, ...result };
    if (this.view.watch) this.view.watch.ended = { at: new Date().toISOString(), outcome };
    this.note(event);
  }

  /** The provider now says otherwise than the operator's decision: the order reopens for operators. */
  private disputeDecision(watch: DecisionWatch, status: 'FULFILLED' | 'REFUNDED', asked: Asked<C>): void {
    this.watch = undefined;
    const at = new Date().toISOString();
    if (this.view.watch) this.view.watch.ended = { at, outcome: 'disputed' };
    this.view.dispute = { decision: watch.decision, providerStatus: status, reportedAt: at };
    const resolution = this.view.review?.resolution;
    this.view.review = {
      reason: `the provider reports ${status} after the order was resolved ${watch.decision}`,
      evidence: providerAnswerOf(asked).answer,
      since: at,
      ...(resolution && { resolution }),
    };
    delete this.view.completedAt;
    log.warn('order disputed: the provider contradicts the decision', { decision: watch.decision, status });
    countDispute(this.orderType, watch.decision);
    this.transition('DISPUTED', `Disputed: the provider now reports ${status}, against ${watch.decision}`, {
      publish: !this.reviewGetsOwnRun('DISPUTED'),
    });
  }

  /** Decisions are checked against the provider (DECISIONS_CHECKED_PATCH). */
  private decisionsChecked(): boolean {
    return this.patchApplies(DECISIONS_CHECKED_PATCH);
  }

  /**
   * Whether the change a patch guards applies to this order. The lean lifecycle is newer than
   * every patch asked here and records no markers: each applies. Older orders ask `patched()` as
   * they always did. (REVIEW_RUN_PATCH is newer than the lean lifecycle: asked with `patched()`.)
   */
  private patchApplies(patchId: string): boolean {
    return this.lean || patched(patchId);
  }

  // ---- provider calls ----

  /** The lean lifecycle's first send: a local activity in the first workflow task, never retried. */
  private localSendActivities(): OrderActivities {
    const { taskTimeoutMs } = workflowInfo();
    return proxyLocalActivities<OrderActivities>({
      // Both well inside the task's heartbeat point (80 % of its timeout) in the normal case.
      scheduleToStartTimeout: Math.min(LOCAL_SEND_QUEUE_MS, taskTimeoutMs / 10),
      startToCloseTimeout: Math.min(LOCAL_SEND_TIMEOUT_MS, this.timings.activityTimeoutMs, taskTimeoutMs / 2),
      retry: { maximumAttempts: 1 },
    });
  }

  /**
   * The lean lifecycle's first send, as a local activity. One the worker declined (its provider
   * calls are rate-limited by the task queue) or that never got a slot was not sent: it goes
   * through the task queue instead (`viaQueue`), at once.
   */
  private async submitLocalFirst(
    how: SubmitHow,
    viaQueue: () => Promise<Submission<C>>,
  ): Promise<Submission<C>> {
    try {
      return await this.adapter.submit(this.localSendActivities(), this.order, {
        ...how,
        notAfter: this.sendWindowEnd(),
      });
    } catch (err) {
      const declined = providerFailureOf(err)?.type === ProviderFailureType.localSendDeclined;
      if (!declined && !neverStarted(err)) throw err;
      return viaQueue();
    }
  }

  /** SendOptions.notAfter of the local send: Date.now() is this workflow task's start. */
  private sendWindowEnd(): number {
    return Date.now() + LOCAL_SEND_WINDOW_SHARE * workflowInfo().taskTimeoutMs;
  }

  private submitActivities(): OrderActivities {
    const base = { startToCloseTimeout: this.timings.activityTimeoutMs, summary: 'submit to the provider' };
    const options: ActivityOptions =
      this.adapter.submitRetry === 'once'
        ? { ...base, retry: { maximumAttempts: 1 } }
        : {
            ...base,
            // Retries stop at the deadline; each one looks the ref up before it sends again.
            scheduleToCloseTimeout: Math.max(this.deadlineAt - Date.now(), this.timings.activityTimeoutMs),
            retry: this.retryPolicy([ProviderFailureType.rejected]),
          };
    return proxyActivities<OrderActivities>(options);
  }

  /**
   * The provider's answer, or why there is none. Retries failed calls for up to `withinMs`.
   * `summary`: why it is asked, shown on the activity in Temporal UI.
   */
  private async lookUp(withinMs: number, summary: string): Promise<C | string> {
    const activities = proxyActivities<OrderActivities>({
      startToCloseTimeout: this.timings.activityTimeoutMs,
      summary,
      scheduleToCloseTimeout: Math.max(withinMs, this.timings.activityTimeoutMs),
      retry: this.retryPolicy(),
    });
    const pending = this.adapter.check(activities, this.order, this.view.providerReference);
    if (!pending) return 'the order cannot be looked up (no provider reference)';
    try {
      const outcome = await pending;
      return outcome.found ? outcome.check : PROVIDER_DOES_NOT_KNOW;
    } catch (err) {
      log.warn('status check failed', { failure: describeFailure(err) });
      return `the status check failed (${describeFailure(err)})`;
    }
  }

  /** What the provider says about the order (by `reference` for a gift card), for a decision or the watch. */
  private async askProvider(reference: string | undefined, options: ActivityOptions): Promise<Asked<C>> {
    const pending = this.adapter.check(proxyActivities<OrderActivities>(options), this.order, reference);
    if (!pending) return { kind: 'no-reference' };
    try {
      const outcome = await pending;
      if (!outcome.found) return { kind: 'not-found' };
      return { kind: 'status', check: outcome.check, meaning: this.meaningOf(outcome.check) };
    } catch (err) {
      log.warn('status check failed', { failure: describeFailure(err) });
      return { kind: 'failed', detail: describeFailure(err) };
    }
  }

  private retryPolicy(nonRetryableErrorTypes: string[] = []): ActivityOptions['retry'] {
    return {
      initialInterval: Math.min(RETRY_INITIAL_INTERVAL_MS, this.timings.maxIntervalMs),
      backoffCoefficient: 2,
      maximumInterval: this.timings.maxIntervalMs,
      nonRetryableErrorTypes,
    };
  }

  private backoff(intervalMs: number, factor: number): number {
    return Math.min(this.timings.maxIntervalMs, intervalMs * factor);
  }

  // ---- state changes ----

  private isOpen(): boolean {
    return this.view.status === 'SUBMITTED' || this.view.status === 'PROCESSING';
  }

  private toReview(reason: string, evidence: string): void {
    this.view.review = { reason, evidence, since: new Date().toISOString() };
    log.warn('order needs review', { reason, evidence });
    // Published by the review's own run: this one closes without it, so the review queue (by
    // OrderStatus) lists the order once.
    this.transition('NEEDS_REVIEW', `Needs review: ${reason}`, {
      publish: !this.reviewGetsOwnRun('NEEDS_REVIEW'),
    });
  }

  private finish(
    status: Extract<OrderStatus, 'FULFILLED' | 'REFUNDED' | 'FAILED'>,
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
  }

  private transition(
    status: OrderStatus,
    event: string,
    { at, publish = true }: { at?: string; publish?: boolean } = {},
  ): void {
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
  private announce(type: OrderEvent['type'], decision?: OrderEvent['decision'], at?: string): void {
    if (!this.input.webhooks || !this.input.clientId || !this.patchApplies(WEBHOOK_EVENTS_PATCH)) return;
    const event: OrderEvent = {
      sequence: ++this.eventSequence,
      type,
      // The lean lifecycle learns of PROCESSING when polling ends: the event keeps the provider's time.
      timestamp: at ?? new Date().toISOString(),
      client: this.input.clientId,
      ...(this.input.providerRef ? { providerRef: this.input.providerRef } : {}),
      // A copy: the view changes on while the announcement waits its turn.
      view: JSON.parse(JSON.stringify(this.view)) as OrderView,
      ...(decision ? { decision } : {}),
    };
    this.announcing = this.announcing.then(() =>
      announcer.announceOrderEvent(event).catch((err: unknown) => {
        log.error('webhook event not announced', { type, sequence: event.sequence, error: String(err) });
      }),
    );
  }

  /** A timeline entry; `event` never holds a phone number or card code. */
  private note(event: string, at = new Date().toISOString()): void {
    this.view.updatedAt = at;
    this.view.timeline.push({ at, status: this.view.status, event });
    if (this.view.timeline.length > MAX_TIMELINE_ENTRIES) this.view.timeline.splice(1, 1);
    setCurrentDetails(orderDetails(this.view));
  }

  /** Keeps the OrderType/OrderStatus search attributes current; no event when the starter already set them. */
  private publishStatus(): void {
    const current = workflowInfo().typedSearchAttributes;
    const updates: SearchAttributeUpdatePair[] = [];
    if (current.get(OrderTypeAttribute) !== this.orderType) {
      updates.push({ key: OrderTypeAttribute, value: this.orderType });
    }
    if (current.get(OrderStatusAttribute) !== this.view.status) {
      updates.push({ key: OrderStatusAttribute, value: this.view.status });
    }
    // Orders accepted before AcceptedAt existed would be missing from the list: they gain it at
    // their next status change. Asked only when it is absent, so new orders record no patch marker.
    if (current.get(AcceptedAtAttribute) === undefined && patched(ACCEPTED_AT_PATCH)) {
      updates.push({ key: AcceptedAtAttribute, value: new Date(this.view.acceptedAt) });
    }
    const reviewSince = this.reviewSinceUpdate(current.get(ReviewSinceAttribute));
    if (reviewSince) updates.push(reviewSince);
    if (updates.length > 0) upsertSearchAttributes(updates);
  }

  /**
   * Entering review (or a dispute): ReviewSince, so the queue sorts and alerts by how long an order
   * has waited. Kept when the order leaves review (queries filter on OrderStatus).
   */
  private reviewSinceUpdate(current: Date | undefined): SearchAttributeUpdatePair | undefined {
    const since = this.takesDecisions() ? this.view.review?.since : undefined;
    if (since === undefined || current?.getTime() === Date.parse(since)) return undefined;
    return this.patchApplies(REVIEW_SINCE_PATCH)
      ? { key: ReviewSinceAttribute, value: new Date(since) }
      : undefined;
  }

  /** Polling and review can last long; a fresh run with the state carried over keeps history bounded. */
  private historyIsLong(): boolean {
    const { historyLength, continueAsNewSuggested } = workflowInfo();
    return (
      continueAsNewSuggested || historyLength >= (this.input.historyEventLimit ?? DEFAULT_HISTORY_EVENT_LIMIT)
    );
  }

  /**
   * Whether the review the order is in should be shown by a run of its own (REVIEW_RUN_PATCH):
   * it takes decisions and this run was not started for this review.
   */
  private reviewGetsOwnRun(status: OrderStatus = this.view.status): boolean {
    if (!decisionStatuses.includes(status) || !this.view.review) return false;
    const shown = this.shownReview;
    if (shown?.status === status && shown.inReviewSince === this.view.review.since) return false;
    return patched(REVIEW_RUN_PATCH);
  }

  /** This run's search attributes with the review's status and since when. */
  private reviewAttributes(notice: ReviewNotice): TypedSearchAttributes {
    return workflowInfo().typedSearchAttributes.updateCopy([
      { key: OrderStatusAttribute, value: notice.status },
      { key: ReviewSinceAttribute, value: new Date(notice.inReviewSince) },
    ]);
  }

  /** Continues as new when the history grows long, or into a run of the review's own. */
  private async continueAsNewIfDue(): Promise<void> {
    const long = this.historyIsLong();
    const intoReview = !long && this.reviewGetsOwnRun();
    if (!(long || intoReview) || this.decisions.length > 0) return;
    // Announcements first: a decision that arrives while one is handed over must not be left
    // behind in this run. Then an update handler still returning its answer would lose it; a
    // decision arriving meanwhile goes first. Nothing is awaited between that check and the end.
    await this.announcing;
    await condition(() => allHandlersFinished() || this.decisions.length > 0);
    if (this.decisions.length > 0) return;
    log.info(intoReview ? 'continuing as new into review' : 'continuing as new to keep the history short', {
      historyLength: workflowInfo().historyLength,
    });
    const continued: OrderInput = {
      ...this.input,
      continued: {
        view: this.view,
        deadlineAt: this.deadlineAt,
        nextCheckMs: this.nextCheckMs,
        ...(this.watch && { watch: this.watch }),
        ...(this.eventSequence > 0 ? { eventSequence: this.eventSequence } : {}),
      },
    };
    // A long review shown in its own run keeps showing it in the next.
    const showsReview = intoReview || (this.shownReview !== undefined && this.takesDecisions());
    const notice = showsReview ? reviewNotice(this.view) : undefined;
    const continueAsNew = makeContinueAsNewFunc<OrderWorkflow>({
      // The starter's memo (the API keeps the request's fingerprint there) goes along explicitly.
      memo: workflowInfo().memo,
      // The review's run starts listed in review: no moment where visibility still says SUBMITTED.
      ...(notice && { typedSearchAttributes: this.reviewAttributes(notice) }),
    });
    await (notice ? continueAsNew(continued, notice, ...pastableDecisions) : continueAsNew(continued));
  }
}

// ---- failures ----

interface ProviderFailure {
  type: string;
  message: string;
  details?: ProviderFailureDetails;
}

/** The provider activity's ApplicationFailure behind an activity failure, if that is what it was. */
function providerFailureOf(err: unknown): ProviderFailure | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (!(cause instanceof ApplicationFailure) || !cause.type) return undefined;
  return { type: cause.type, message: cause.message, details: cause.details?.[0] as ProviderFailureDetails };
}

/** A local activity that timed out before the worker started it (schedule-to-start): it did nothing. */
function neverStarted(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_START';
}

/** Only these prove that the provider did not act on the request. */
function isSafeToRepeat(type: string): boolean {
  return type === ProviderFailureType.notReached || type === ProviderFailureType.rateLimited;
}

/** Evidence for operators: activity, failure type, codes and message — never a request body. */
function describeFailure(err: unknown): string {
  const parts: string[] = [];
  // A local activity's failure comes without the ActivityFailure that names it: name its operation.
  const operation =
    err instanceof ApplicationFailure ? providerFailureOf(err)?.details?.operation : undefined;
  if (operation) parts.push(`${operation} failed`);
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof ActivityFailure) parts.push(`${e.activityType ?? 'activity'} failed`);
    else if (e instanceof TimeoutFailure) parts.push(`${e.timeoutType} timeout`);
    else if (e instanceof ApplicationFailure) parts.push(e.type ? `${e.type}: ${e.message}` : e.message);
    else parts.push(e.message);
  }
  return parts.join('; ') || String(err);
}

/** An unclear send's story for operators: its first step and the latest ones. */
function summarize(evidence: string[]): string {
  if (evidence.length <= MAX_EVIDENCE_STEPS) return evidence.join('; ');
  const skipped = evidence.length - MAX_EVIDENCE_STEPS;
  return [evidence[0], `(${skipped} more)`, ...evidence.slice(-(MAX_EVIDENCE_STEPS - 1))].join('; ');
}

function refundOf(check: ProviderCheck): OrderResult {
  const result: OrderResult = {};
  if (check.refund_message) result.refundMessage = check.refund_message;
  if (check.suggested_offers?.length) {
    result.suggestedOffers = check.suggested_offers.map((offer) => ({
      planCode: offer.plan_code,
      ...(offer.amount !== undefined && { amount: offer.amount }),
      ...(offer.typename !== undefined && { typename: offer.typename }),
    }));
  }
  return result;
}

/** The provider's answer as the decision rules read it. */
function decisionAnswerOf<C extends ProviderCheck>(asked: Asked<C>): DecisionAnswer {
  if (asked.kind !== 'status') return asked.kind === 'failed' ? { kind: 'failed' } : { kind: asked.kind };
  const { meaning } = asked;
  return {
    kind: 'status',
    status: asked.check.status,
    usable: meaning.kind === 'final',
    ...(meaning.kind === 'review' && { problem: meaning.evidence }),
  };
}

/** What the provider said, for the resolution, a refusal and the watch (no personal data). */
function providerAnswerOf<C extends ProviderCheck>(asked: Asked<C>): ProviderAnswer {
  switch (asked.kind) {
    case 'status': {
      const { status } = asked.check;
      const problem =
        status === 'FULFILLED' && asked.meaning.kind === 'review' ? ` (${asked.meaning.evidence})` : '';
      return { status, answer: `provider status ${status}${problem}` };
    }
    case 'not-found':
      return { answer: PROVIDER_DOES_NOT_KNOW };
    case 'failed':
      return { answer: `the status check failed (${asked.detail})` };
    case 'no-reference':
      return { answer: 'the order cannot be looked up (no provider reference)' };
  }
}
