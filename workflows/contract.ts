/**
 * The order workflows' contract, shared by the workflows, the worker, the intake API and tests:
 * workflow names and IDs, the `status` query, the `resolveReview` signal, search attributes and
 * the types that cross the boundary. Safe to import from workflow code (no I/O).
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { OrderRequest, OrderStatus, OrderType, ReviewDecision } from '../src/orders/schemas';
import type { ProviderStatus } from '../src/provider/wire';

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
/** `temporal server start-dev --search-attribute` arguments. */
export const searchAttributeDefinitions = {
  OrderType: 'Keyword',
  OrderStatus: 'Keyword',
  OrderClient: 'Keyword',
} as const;

/** Polling and deadline timings, in milliseconds; fixed in the workflow input so replay is deterministic. */
export interface OrderTimings {
  /** First status check: when PENDING should be over (spec: about 5 s). */
  firstCheckMs: number;
  /** Once HANDLING is seen, the next check: when HANDLING should be over (spec: about 15 s). */
  handlingCheckMs: number;
  /** Cap of the back-off between checks. */
  maxIntervalMs: number;
  /** After this long without a final status the order goes to NEEDS_REVIEW as stuck. */
  deadlineMs: number;
  /** While in review, re-check the provider this often and resolve if a final status appears. */
  reviewRecheckMs: number;
  /**
   * Start-to-close timeout of one provider activity attempt. It must outlast the provider client's
   * own timeouts for two calls (a retried send looks the ref up, then sends), so an attempt Temporal
   * gave up on can no longer reach the provider when the next one starts.
   */
  activityTimeoutMs: number;
}

/** The spec's sandbox timings and the deadlines of the design; the worker's config may override them. */
export const defaultOrderTimings: Readonly<Record<OrderType, OrderTimings>> = {
  mobile_topup: defaults(30 * 60_000),
  internet_topup: defaults(30 * 60_000),
  gift_card: defaults(60 * 60_000),
};

function defaults(deadlineMs: number): OrderTimings {
  return {
    firstCheckMs: 5_000,
    handlingCheckMs: 15_000,
    maxIntervalMs: 60_000,
    deadlineMs,
    reviewRecheckMs: 30 * 60_000,
    activityTimeoutMs: 60_000,
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
   * status change (README "Webhooks"). Unset, the workflow's history is exactly as without webhooks.
   */
  webhooks?: boolean;
  /**
   * Set only by the workflow itself when it continues as new to keep its history short: the state
   * it carries over. Starters leave it unset.
   */
  continued?: OrderContinuation;
  /** Continue as new once the history has this many events (default 2,000); lowered only by tests. */
  historyEventLimit?: number;
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
}

export interface ReviewResolution extends ReviewDecision {
  /** ISO time the workflow received the decision. */
  at: string;
}

export interface TimelineEntry {
  at: string;
  status: OrderStatus;
  /** Short, human-readable; never contains a card code or phone number. */
  event: string;
}

export interface OrderResult {
  /** Mobile. */
  msisdn?: string;
  amount?: number;
  /** Internet. */
  cardCode?: string;
  transactionNumber?: string;
  /** Gift cards. */
  cards?: { code: string; serial: string }[];
  /** REFUNDED: the provider's message and suggested plans, when given. */
  message?: string;
  suggestedPlans?: { planCode: string; amount: number }[];
}

export interface OrderView {
  ref: string;
  type: OrderType;
  status: OrderStatus;
  providerStatus?: ProviderStatus;
  request: OrderRequest;
  /** Provider identifiers: topupId for top-ups, orderId for gift cards. */
  providerReference?: string;
  result?: OrderResult;
  /** FAILED: why the provider refused. */
  failure?: { code: string; message: string };
  review?: {
    reason: string;
    /** What we knew when we asked for review (provider answer, error class). */
    evidence?: string;
    since: string;
    resolution?: ReviewResolution;
  };
  acceptedAt: string;
  updatedAt: string;
  completedAt?: string;
  timeline: TimelineEntry[];
}

export const statusQuery = defineQuery<OrderView>('status');
export const resolveReviewSignal = defineSignal<[ReviewDecision]>('resolveReview');

export const finalStatuses: readonly OrderStatus[] = ['FULFILLED', 'REFUNDED', 'FAILED'];
