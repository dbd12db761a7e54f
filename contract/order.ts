/**
 * The order workflows' contract, shared by the workflows, the worker, the intake API and tests:
 * workflow names and IDs, the `status` query, the `resolveReview` signal, the `decideReview`
 * update, search attributes and the types that cross the boundary. Safe to import from workflow
 * code (no I/O).
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { OrderRequest, OrderStatus, OrderType, ReviewDecision } from './schemas';
import type { ProviderStatus } from './provider';
import type { OrderDebit, OrderHold, OrderResult, ProviderAnswer, WorkflowOrderView } from './order-view';

export type {
  OrderDebit,
  OrderHold,
  OrderResult,
  ProviderAnswer,
  ReviewResolution,
  TimelineEntry,
} from './order-view';
/** The order as its workflow sees it now (contract/order-view.ts, the API's OrderView's base). */
export type OrderView = WorkflowOrderView;

export type { OrderRequest, OrderStatus, OrderType, ReviewDecision, ProviderStatus };

export const DEFAULT_TASK_QUEUE = 'topup-orders';

/**
 * One workflow per (client, ref), so a repeated submission cannot start a second and two clients'
 * refs never meet. The configured default client (`client` undefined here) keeps the form of
 * before clients existed, `order-<ref>`, so its orders in flight stay reachable and its old refs
 * stay deduplicated; every other client gets `order:<client>:<ref>`. A `:` is in neither a client
 * id nor a ref, so the two forms cannot collide and each ID names exactly one (client, ref).
 */
export function orderWorkflowId(ref: string, client?: string): string {
  return client === undefined ? `order-${ref}` : `order:${client}:${ref}`;
}

/** The inverse of orderWorkflowId; `client` undefined = the default client's (or an old) order. */
export function parseOrderWorkflowId(workflowId: string): { ref: string; client?: string } | undefined {
  const scoped = /^order:([^:]+):([^:]+)$/.exec(workflowId);
  if (scoped) return { client: scoped[1]!, ref: scoped[2]! };
  return workflowId.startsWith('order-') ? { ref: workflowId.slice('order-'.length) } : undefined;
}

export const workflowTypeByOrderType = {
  mobile_topup: 'mobileTopupWorkflow',
  internet_topup: 'internetTopupWorkflow',
  gift_card: 'giftCardWorkflow',
} as const satisfies Record<OrderType, string>;

/** Keyword search attributes, so operators can filter `OrderStatus="NEEDS_REVIEW"` in Temporal UI. */
export const OrderTypeAttribute = defineSearchAttributeKey('OrderType', SearchAttributeType.KEYWORD);
export const OrderStatusAttribute = defineSearchAttributeKey('OrderStatus', SearchAttributeType.KEYWORD);
/**
 * The client that owns the order, set by the API when it starts the workflow: listing filters on
 * it server-side. Absent on orders started before clients existed (they belong to the default client).
 */
export const OrderClientAttribute = defineSearchAttributeKey('OrderClient', SearchAttributeType.KEYWORD);
/**
 * When the intake API accepted the order, set once at start. The list pages by it (newest first)
 * because neither a run's StartTime (a new run starts at each continue-as-new) nor the visibility
 * store's own order (SQL: open runs first, closed ones by close time) is the acceptance order.
 */
export const AcceptedAtAttribute = defineSearchAttributeKey('AcceptedAt', SearchAttributeType.DATETIME);
/**
 * When the order last entered NEEDS_REVIEW or DISPUTED (its `review.since`), set by the workflow
 * with the status: the review queue sorts by it (`ORDER BY ReviewSince`) and the backlog's age is
 * measured from it. Absent on orders that went to review before it existed.
 */
export const ReviewSinceAttribute = defineSearchAttributeKey('ReviewSince', SearchAttributeType.DATETIME);
/**
 * When the order reached its final status (the view's `completedAt`), set by the workflow with that
 * status and removed when a dispute reopens it: the list's completion range filters on it.
 * Absent on open orders and on orders completed before it existed.
 */
export const CompletedAtAttribute = defineSearchAttributeKey('CompletedAt', SearchAttributeType.DATETIME);

/**
 * An order HELD (docs/operators.md "Orders on hold"): why (`balance` or `operator`), the operator
 * reported down, and what it needs from the balance (DZD, `heldNeed`), set by the workflow with the
 * HELD status, in the same upsert. The account workflow's reading finds the held orders
 * by `OrderStatus = "HELD"` and reads these from the listing, without a query per order. Left as
 * they were when the order leaves HELD: filter on OrderStatus with them.
 */
export const HoldReasonAttribute = defineSearchAttributeKey('HoldReason', SearchAttributeType.KEYWORD);
export const HoldOperatorAttribute = defineSearchAttributeKey('HoldOperator', SearchAttributeType.KEYWORD);
export const HoldRequiredAttribute = defineSearchAttributeKey('HoldRequired', SearchAttributeType.INT);

/**
 * What the provider debited for a settled order (the view's `result.debit.amount`, DZD), set by the
 * workflow in the same upsert as the final status: statements sum it from visibility's listing, so
 * a normal order records it without an event of its own. Absent where the answer gave no debit.
 */
export const DebitAmountAttribute = defineSearchAttributeKey('DebitAmount', SearchAttributeType.DOUBLE);

/**
 * The provider's order id, once the order knows it (the view's `providerReference`), set by the
 * workflow in the upsert of the status that comes with it (SUBMITTED, usually): a lost gift-card
 * placement's search of the provider's records (src/orders/gift-card-records.activities.ts) sees which listed
 * orders are already another order's with one visibility call, not a query per order.
 */
export const ProviderOrderIdAttribute = defineSearchAttributeKey(
  'ProviderOrderId',
  SearchAttributeType.KEYWORD,
);

/**
 * Every search attribute the service needs, by name and Temporal type: the one list from which
 * each registration derives — the dev server's `--search-attribute` flags, `npm run temporal:setup`
 * (run by the worker at start and by docker-compose's setup job) and the cluster test tier.
 */
export const searchAttributeDefinitions = {
  OrderType: 'Keyword',
  OrderStatus: 'Keyword',
  OrderClient: 'Keyword',
  AcceptedAt: 'Datetime',
  ReviewSince: 'Datetime',
  CompletedAt: 'Datetime',
  HoldReason: 'Keyword',
  HoldOperator: 'Keyword',
  HoldRequired: 'Int',
  DebitAmount: 'Double',
  ProviderOrderId: 'Keyword',
} as const;

/** Polling and deadline timings, in milliseconds; fixed in the workflow input so replay is deterministic. */
export interface OrderTimings {
  /** First status check: when PENDING should be over (spec: about 5 s). */
  firstCheckMs: number;
  /** Once HANDLING is seen, the next check: when HANDLING should be over (spec: about 15 s). */
  handlingCheckMs: number;
  /** Cap of the back-off between checks. */
  maxIntervalMs: number;
  /**
   * The provider's pace (its docs: "poll every 5 s"): while the order is open, a check this often,
   * for `pollPaceMs` from when polling began; then the schedule above until the deadline. 0 = no
   * pace, the schedule above from the start.
   */
  pollIntervalMs: number;
  /** How long the pace lasts: the provider's documented give-up (5 min; gift cards 10 min). */
  pollPaceMs: number;
  /**
   * Heartbeat timeout of a polling attempt that checks at the pace: how soon a worker that died
   * mid-attempt is found out (the attempt then runs again on another worker, from its last
   * heartbeat). The attempt heartbeats only as often as this needs (activities pollUntilSettled).
   */
  pollHeartbeatTimeoutMs: number;
  /** After this long without a final status the order goes to NEEDS_REVIEW as stuck. */
  deadlineMs: number;
  /**
   * While in review, re-check the provider this often and resolve if a final status appears; also
   * the longest interval between checks while an operator's decision is watched.
   */
  reviewRecheckMs: number;
  /**
   * After an operator's decision the provider did not confirm, keep checking it this long (0 = not
   * at all), so a later contradicting answer reopens the order as DISPUTED.
   */
  reviewWatchMs: number;
  /** The first check of that watch; then the interval doubles up to `reviewRecheckMs`. */
  reviewWatchFirstCheckMs: number;
  /**
   * Start-to-close timeout of one provider activity attempt. Every provider call made in it ends
   * before it does (src/provider/attempt-deadline.ts), whatever the worker's HTTP timeouts say.
   */
  activityTimeoutMs: number;
  /**
   * After a send whose outcome is unknown, how long the provider may take to show it in check-ref
   * (its worst processing time plus read lag): no new send until check-ref has not found the ref
   * this long after the send ended, twice, this far apart.
   */
  settleMs: number;
  /**
   * An order held because the account cannot take it (docs/operators.md "Orders on hold") waits
   * at most this long from when it was first held, then ends FAILED with nothing sent (NOT_SENT).
   */
  maxHoldMs: number;
  /**
   * QUEUED (an internet card the provider delivers within 12–48 h): re-checked this often, and sent
   * to review as stuck only this long after it was first QUEUED (instead of `deadlineMs`).
   */
  queuedRecheckMs: number;
  queuedDeadlineMs: number;
}

/** The spec's sandbox timings and the deadlines of the design; the worker's config may override them. */
export const defaultOrderTimings: Readonly<Record<OrderType, OrderTimings>> = {
  mobile_topup: defaults(30 * 60_000, 5 * 60_000),
  internet_topup: defaults(30 * 60_000, 5 * 60_000),
  gift_card: defaults(60 * 60_000, 10 * 60_000),
};

function defaults(deadlineMs: number, pollPaceMs: number): OrderTimings {
  return {
    firstCheckMs: 5_000,
    handlingCheckMs: 15_000,
    maxIntervalMs: 60_000,
    pollIntervalMs: 5_000,
    pollPaceMs,
    pollHeartbeatTimeoutMs: 60_000,
    deadlineMs,
    reviewRecheckMs: 30 * 60_000,
    reviewWatchMs: 24 * 60 * 60_000,
    reviewWatchFirstCheckMs: 5 * 60_000,
    activityTimeoutMs: 30_000,
    settleMs: 60_000,
    maxHoldMs: 6 * 60 * 60_000,
    queuedRecheckMs: 6 * 60 * 60_000,
    queuedDeadlineMs: 72 * 60 * 60_000,
  };
}

export interface OrderInput {
  request: OrderRequest;
  /** ISO time the intake API accepted the order. */
  acceptedAt: string;
  /**
   * The client that submitted the order and owns it. Absent in orders started before clients
   * existed: those belong to the configured default client.
   */
  clientId?: string;
  /**
   * The ref sent to the provider for a top-up, derived from (client, ref) by the starter. Absent in
   * orders started before clients existed: those sent the client's ref itself.
   */
  providerRef?: string;
  timings?: Partial<OrderTimings>;
  /**
   * The client had webhook endpoints when it submitted the order: the workflow announces each
   * status change (docs/integrators.md "Webhooks"). Unset, the workflow's history is exactly as without webhooks.
   */
  webhooks?: boolean;
  /**
   * Set only by the workflow itself when it continues as new to keep its history short: the state
   * it carries over. Starters leave it unset.
   */
  continued?: OrderContinuation;
  /** Continue as new once the history has this many events (default 2,000); lowered only by tests. */
  historyEventLimit?: number;
  /**
   * Set only by the order sweep (src/orders/sweep.workflow.ts) when it starts a new run after one that
   * closed without a final status (terminated, timed out, failed): the new run asks the provider
   * before it sends anything. `continued` then carries the closed run's last view.
   */
  resumed?: { closedAs: string; at: string };
  /**
   * Set only by the nightly reconciliation (src/reconciliation/reopening.ts) when it starts a new run
   * after a closed one whose final status the provider now contradicts: the new run, carrying the
   * closed run's last view in `continued`, reopens the order as DISPUTED with this evidence.
   */
  reconciled?: ReconciledDispute;
}

/** What the reconciliation found against a closed order's final status. */
export interface ReconciledDispute {
  /** The reconciled day (YYYY-MM-DD). */
  date: string;
  providerStatus: 'FULFILLED' | 'REFUNDED' | 'PARTIALLY_FILLED';
  /** The provider's answer and the ledger rows, in words (no personal data). */
  evidence: string;
}

/** What a workflow run hands to the next when it continues as new. */
export interface OrderContinuation {
  view: OrderView;
  /** Epoch ms after which a still-open order goes to NEEDS_REVIEW as stuck. */
  deadlineAt: number;
  /** Polling: the wait before the next check. */
  nextCheckMs: number;
  /** The sequence number of the last webhook event announced (so the next run goes on from it). */
  eventSequence?: number;
  /** Endpoints whose events of this order go to its delivery workflow (webhook-contract.ts `DurableEndpoints`). */
  webhookDurable?: string[] | 'all';
  /** The watch after an operator's decision, when one is running. */
  watch?: DecisionWatch;
  /**
   * In review because a lost placement's records could not be searched or did not show it: the
   * window it was to be looked for in (epoch ms), so the review's rechecks search them again (src/orders/lifecycle/records.workflow.ts).
   */
  recordsWindow?: { from: number; to: number; settleMs: number };
}

/** What the workflow keeps of a watch after an operator's decision (the view shows `OrderView.watch`). */
export interface DecisionWatch {
  decision: 'FULFILLED' | 'REFUNDED';
  /** What the provider said when the decision was applied: the same answer later is no news. */
  baseline?: ProviderStatus;
  /** Epoch ms when the watch ends. */
  untilMs: number;
  /** The wait before the next check. */
  nextCheckMs: number;
}

/**
 * The memo key (`settlement`) where a PARTIALLY_FULFILLED order records what a statement sums
 * beside the request's figures and the DebitAmount attribute: the partial split, with the debit.
 * Never a card code or a number. Other orders record their debit in DebitAmount only.
 */
export const SETTLEMENT_MEMO = 'settlement';
/**
 * The memo key where the API records the ref a top-up is sent under (src/orders/provider-ref.ts):
 * the reconciliation traces a ledger row's provider ref back to the order by it.
 */
export const PROVIDER_REF_MEMO = 'providerRef';
export interface OrderSettlement {
  debit?: OrderDebit;
  partial?: OrderResult['partial'];
}

/**
 * What a held order needs from the balance, DZD: the provider's `required`, else the order's own
 * amount (a gift card refused without `required` has none: it goes when the balance is positive).
 */
export function heldNeed(
  hold: Pick<OrderHold, 'required'> | undefined,
  request: OrderRequest,
): number | undefined {
  if (hold?.required !== undefined) return hold.required;
  if (request.type === 'mobile_topup') return request.amount;
  if (request.type === 'internet_topup') return request.value;
  return undefined;
}

export const statusQuery = defineQuery<OrderView>('status');
/** The run's input, for the order sweep to resume a closed run from. */
export const orderInputQuery = defineQuery<OrderInput>('orderInput');
/** For Temporal UI and the CLI: no answer, so a refused decision is recorded in the timeline and log. */
export const resolveReviewSignal = defineSignal<[ReviewDecision]>('resolveReview');

/** Why a decision was not applied. */
export interface DecisionRefusal {
  /**
   * `contradicted`: the provider says otherwise. `unconfirmed`: the provider could not confirm it
   * (still processing, unreachable). `invalid`: it cannot apply to this order (a wrong orderId).
   * `not-in-review`: the order was settled first (by another decision or the provider).
   */
  kind: 'contradicted' | 'unconfirmed' | 'invalid' | 'not-in-review';
  reason: string;
  /** What the provider said, when it was asked. */
  provider?: ProviderAnswer;
  /** Would `force: true` apply it? */
  forceable: boolean;
}

/** The `decideReview` update's answer. */
export interface DecisionOutcome {
  /**
   * `applied`: FULFILLED / REFUNDED took effect. `rechecked`: RECHECK asked the provider (the view
   * shows what came of it). `resumed`: a gift card took the provider's orderId and polls it again.
   * `refused`: nothing changed, see `refusal`.
   */
  outcome: 'applied' | 'rechecked' | 'resumed' | 'refused';
  refusal?: DecisionRefusal;
  view: OrderView;
}

/**
 * The API's way to decide: validated before it is accepted (a malformed payload or an order not in
 * review is rejected and leaves no trace in the history), then checked against the provider and
 * answered with the outcome.
 */
export const decideReviewUpdate = defineUpdate<DecisionOutcome, [ReviewDecision]>('decideReview');

/** `ApplicationFailure.type` of the update validator's rejections. */
export const DecisionRejection = {
  /** The payload is not a decision; details: `{ errors: [{field, message}] }`. */
  invalid: 'InvalidReviewDecision',
  /** The order is not in NEEDS_REVIEW or DISPUTED; details: `{ status }`. */
  notInReview: 'OrderNotInReview',
} as const;

export const finalStatuses: readonly OrderStatus[] = [
  'FULFILLED',
  'PARTIALLY_FULFILLED',
  'REFUNDED',
  'FAILED',
  'CANCELLED',
];
/** The statuses in which an order takes an operator's decision. */
export const decisionStatuses: readonly OrderStatus[] = ['NEEDS_REVIEW', 'DISPUTED'];
