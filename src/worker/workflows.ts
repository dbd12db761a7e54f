/**
 * The workflow bundle's entry: the workflows a worker registers. The order workflows are one per
 * order type (names: contract/order.ts `workflowTypeByOrderType`), each the one lifecycle
 * (src/orders/lifecycle/order.workflow.ts) with its type's adapter (src/orders/lifecycle/adapters/).
 *
 * Each type declares its Worker Versioning behaviour here (src/temporal/versioning.workflow.ts; a
 * unit test checks that every export has one): all are PINNED. Those that wait long move to a new
 * version by continuing as new at a wake-up (orders: src/orders/lifecycle/continue-as-new.workflow.ts;
 * the provider account and webhook
 * delivery at their own loop); the others end within minutes, and Schedules start each new run on
 * the current version.
 */
import { bulkReviewWorkflow as bulkReview } from '../reviews/workflows';
import { giftCardAdapter } from '../orders/workflows';
import { internetTopupAdapter } from '../orders/workflows';
import { mobileTopupAdapter } from '../orders/workflows';
import { defineOrderWorkflow } from '../orders/workflows';
import { orderSweepWorkflow as orderSweep } from '../orders/workflows';
import { providerAccountWorkflow as providerAccount } from '../provider-account/workflows';
import {
  reconcileDayWorkflow as reconcileDay,
  scheduledReconciliationWorkflow as scheduledReconciliation,
} from '../reconciliation/workflows';
import {
  scheduledStatementDaysWorkflow as scheduledStatementDays,
  statementDayWorkflow as statementDay,
} from '../statements/workflows';
import { pinnedWorkflow } from '../temporal/workflows';
import { webhookDeliveryWorkflow as webhookDelivery } from '../webhooks/workflows';

/** Orders: pinned to the end; a long wait moves to the current version by continue-as-new. */
export const mobileTopupWorkflow = pinnedWorkflow(defineOrderWorkflow('mobile_topup', mobileTopupAdapter));
export const internetTopupWorkflow = pinnedWorkflow(
  defineOrderWorkflow('internet_topup', internetTopupAdapter),
);
export const giftCardWorkflow = pinnedWorkflow(defineOrderWorkflow('gift_card', giftCardAdapter));
/** Started by its Schedule, one activity: a new version takes the next run. */
export const orderSweepWorkflow = pinnedWorkflow(orderSweep);
/** A bounded fan-out of decisions (minutes): ends on the version it started on. */
export const bulkReviewWorkflow = pinnedWorkflow(bulkReview);
/** A day's reconciliation (minutes to hours, chunked runs stay on their version); the Schedule's starter. */
export const reconcileDayWorkflow = pinnedWorkflow(reconcileDay);
export const scheduledReconciliationWorkflow = pinnedWorkflow(scheduledReconciliation);
/** Long-lived while orders are held: continues as new onto a new version at its next reading. */
export const providerAccountWorkflow = pinnedWorkflow(providerAccount);
/** Statements: a memo holder that ends at once, and the nightly summary the Schedule starts. */
export const statementDayWorkflow = pinnedWorkflow(statementDay);
export const scheduledStatementDaysWorkflow = pinnedWorkflow(scheduledStatementDays);
/** Lives as long as its order's events: continues as new onto a new version when idle. */
export const webhookDeliveryWorkflow = pinnedWorkflow(webhookDelivery);
