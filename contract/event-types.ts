/**
 * The webhook event types: one per order status an order can move to (`order.<status>`, so a
 * status added later gets its event by its name), and `order.review_decision` when the workflow
 * acts on an operator's decision. Zod-free and I/O-free: the order workflow imports it.
 */
import type { OrderStatus } from './schemas';

/** ACCEPTED is the API's own answer to the submission (201), not a change the workflow makes. */
export type StatusEventType = `order.${Lowercase<Exclude<OrderStatus, 'ACCEPTED'>>}`;
export const REVIEW_DECISION_EVENT = 'order.review_decision';
export type WebhookEventType = StatusEventType | typeof REVIEW_DECISION_EVENT;

export function statusEventType(status: Exclude<OrderStatus, 'ACCEPTED'>): StatusEventType {
  return `order.${status.toLowerCase()}` as StatusEventType;
}

/** Every event type, for the clients file's `events` and the OpenAPI document. */
export function webhookEventTypes(statuses: readonly OrderStatus[]): WebhookEventType[] {
  return [
    ...statuses.flatMap((status) => (status === 'ACCEPTED' ? [] : [statusEventType(status)])),
    REVIEW_DECISION_EVENT,
  ];
}
