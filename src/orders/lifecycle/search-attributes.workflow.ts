/**
 * The order's search attributes (contract/order.ts), kept in step with its view: what the list,
 * the review queue and Temporal UI filter and sort on. Each change joins one upsert; nothing is
 * upserted when the starter already set the value. Deterministic workflow code.
 */
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SearchAttributeUpdatePair, TypedSearchAttributes } from '@temporalio/common';
import {
  AcceptedAtAttribute,
  CompletedAtAttribute,
  DebitAmountAttribute,
  heldNeed,
  HoldOperatorAttribute,
  HoldReasonAttribute,
  HoldRequiredAttribute,
  OrderStatusAttribute,
  OrderTypeAttribute,
  ProviderOrderIdAttribute,
  ReviewSinceAttribute,
  type OrderType,
  type OrderView,
} from '../../../contract/order';
import type { ReviewNotice } from '../../../contract/ui-metadata';

/** `inDecision`: the order takes decisions now (NEEDS_REVIEW, DISPUTED). */
export function publishSearchAttributes(view: OrderView, orderType: OrderType, inDecision: boolean): void {
  const current = workflowInfo().typedSearchAttributes;
  const updates: SearchAttributeUpdatePair[] = [];
  if (current.get(OrderTypeAttribute) !== orderType) {
    updates.push({ key: OrderTypeAttribute, value: orderType });
  }
  if (current.get(OrderStatusAttribute) !== view.status) {
    updates.push({ key: OrderStatusAttribute, value: view.status });
  }
  // A starter that did not set AcceptedAt would leave the order out of the list.
  if (current.get(AcceptedAtAttribute) === undefined) {
    updates.push({ key: AcceptedAtAttribute, value: new Date(view.acceptedAt) });
  }
  const reviewSince = reviewSinceUpdate(view, inDecision, current.get(ReviewSinceAttribute));
  if (reviewSince) updates.push(reviewSince);
  const completedAt = completedAtUpdate(view, current.get(CompletedAtAttribute));
  if (completedAt) updates.push(completedAt);
  const debited = view.result?.debit?.amount;
  if (current.get(DebitAmountAttribute) !== debited) {
    updates.push({ key: DebitAmountAttribute, value: debited ?? null });
  }
  updates.push(...holdUpdates(view));
  // Only with another change (the status that comes with it, SUBMITTED): never an upsert, a
  // command, of its own, so histories recorded before it replay as they were.
  const providerOrderId = view.providerReference;
  if (
    updates.length > 0 &&
    providerOrderId !== undefined &&
    current.get(ProviderOrderIdAttribute) !== providerOrderId
  ) {
    updates.push({ key: ProviderOrderIdAttribute, value: providerOrderId });
  }
  if (updates.length > 0) upsertSearchAttributes(updates);
}

/**
 * A HELD order publishes why and what it needs with its status, in the same upsert, so the account
 * workflow finds it by visibility (src/provider-account/provider-account.workflow.ts).
 */
function holdUpdates(view: OrderView): SearchAttributeUpdatePair[] {
  const hold = view.status === 'HELD' ? view.hold : undefined;
  if (!hold) return [];
  const current = workflowInfo().typedSearchAttributes;
  const exact = hold.reason === 'balance' ? heldNeed(hold, view.request) : undefined;
  // An Int attribute: the provider's figure may have a fraction; rounded up, the line stays safe.
  const need = exact === undefined ? undefined : Math.ceil(exact);
  const updates: SearchAttributeUpdatePair[] = [];
  if (current.get(HoldReasonAttribute) !== hold.reason) {
    updates.push({ key: HoldReasonAttribute, value: hold.reason });
  }
  if (current.get(HoldOperatorAttribute) !== hold.operator) {
    updates.push({ key: HoldOperatorAttribute, value: hold.operator ?? null });
  }
  if (current.get(HoldRequiredAttribute) !== need) {
    updates.push({ key: HoldRequiredAttribute, value: need ?? null });
  }
  return updates;
}

/**
 * CompletedAt follows the view's completedAt: set with the final status (so it joins the status's
 * own upsert, no extra command), removed when a dispute reopens the order.
 */
function completedAtUpdate(
  view: OrderView,
  current: Date | undefined,
): SearchAttributeUpdatePair | undefined {
  const completedAt = view.completedAt;
  if (completedAt === undefined) {
    return current === undefined ? undefined : { key: CompletedAtAttribute, value: null };
  }
  if (current?.getTime() === Date.parse(completedAt)) return undefined;
  return { key: CompletedAtAttribute, value: new Date(completedAt) };
}

/**
 * Entering review (or a dispute): ReviewSince, so the queue sorts and alerts by how long an order
 * has waited. Kept when the order leaves review (queries filter on OrderStatus).
 */
function reviewSinceUpdate(
  view: OrderView,
  inDecision: boolean,
  current: Date | undefined,
): SearchAttributeUpdatePair | undefined {
  const since = inDecision ? view.review?.since : undefined;
  if (since === undefined || current?.getTime() === Date.parse(since)) return undefined;
  return { key: ReviewSinceAttribute, value: new Date(since) };
}

/** A review's own run (continue-as-new): this run's search attributes with the review's status and since when. */
export function reviewRunAttributes(view: OrderView, notice: ReviewNotice): TypedSearchAttributes {
  const completedAt = completedAtUpdate(view, workflowInfo().typedSearchAttributes.get(CompletedAtAttribute));
  return workflowInfo().typedSearchAttributes.updateCopy([
    { key: OrderStatusAttribute, value: notice.status },
    { key: ReviewSinceAttribute, value: new Date(notice.inReviewSince) },
    ...(completedAt ? [completedAt] : []),
  ]);
}
