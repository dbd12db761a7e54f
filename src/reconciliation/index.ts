/**
 * src/reconciliation/ (the nightly reconciliation): its Node-side surface. Other folders import from here,
 * never from its files (.dependency-cruiser.cjs).
 */
export { createReconciliationActivities, type ReconciliationProvider } from './reconciliation.activities';
export { reconciliationRouter } from './reconciliation.routes';
export { ensureReconciliationSchedule } from './reconciliation.schedule';
export {
  ReconciliationAnswer,
  ReconciliationParams,
  ReconciliationQuery,
  ReconciliationService,
} from './reconciliation.service';
