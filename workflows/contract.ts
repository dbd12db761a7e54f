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

/** One workflow per order, keyed by the client's ref, so a repeated submission cannot start a second. */
export function orderWorkflowId(ref: string): string {
  return `order-${ref}`;
}

export const workflowTypeByOrderType = {
  mobile_topup: 'mobileTopupWorkflow',
  internet_topup: 'internetTopupWorkflow',
  gift_card: 'giftCardWorkflow',
} as const satisfies Record<OrderType, string>;

/** Keyword search attributes, so operators can filter `OrderStatus="NEEDS_REVIEW"` in Temporal UI. */
export const OrderTypeAttribute = defineSearchAttributeKey('OrderType', SearchAttributeType.KEYWORD);
export const OrderStatusAttribute = defineSearchAttributeKey('OrderStatus', SearchAttributeType.KEYWORD);
/** `temporal server start-dev --search-attribute` arguments. */
export const searchAttributeDefinitions = { OrderType: 'Keyword', OrderStatus: 'Keyword' } as const;

/** Polling and deadline timings, in milliseconds; fixed in the workflow input so replay is deterministic. */
export interface OrderTimings {
  /** First status check: when PENDING should be over (spec: about 5 s). */
  firstCheckMs: number;
  /** Cap of the back-off between checks. */
  maxIntervalMs: number;
  /** After this long without a final status the order goes to NEEDS_REVIEW as stuck. */
  deadlineMs: number;
  /** While in review, re-check the provider this often and resolve if a final status appears. */
  reviewRecheckMs: number;
}

export interface OrderInput {
  request: OrderRequest;
  /** ISO time the intake API accepted the order. */
  acceptedAt: string;
  timings?: Partial<OrderTimings>;
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
