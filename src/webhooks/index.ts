/**
 * src/webhooks/ (order events as webhooks: messages, delivery, records, routes): its Node-side surface. Other folders import from here,
 * never from its files (.dependency-cruiser.cjs).
 */
export { AddressPolicy } from './address-guard';
export { signingKeyFrom } from './secrets';
export { WebhookSender } from './sender';
export {
  type AnnounceDeps,
  createAnnounceActivity,
  createDeliveryActivities,
  type DeliveryActivities,
  DIRECT_DELIVERY_DEFAULTS,
} from './webhook.activities';
export { webhooksRouter } from './webhook.routes';
export { WebhookService } from './webhook.service';
