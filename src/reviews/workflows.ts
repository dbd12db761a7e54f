/**
 * src/reviews/: its workflow-safe surface, for the workflow code of other folders (the workflow
 * bundle's entry, src/worker/workflows.ts, among them): workflow code, and activities' types only.
 */
export { bulkReviewWorkflow } from './bulk-review.workflow';
