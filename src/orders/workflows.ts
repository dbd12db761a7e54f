/**
 * src/orders/: its workflow-safe surface, for the workflow code of other folders (the workflow
 * bundle's entry, src/worker/workflows.ts, among them): workflow code, and activities' types only.
 */
export { giftCardAdapter } from './lifecycle/adapters/gift-card.workflow';
export { internetTopupAdapter } from './lifecycle/adapters/internet-topup.workflow';
export { mobileTopupAdapter } from './lifecycle/adapters/mobile-topup.workflow';
export { defineOrderWorkflow } from './lifecycle/order.workflow';
export { orderSweepWorkflow } from './sweep.workflow';
