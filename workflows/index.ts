/**
 * The order workflows, one per order type (names: contract/order.ts `workflowTypeByOrderType`). Each is
 * the one lifecycle (order/workflow.ts) with its type's adapter (order/adapters/).
 */
import { giftCardAdapter } from './order/adapters/gift-card';
import { internetTopupAdapter } from './order/adapters/internet-topup';
import { mobileTopupAdapter } from './order/adapters/mobile-topup';
import { defineOrderWorkflow } from './order/workflow';

export { orderSweepWorkflow } from './order-sweep';
export { bulkReviewWorkflow } from './bulk-review';
export { reconcileDayWorkflow, scheduledReconciliationWorkflow } from './reconciliation';
export { providerAccountWorkflow } from './provider-account';
export { scheduledStatementDaysWorkflow, statementDayWorkflow } from './statement-days';
export { webhookDeliveryWorkflow } from './webhook-delivery';

export const mobileTopupWorkflow = defineOrderWorkflow('mobile_topup', mobileTopupAdapter);
export const internetTopupWorkflow = defineOrderWorkflow('internet_topup', internetTopupAdapter);
export const giftCardWorkflow = defineOrderWorkflow('gift_card', giftCardAdapter);
