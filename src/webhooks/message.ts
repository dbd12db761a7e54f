/**
 * What an endpoint receives: the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`, signed by the `standardwebhooks` library) and a JSON body
 * `{id, type, timestamp, sequence, data}` whose `data` is the order exactly as its owner reads it
 * from GET /v1/orders/{ref}, card codes masked unless the endpoint opted in.
 */
import { createHash } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { WebhookEndpoint } from '../clients';
import { maskCardCodes } from '../audit';
import type { OrderView as WorkflowOrderView } from '../../contract/order';
import type { OrderIdentity } from '../../contract/order-identity';

/** The order as its API reads it: the workflow's view and its identity. */
type OrderView = WorkflowOrderView & OrderIdentity;
import type { OrderEvent, WebhookEvent } from '../../contract/webhooks';

export interface WebhookMessage {
  /** Equals the `webhook-id` header: stable across retries and redeliveries. */
  id: string;
  type: WebhookEvent['type'];
  /** When the order changed (not when this attempt was made: that is `webhook-timestamp`). */
  timestamp: string;
  /** 1, 2, 3… per order: the order of the changes, whatever order deliveries arrive in. */
  sequence: number;
  data: OrderView;
  /** order.review_decision only. */
  decision?: OrderEvent['decision'];
}

/** Derived from the order and the event's place in it, so every attempt and redelivery carries the same id. */
export function webhookEventId(orderWorkflowId: string, sequence: number): string {
  const digest = createHash('sha256').update(`${orderWorkflowId}\n${sequence}`).digest('base64url');
  return `evt_${digest.slice(0, 26)}`;
}

export function webhookMessage(
  event: WebhookEvent,
  endpoint: Pick<WebhookEndpoint, 'cardCodes'>,
): WebhookMessage {
  const view: OrderView = {
    ...event.view,
    client: event.client,
    workflowId: event.orderWorkflowId,
    ...(event.providerRef ? { providerRef: event.providerRef } : {}),
    // Events come from the running workflow, as it changes the order (a final one just before it ends).
    workflowStatus: 'RUNNING',
  };
  return {
    id: event.id,
    type: event.type,
    timestamp: event.timestamp,
    sequence: event.sequence,
    data: endpoint.cardCodes ? view : maskCardCodes(view),
    ...(event.decision ? { decision: event.decision } : {}),
  };
}

/**
 * The three Standard Webhooks headers for `body`, signed at `now` with every secret (the current
 * one, and the previous during a rotation: the spec's space-separated signatures).
 */
export function signedHeaders(
  id: string,
  body: string,
  secrets: readonly string[],
  now: Date,
): Record<string, string> {
  const signatures = secrets.map((secret) => new Webhook(secret).sign(id, now, body));
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}
