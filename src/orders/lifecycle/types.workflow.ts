/** The shapes the lifecycle's phases share: what an adapter says of its order type, and what the provider said. */
import type { OrderActivities } from '../order.activities';
import type { CheckOutcome, PollOutcome, PollPlan, Submission } from '../../../contract/activity-outcomes';
import type {
  DecisionOutcome,
  OrderDebit,
  OrderInput,
  OrderRequest,
  OrderResult,
  OrderView,
  ProviderStatus,
  ReviewDecision,
} from '../../../contract/order';
import type { PastableDecision, ReviewNotice } from '../../../contract/ui-metadata';
import type { PlacementSearch, PlacementSearchInput } from '../../../contract/placement-records';

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
  /** ISO time the order was accepted (OrderInput.acceptedAt): nothing of it was sent before. */
  acceptedAt: string;
}

/** How the lifecycle wants a submission made. */
export interface SubmitHow {
  /** The first send, a local activity: not after this (SendOptions.notAfter). */
  notAfter?: number;
  /** A placement retried through the task queue: nothing placed after this (SendOptions.placeUntil). */
  placeUntil?: number;
  /** The account workflow let this held order go: the worker's send gate lets it through (SendOptions.released). */
  released?: boolean;
  /** The first workflow task may have sent before: the send refuses unsent (SendOptions.earlierTaskMayHaveSent). */
  earlierTaskMayHaveSent?: boolean;
}

export interface OrderAdapter<R extends OrderRequest, C extends ProviderCheck> {
  /**
   * `lookup`: the submission carries our ref, so an unclear one can be looked up and settled.
   * `once`: it cannot be looked up: only an attempt that certainly never reached the provider is
   * repeated (by the activity's retry policy), and an unclear one goes to review.
   */
  submitRetry: 'lookup' | 'once';
  submit(activities: OrderActivities, order: AdaptedOrder<R>, how: SubmitHow): Promise<Submission<C>>;
  /** Undefined when the order cannot be looked up (e.g. a gift card with no order id). */
  check(
    activities: OrderActivities,
    order: AdaptedOrder<R>,
    providerReference: string | undefined,
  ): Promise<CheckOutcome<C>> | undefined;
  /** Polling (activities pollUntilSettled); undefined like `check`. */
  poll(
    activities: OrderActivities,
    order: AdaptedOrder<R>,
    providerReference: string | undefined,
    plan: PollPlan,
  ): Promise<PollOutcome<C>> | undefined;
  /**
   * A submission that cannot be looked up by ref (`once`) and whose answer was lost: looked for in
   * the provider's records (records.workflow.ts). Absent: such a submission goes to review.
   */
  findInRecords?(
    activities: OrderActivities,
    order: AdaptedOrder<R>,
    window: Omit<PlacementSearchInput, 'request'>,
  ): Promise<PlacementSearch>;
  /** What a FULFILLED order delivered, or why that answer cannot be accepted as is. */
  fulfilledResult(check: C, request: R): OrderResult | { problem: string };
  /**
   * What a PARTIALLY_FILLED order delivered and what was refunded, or why that answer cannot be
   * accepted as is; absent for order types the provider never fills in part.
   */
  partialResult?(check: C, request: R): OrderResult | { problem: string };
  /** What the provider debited for an order this answer settles, when the answer says (debit.ts). */
  debit?(check: C, request: R): OrderDebit | undefined;
  /**
   * Why a check answer found under this order's ref cannot be this order's (another number or
   * amount; another topupId than the send returned; made before the order was accepted), or undefined.
   */
  notThisOrder?(check: C, order: AdaptedOrder<R>, providerReference: string | undefined): string | undefined;
}

/** The statuses of an order the provider has and has not settled. */
export type OpenStatus = 'SUBMITTED' | 'PROCESSING' | 'QUEUED';

export type Interpretation =
  | { kind: 'open'; status: OpenStatus }
  | { kind: 'final'; status: 'FULFILLED' | 'PARTIALLY_FULFILLED' | 'REFUNDED'; result: OrderResult }
  | { kind: 'review'; reason: string; evidence: string; refundMessage?: string };

/** What the provider said about the order, for a decision or the watch. */
export type Asked<C> =
  | { kind: 'status'; check: C; meaning: Interpretation }
  | { kind: 'not-found' }
  | { kind: 'failed'; detail: string }
  | { kind: 'no-reference' };

/** A decision waiting for the main loop; an update's handler waits for `outcome`. */
export interface QueuedDecision {
  decision: ReviewDecision;
  outcome?: DecisionOutcome;
}

/**
 * An order's workflow. `review` and `decisions` are set only by the workflow itself, when it
 * continues as new into review: they are there for Temporal UI to show.
 */
export type OrderWorkflow = (
  input: OrderInput,
  review?: ReviewNotice,
  ...decisions: readonly PastableDecision[]
) => Promise<OrderView>;
