/**
 * src/clients/ (the clients file, keys, scopes and fairness weights): its Node-side surface. Other folders import from here,
 * never from its files (.dependency-cruiser.cjs).
 */
export { startFairnessWeights } from './fairness-weights';
export {
  allWebhookEventTypes,
  ClientId,
  type ClientLimits,
  type ClientsFile,
  type Scope,
  WEBHOOK_ENDPOINT_ID_PATTERN,
  type WebhookEndpoint,
} from './model';
export {
  type Caller,
  type Client,
  ClientRegistry,
  clientRegistryFromConfig,
  readClientsFile,
  reloadClientsOnSighup,
} from './registry';
