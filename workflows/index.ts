/**
 * The order workflows, one per order type (names: contract/order.ts `workflowTypeByOrderType`). Each is
 * the one lifecycle (order/workflow.ts) with its type's adapter (order/adapters/).
 */
import { setWorkflowOptions } from '@temporalio/workflow';
import { bulkReviewWorkflow } from './bulk-review';
import { giftCardAdapter } from './order/adapters/gift-card';
import { internetTopupAdapter } from './order/adapters/internet-topup';
import { mobileTopupAdapter } from './order/adapters/mobile-topup';
import { defineOrderWorkflow } from './order/workflow';
import { orderSweepWorkflow } from './order-sweep';
import { providerAccountWorkflow } from './provider-account';
import { reconcileDayWorkflow, scheduledReconciliationWorkflow } from './reconciliation';
import { scheduledStatementDaysWorkflow, statementDayWorkflow } from './statement-days';
import { webhookDeliveryWorkflow } from './webhook-delivery';

export const mobileTopupWorkflow = defineOrderWorkflow('mobile_topup', mobileTopupAdapter);
export const internetTopupWorkflow = defineOrderWorkflow('internet_topup', internetTopupAdapter);
export const giftCardWorkflow = defineOrderWorkflow('gift_card', giftCardAdapter);

export {
  bulkReviewWorkflow,
  orderSweepWorkflow,
  providerAccountWorkflow,
  reconcileDayWorkflow,
  scheduledReconciliationWorkflow,
  scheduledStatementDaysWorkflow,
  statementDayWorkflow,
  webhookDeliveryWorkflow,
};

/**
 * Every workflow is PINNED (docs/contributors.md "Changing a workflow: a new worker version"): a
 * run ends on the build that started it, so no build ever replays another's history and a change
 * needs no patch. AUTO_UPGRADE would move a run to a new build mid-way, which is safe only with
 * patches. Orders, deliveries, bulk reviews, reconciliations and statement days end within their
 * own deadlines; the Schedules' runs (sweep, nightly reconciliation and statements) start on the
 * current build each time; the provider account, which runs for as long as orders are held,
 * continues as new onto the current build when a deploy changes it (provider-account.ts).
 */
const workflows: ((...args: never[]) => Promise<unknown>)[] = [
  mobileTopupWorkflow,
  internetTopupWorkflow,
  giftCardWorkflow,
  bulkReviewWorkflow,
  orderSweepWorkflow,
  providerAccountWorkflow,
  reconcileDayWorkflow,
  scheduledReconciliationWorkflow,
  scheduledStatementDaysWorkflow,
  statementDayWorkflow,
  webhookDeliveryWorkflow,
];
for (const workflow of workflows) setWorkflowOptions({ versioningBehavior: 'PINNED' }, workflow);
