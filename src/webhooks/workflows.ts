/**
 * src/webhooks/: its workflow-safe surface, for the workflow code of other folders (the workflow
 * bundle's entry, src/worker/workflows.ts, among them): workflow code, and activities' types only.
 */
export { webhookDeliveryWorkflow } from './delivery.workflow';
export type { AnnounceActivity } from './webhook.activities';
