/**
 * The lifecycle every order goes through, whatever its type: submit to the provider, poll on a
 * schedule that follows the provider, end FULFILLED / REFUNDED / FAILED, or wait in NEEDS_REVIEW
 * for an operator (re-checking the provider now and then). A small per-type adapter says how to
 * submit, how to check and what a fulfilled order delivers; nothing else differs between types.
 *
 * Deterministic workflow code: no I/O, no Node built-ins; Date.now() is the SDK's replay-safe clock.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  log,
  makeContinueAsNewFunc,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  TimeoutFailure,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { OrderActivities } from '../activities';
import {
  ProviderFailureType,
  type CheckOutcome,
  type ProviderFailureDetails,
  type Submission,
} from '../activities/outcomes.types';
import { checkReviewDecision } from '../src/orders/review-decision';
import type { ReviewDecision } from '../src/orders/schemas';
import { REVIEW_DECISION_EVENT, statusEventType } from '../src/webhooks/event-types';
import { WEBHOOK_EVENTS_PATCH, type OrderEvent } from './webhook-contract';
import {
  defaultOrderTimings,
  finalStatuses,
  OrderStatusAttribute,
  OrderTypeAttribute,
  resolveReviewSignal,
  statusQuery,
  type OrderInput,
  type OrderRequest,
  type OrderResult,
  type OrderStatus,
  type OrderTimings,
  type OrderType,
  type OrderView,
  type ProviderStatus,
} from './contract';

/** The part of every provider check answer the lifecycle reads; the adapter reads the rest. */
export interface ProviderCheck {
  status: ProviderStatus;
  message?: string;
  suggested_plans?: { plan_code: string; amount: number }[];
}

/** What the adapter knows of the order it submits or checks. */
export interface AdaptedOrder<R extends OrderRequest> {
  request: R;
  /** The ref a top-up carries to the provider (OrderInput.providerRef, or the request's ref). */
  providerRef: string;
}

export interface OrderAdapter<R extends OrderRequest, C extends ProviderCheck> {
  /**
   * `lookup`: Temporal may retry the submission, because a retry looks the ref up before sending.
   * `once`: it may not — the submission cannot be looked up, so an unclear attempt goes to review.
   */
  submitRetry: 'lookup' | 'once';
  /** `resubmission`: an earlier submit activity of this order gave up; a top-up looks its ref up first. */
  submit(activities: OrderActivities, order: AdaptedOrder<R>, resubmission: boolean): Promise<Submission<C>>;
  /** Undefined when the order cannot be looked up (e.g. a gift card with no order id). */
  check(
    activities: OrderActivities,
    order: AdaptedOrder<R>,
    providerReference: string | undefined,
  ): Promise<CheckOutcome<C>> | undefined;
  /** What a FULFILLED order delivered, or why that answer cannot be accepted as is. */
  fulfilledResult(check: C, request: R): OrderResult | { problem: string };
}

export type OrderWorkflow = (input: OrderInput) => Promise<OrderView>;

export function defineOrderWorkflow<R extends OrderRequest, C extends ProviderCheck>(
  orderType: R['type'],
  adapter: OrderAdapter<R, C>,
): OrderWorkflow {
  return (input) => new OrderLifecycle(orderType, adapter, input).run();
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
/** lookUp's answer when the provider has no trace of the ref or order. */
const PROVIDER_DOES_NOT_KNOW = 'the provider does not know the order';
/**
 * Announcing an event is one signal-with-start from the worker: a local activity, so it costs the
 * order one marker event and no task. Retried until Temporal takes it: a lost event is a missed webhook.
 */
const announcer = proxyLocalActivities<Pick<OrderActivities, 'announceOrderEvent'>>({
  startToCloseTimeout: 10_000,
  retry: { initialInterval: 1_000, backoffCoefficient: 2, maximumInterval: 60_000 },
});

type Interpretation =
  | { kind: 'open'; status: 'SUBMITTED' | 'PROCESSING' }
  | { kind: 'final'; status: 'FULFILLED' | 'REFUNDED'; result: OrderResult }
  | { kind: 'review'; reason: string; evidence: string };

class OrderLifecycle<R extends OrderRequest, C extends ProviderCheck> {
  private readonly request: R;
  private readonly order: AdaptedOrder<R>;
  private readonly timings: OrderTimings;
  private readonly view: OrderView;
  /** Epoch ms after which a still-open order goes to NEEDS_REVIEW as stuck. */
  private readonly deadlineAt: number;
  /** Polling: how long to wait before the next check. */
  private nextCheckMs: number;
  /** Valid operator decisions received in review, oldest first. */
  private readonly decisions: ReviewDecision[] = [];
  /** Webhook events: the last sequence number announced, and the announcements in flight, in order. */
  private eventSequence: number;
  private announcing: Promise<void> = Promise.resolve();

  constructor(
    private readonly orderType: OrderType,
    private readonly adapter: OrderAdapter<R, C>,
    private readonly input: OrderInput,
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
    this.deadlineAt = carried?.deadlineAt ?? Date.now() + this.timings.deadlineMs;
    this.nextCheckMs = carried?.nextCheckMs ?? this.timings.firstCheckMs;
    this.eventSequence = carried?.eventSequence ?? 0;
    setHandler(statusQuery, () => this.view);
    setHandler(resolveReviewSignal, (decision) => this.onDecision(decision));
  }

  async run(): Promise<OrderView> {
    this.publishStatus();
    while (!finalStatuses.includes(this.view.status)) {
      if (this.view.status === 'ACCEPTED') {
        await this.submit();
        continue;
      }
      await this.continueAsNewIfLong();
      if (this.view.status === 'NEEDS_REVIEW') await this.reviewStep();
      else await this.pollStep();
    }
    await this.announcing;
    return this.view;
  }

  // ---- submission ----

  private async submit(): Promise<void> {
    for (let tries = 1; ; tries++) {
      try {
        const submission = await this.adapter.submit(this.submitActivities(), this.order, tries > 1);
        return this.onSubmitted(submission);
      } catch (err) {
        const failure = providerFailureOf(err);
        if (failure?.type === ProviderFailureType.rejected) {
          const code =
            failure.details?.code ??
            (failure.details?.status ? `HTTP_${failure.details.status}` : 'REJECTED');
          return this.finish('FAILED', `The provider refused the order (${code})`, {
            failure: { code, message: failure.message },
          });
        }
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
        await sleep(delayMs);
      }
    }
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
    const answer = await this.lookUp(this.timings.activityTimeoutMs);
    if (typeof answer !== 'string') return this.onSubmitted({ alreadySent: true, check: answer });
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
    const wait = Math.min(this.nextCheckMs, this.deadlineAt - Date.now());
    if (wait > 0) await sleep(wait);
    const answer = await this.lookUp(this.deadlineAt - Date.now());
    if (typeof answer === 'string') this.nextCheckMs = this.backoff(this.nextCheckMs, 2);
    else this.observe(answer);
    if (this.isOpen() && Date.now() >= this.deadlineAt) {
      const last = typeof answer === 'string' ? answer : `provider status ${answer.status}`;
      this.toReview('stuck: no final status by the deadline', last);
    }
  }

  /** Acts on a check while polling: every answer counts. */
  private observe(check: C): void {
    const previous = this.view.providerStatus;
    this.view.providerStatus = check.status;
    const meaning = this.interpret(check);
    switch (meaning.kind) {
      case 'final':
        return this.finish(meaning.status, `The provider reports ${check.status}`, {
          result: meaning.result,
        });
      case 'review':
        return this.toReview(meaning.reason, meaning.evidence);
      case 'open':
        // HANDLING just began: look again when the provider's HANDLING time should be over.
        this.nextCheckMs =
          check.status === 'HANDLING' && previous !== 'HANDLING'
            ? this.timings.handlingCheckMs
            : this.backoff(this.nextCheckMs, 2);
        if (meaning.status !== this.view.status) {
          this.transition(meaning.status, `The provider reports ${check.status}`);
        }
    }
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
    }
  }

  // ---- review ----

  private async reviewStep(): Promise<void> {
    // Also wake when the history grows long: signals alone (a script resending a malformed
    // decision, say) must not push it towards Temporal's limit while we wait.
    const woke = await condition(
      () => this.decisions.length > 0 || this.historyIsLong(),
      this.timings.reviewRecheckMs,
    );
    if (woke && this.decisions.length === 0) return; // the loop continues as new first
    const decision = this.decisions.shift();
    if (!decision) return this.recheck();
    if (decision.decision === 'RECHECK') {
      this.note(`Recheck requested by ${decision.operator}`);
      await this.recheck(decision);
    } else {
      this.finish(decision.decision, `Resolved as ${decision.decision} by ${decision.operator}`, {
        resolution: decision,
      });
    }
    this.announce(REVIEW_DECISION_EVENT, { ...decision, outcome: this.view.status });
  }

  /** In review only a final FULFILLED or REFUNDED settles the order; anything else waits for an operator. */
  private async recheck(requestedBy?: ReviewDecision): Promise<void> {
    // One attempt's worth of retries: decisions queued behind a recheck should not wait long.
    const answer = await this.lookUp(this.timings.activityTimeoutMs);
    if (typeof answer !== 'string') this.view.providerStatus = answer.status;
    const meaning = typeof answer === 'string' ? undefined : this.interpret(answer);
    if (meaning?.kind === 'final') {
      return this.finish(meaning.status, `Recheck: the provider reports ${meaning.status}`, {
        result: meaning.result,
        resolution: requestedBy,
      });
    }
    if (requestedBy) {
      const found = typeof answer === 'string' ? answer : `provider status ${answer.status}`;
      this.note(`Recheck: ${found}; still in review`);
    }
  }

  private onDecision(payload: unknown): void {
    // Operators type this by hand in Temporal UI: check it by the API's rule (zod-free, see review-decision.ts).
    const checked = checkReviewDecision(payload);
    if (!checked.ok) {
      const fields = checked.fields.join(', ');
      log.warn('invalid review decision ignored', { fields });
      this.note(`Invalid review decision ignored (${fields})`);
      return;
    }
    const { decision, operator } = checked.decision;
    if (this.view.status !== 'NEEDS_REVIEW') {
      this.note(`Review decision ${decision} by ${operator} ignored: the order is not in review`);
      return;
    }
    this.decisions.push(checked.decision);
  }

  // ---- provider calls ----

  private submitActivities(): OrderActivities {
    const base = { startToCloseTimeout: this.timings.activityTimeoutMs };
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

  /** The provider's answer, or why there is none. Retries failed calls for up to `withinMs`. */
  private async lookUp(withinMs: number): Promise<C | string> {
    const activities = proxyActivities<OrderActivities>({
      startToCloseTimeout: this.timings.activityTimeoutMs,
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
    this.transition('NEEDS_REVIEW', `Needs review: ${reason}`);
  }

  private finish(
    status: Extract<OrderStatus, 'FULFILLED' | 'REFUNDED' | 'FAILED'>,
    event: string,
    outcome: Pick<OrderView, 'result' | 'failure'> & { resolution?: ReviewDecision },
  ): void {
    const now = new Date().toISOString();
    if (outcome.result) this.view.result = { ...this.view.result, ...outcome.result };
    if (outcome.failure) this.view.failure = outcome.failure;
    if (outcome.resolution && this.view.review)
      this.view.review.resolution = { ...outcome.resolution, at: now };
    this.view.completedAt = now;
    this.transition(status, event);
    // Decisions that arrived while a recheck settled the order: recorded, not acted on.
    for (const late of this.decisions.splice(0)) {
      this.note(
        `Review decision ${late.decision} by ${late.operator} ignored: the order is already ${status}`,
      );
    }
  }

  private transition(status: OrderStatus, event: string): void {
    this.view.status = status;
    this.note(event);
    this.publishStatus();
    log.info('order status changed', { status, event });
    if (status !== 'ACCEPTED') this.announce(statusEventType(status));
  }

  /**
   * Hands the event to the order's webhook delivery (README "Webhooks") without waiting for it:
   * announcements run one after another, in order, and run() waits for the last before it ends.
   * Only for a client that had endpoints: any other order's history is as it was, not one event more.
   */
  private announce(type: OrderEvent['type'], decision?: OrderEvent['decision']): void {
    if (!this.input.webhooks || !this.input.clientId || !patched(WEBHOOK_EVENTS_PATCH)) return;
    const event: OrderEvent = {
      sequence: ++this.eventSequence,
      type,
      timestamp: new Date().toISOString(),
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
  private note(event: string): void {
    const at = new Date().toISOString();
    this.view.updatedAt = at;
    this.view.timeline.push({ at, status: this.view.status, event });
    if (this.view.timeline.length > MAX_TIMELINE_ENTRIES) this.view.timeline.splice(1, 1);
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
    if (updates.length > 0) upsertSearchAttributes(updates);
  }

  /** Polling and review can last long; a fresh run with the state carried over keeps history bounded. */
  private historyIsLong(): boolean {
    const { historyLength, continueAsNewSuggested } = workflowInfo();
    return (
      continueAsNewSuggested || historyLength >= (this.input.historyEventLimit ?? DEFAULT_HISTORY_EVENT_LIMIT)
    );
  }

  private async continueAsNewIfLong(): Promise<void> {
    if (!this.historyIsLong() || this.decisions.length > 0) return;
    log.info('continuing as new to keep the history short', { historyLength: workflowInfo().historyLength });
    await this.announcing;
    // The starter's memo (the API keeps the request's fingerprint there) goes along explicitly.
    await makeContinueAsNewFunc<OrderWorkflow>({ memo: workflowInfo().memo })({
      ...this.input,
      continued: {
        view: this.view,
        deadlineAt: this.deadlineAt,
        nextCheckMs: this.nextCheckMs,
        ...(this.eventSequence > 0 ? { eventSequence: this.eventSequence } : {}),
      },
    });
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

/** Only these prove that the provider did not act on the request. */
function isSafeToRepeat(type: string): boolean {
  return type === ProviderFailureType.notReached || type === ProviderFailureType.rateLimited;
}

/** Evidence for operators: activity, failure type, codes and message — never a request body. */
function describeFailure(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof ActivityFailure) parts.push(`${e.activityType ?? 'activity'} failed`);
    else if (e instanceof TimeoutFailure) parts.push(`${e.timeoutType} timeout`);
    else if (e instanceof ApplicationFailure) parts.push(e.type ? `${e.type}: ${e.message}` : e.message);
    else parts.push(e.message);
  }
  return parts.join('; ') || String(err);
}

function refundOf(check: ProviderCheck): OrderResult {
  const result: OrderResult = {};
  if (check.message) result.message = check.message;
  if (check.suggested_plans?.length) {
    result.suggestedPlans = check.suggested_plans.map((plan) => ({
      planCode: plan.plan_code,
      amount: plan.amount,
    }));
  }
  return result;
}
