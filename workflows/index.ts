/**
 * The order workflows, one per order type (names: contract/order.ts `workflowTypeByOrderType`). Each is
 * the one lifecycle (order/workflow.ts) with its type's adapter (order/adapters/).
 *
 * Every workflow here is PINNED, by the worker's default (src/worker/worker.ts; docs/contributors.md
 * "Changing a workflow safely"): a run ends on the build that started it, so no build replays
 * another's history and a change needs no patch. Not declared per workflow type: a declared
 * behaviour fails every task on an unversioned worker (Temporal's time-skipping test server has no
 * deployments). The provider account, which runs for as long as orders are held, continues as new
 * onto the current build when a deploy changes it (provider-account.ts).
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
