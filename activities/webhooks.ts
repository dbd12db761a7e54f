/**
 * The webhook activities (docs/integrators.md "Webhooks"):
 *
 * - `announceOrderEvent`, a *local* activity of the order workflow, run at each status change of an
 *   order whose client had endpoints: it picks the endpoints subscribed to the event from the
 *   clients file as the worker knows it now, and signals-with-start the order's delivery workflow
 *   (on the webhook task queue) with the event. One marker in the order's history, no task of its
 *   own; nothing at all when no endpoint wants the event.
 * - `deliverWebhook`, an activity of the delivery workflow: one signed POST to one endpoint. The
 *   endpoint's URL, opt-in and secret are read at each attempt, so a changed URL or a rotated
 *   secret applies to the next attempt, and a removed endpoint gets nothing more.
 */
import { Context, log } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { WebhookEndpoint } from '../src/clients/model';
import { metricCatalog } from '../contract/metrics';
import { noMetrics, type Metrics } from '../src/observability/metrics';
import { webhookEventId, webhookMessage, signedHeaders } from '../src/webhooks/message';
import { endpointSecrets } from '../src/webhooks/secrets';
import {
  webhookDeliveryWorkflowId,
  webhookDeliveryWorkflowType,
  webhookEventSignal,
  type DeliveryOutcome,
  type OrderEvent,
  type WebhookDeliveryInput,
  type WebhookDeliveryPolicy,
  type WebhookEvent,
} from '../contract/webhooks';

/** Where a client's endpoints are looked up: the clients file as this worker last read it. */
export interface WebhookEndpoints {
  webhooksOf(client: string): readonly WebhookEndpoint[];
}

export interface AnnounceDeps {
  /** A Temporal client with the worker's data converter: the event is a payload like any other. */
  temporal: Client;
  taskQueue: string;
  endpoints: WebhookEndpoints;
  policy: WebhookDeliveryPolicy;
}

function subscribed(endpoint: WebhookEndpoint, event: OrderEvent): boolean {
  return endpoint.events === undefined || endpoint.events.includes(event.type);
}

/** Without `deps` (a worker with no webhook configuration) events are dropped, and the order goes on. */
export function createAnnounceActivity(deps: AnnounceDeps | undefined) {
  let warned = false;
  return {
    async announceOrderEvent(event: OrderEvent): Promise<void> {
      if (!deps) {
        if (!warned) log.warn('webhook event dropped: this worker has no webhook configuration');
        warned = true;
        return;
      }
      const targets = deps.endpoints
        .webhooksOf(event.client)
        .filter((endpoint) => subscribed(endpoint, event))
        .map((endpoint) => endpoint.id);
      if (targets.length === 0) return;
      const orderWorkflowId = Context.current().info.workflowExecution?.workflowId;
      if (!orderWorkflowId) throw new Error('announceOrderEvent runs only inside an order workflow');
      const webhookEvent: WebhookEvent = {
        ...event,
        id: webhookEventId(orderWorkflowId, event.sequence),
        orderWorkflowId,
        targets,
      };
      const input: WebhookDeliveryInput = { orderWorkflowId, client: event.client, policy: deps.policy };
      await deps.temporal.workflow.signalWithStart(webhookDeliveryWorkflowType, {
        workflowId: webhookDeliveryWorkflowId(orderWorkflowId),
        taskQueue: deps.taskQueue,
        args: [input],
        signal: webhookEventSignal,
        signalArgs: [webhookEvent],
        // A run that closed (all delivered) is followed by a new one if a late event comes.
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      });
    },
  };
}

export interface DeliveryDeps {
  endpoints: WebhookEndpoints;
  /** WEBHOOK_SIGNING_KEY; without it nothing can be signed and every attempt fails saying so. */
  signingKey: Buffer | undefined;
  sender: { post(url: string, body: string, headers: Record<string, string>): Promise<DeliveryOutcome> };
  clock?: () => Date;
  /** Delivery outcomes and lag (docs/deployers.md "Metrics"); none by default. */
  metrics?: Metrics;
}

export function createDeliveryActivities(deps: DeliveryDeps) {
  const clock = deps.clock ?? (() => new Date());
  const metrics = deps.metrics ?? noMetrics;
  const deliveries = metrics.counter(metricCatalog.webhookDeliveries);
  const deliveryLag = metrics.histogram(metricCatalog.webhookDeliveryLag);

  /** Where every attempt ends: one log line per attempt, and the place to count outcomes. */
  function attemptEnded(event: WebhookEvent, endpoint: string, result: DeliveryOutcome): DeliveryOutcome {
    const fields = {
      client: event.client,
      endpoint,
      eventType: event.type,
      sequence: event.sequence,
      outcome: result.outcome,
      ...(result.outcome !== 'endpoint-removed' && result.status !== undefined
        ? { status: result.status }
        : {}),
      ...(result.outcome === 'failed' ? { error: result.error } : {}),
    };
    if (result.outcome === 'delivered') log.info('webhook delivered', fields);
    else log.warn('webhook not delivered', fields);
    deliveries.add({ client: event.client, event_type: event.type, outcome: result.outcome });
    if (result.outcome === 'delivered') {
      const lagSeconds = (clock().getTime() - Date.parse(event.timestamp)) / 1000;
      deliveryLag.record({ client: event.client, event_type: event.type }, Math.max(0, lagSeconds));
    }
    return result;
  }

  return {
    async deliverWebhook(input: { event: WebhookEvent; endpoint: string }): Promise<DeliveryOutcome> {
      const { event } = input;
      const endpoint = deps.endpoints.webhooksOf(event.client).find((e) => e.id === input.endpoint);
      if (!endpoint) return attemptEnded(event, input.endpoint, { outcome: 'endpoint-removed' });
      if (!deps.signingKey) {
        return attemptEnded(event, endpoint.id, {
          outcome: 'failed',
          error: 'cannot sign: WEBHOOK_SIGNING_KEY is not set on the worker',
        });
      }
      const body = JSON.stringify(webhookMessage(event, endpoint));
      const secrets = endpointSecrets(deps.signingKey, event.client, endpoint);
      const result = await deps.sender.post(
        endpoint.url,
        body,
        signedHeaders(event.id, body, secrets, clock()),
      );
      return attemptEnded(event, endpoint.id, result);
    },
  };
}

export type AnnounceActivity = ReturnType<typeof createAnnounceActivity>;
export type DeliveryActivities = ReturnType<typeof createDeliveryActivities>;
