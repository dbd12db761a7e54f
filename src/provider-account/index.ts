/**
 * src/provider-account/ (the provider account: balance, holds): its Node-side surface. Other folders import from here,
 * never from its files (.dependency-cruiser.cjs).
 */
export {
  type AccountGate,
  type AccountOptions,
  createAccountActivities,
  createAccountGate,
} from './account.activities';
export { type AccountProviderPort, accountReport, type AccountReport } from './account.service';
