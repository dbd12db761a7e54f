/**
 * src/worker/ (the worker process): its surface for the tests and scripts that run a worker
 * (`npm run worker` runs main.ts). The workflow bundle's entry is workflows.ts, the activities'
 * activities.ts. Nothing of the product imports it.
 */
export { createActivities, type Activities, type ActivityOptions } from './activities';
export {
  createOrderWorker,
  createWebhookWorker,
  type OrderWorkerOptions,
  type WorkerTuning,
  type WorkflowCode,
} from './worker';
