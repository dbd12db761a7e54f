/**
 * What the webhook routes do (docs/integrators.md "Webhooks"): a client's endpoints as the clients file lists
 * them (never a secret: there is none in the file), the delivery state of one of its orders, read
 * from the order's delivery workflow, and a redelivery of one event.
 *
 * Only the order's owner reaches these: the endpoints and what they were sent are its own
 * integration's business. Another client's order is a 404 here as everywhere.
 */
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Caller, ClientRegistry } from '../clients';
import type { WebhookEndpoint } from '../clients';
import {
  redeliverSignal,
  webhookDeliveryWorkflowId,
  webhookDeliveryWorkflowType,
  type EndpointDelivery,
  type WebhookDeliveryInput,
  type WebhookDeliveryState,
  type WebhookEventType,
} from '../../contract/webhooks';
import { ApiError } from '../http';
import { orderDeliveryRecords } from './webhook-records.service';

/**
 * What the webhook routes need of the orders (src/orders' OrderService has it): the workflow ID of
 * an order the caller owns, 404 otherwise.
 */
export interface OwnedOrders {
  ownOrder(caller: Caller, ref: string): Promise<string>;
}

export interface WebhookServiceOptions {
  client: Client;
  clients: ClientRegistry;
  orders: OwnedOrders;
  /** WEBHOOK_TASK_QUEUE: where a redelivery restarts a closed delivery workflow. */
  taskQueue: string;
  timeoutMs: number;
  logger: Logger;
}

/** An endpoint as its client may see it: where, what, whether card codes go along. No secret. */
export interface EndpointView {
  id: string;
  url: string;
  /** Absent: every event type, including any added later. */
  events?: WebhookEventType[];
  cardCodes: boolean;
  secretVersion: number;
  /** A rotation is under way: events carry a signature with the previous secret too. */
  previousSecretVersion?: number;
}

export interface EventDeliveryView {
  id: string;
  sequence: number;
  type: WebhookEventType;
  timestamp: string;
  deliveries: EndpointDelivery[];
}

/** The order view's `webhooks`: per endpoint, how its events of this order fared. */
export interface EndpointDeliverySummary {
  endpoint: string;
  events: number;
  delivered: number;
  pending: number;
  failed: number;
  skipped: number;
  /** Attempts over all this order's events (redeliveries start their count again). */
  attempts: number;
  lastAttemptAt?: string;
  lastDeliveredAt?: string;
  /** Why the latest failed attempt failed, while an event is pending or failed. */
  lastError?: string;
  nextAttemptAt?: string;
}

function endpointView(endpoint: WebhookEndpoint): EndpointView {
  return {
    id: endpoint.id,
    url: endpoint.url,
    ...(endpoint.events ? { events: endpoint.events } : {}),
    cardCodes: endpoint.cardCodes ?? false,
    secretVersion: endpoint.secretVersion ?? 1,
    ...(endpoint.previousSecretVersion !== undefined
      ? { previousSecretVersion: endpoint.previousSecretVersion }
      : {}),
  };
}

const latest = (values: (string | undefined)[]) =>
  values
    .filter((v): v is string => v !== undefined)
    .sort()
    .at(-1);

export function summarize(state: WebhookDeliveryState | undefined): EndpointDeliverySummary[] {
  const byEndpoint = new Map<string, EndpointDelivery[]>();
  for (const record of state?.events ?? []) {
    for (const delivery of record.deliveries) {
      byEndpoint.set(delivery.endpoint, [...(byEndpoint.get(delivery.endpoint) ?? []), delivery]);
    }
  }
  return [...byEndpoint].map(([endpoint, deliveries]) => {
    const count = (state: EndpointDelivery['state']) => deliveries.filter((d) => d.state === state).length;
    const open = deliveries.filter((d) => d.state === 'pending' || d.state === 'failed');
    const lastFailed = open
      .filter((d) => d.lastError !== undefined)
      .sort((a, b) => (a.lastAttemptAt ?? '').localeCompare(b.lastAttemptAt ?? ''))
      .at(-1);
    const lastAttemptAt = latest(deliveries.map((d) => d.lastAttemptAt));
    const lastDeliveredAt = latest(deliveries.map((d) => d.deliveredAt));
    const nextAttemptAt = open
      .map((d) => d.nextAttemptAt)
      .filter((v): v is string => v !== undefined)
      .sort()[0];
    return {
      endpoint,
      events: deliveries.length,
      delivered: count('delivered'),
      pending: count('pending'),
      failed: count('failed'),
      skipped: count('skipped'),
      attempts: deliveries.reduce((n, d) => n + d.attempts, 0),
      ...(lastAttemptAt ? { lastAttemptAt } : {}),
      ...(lastDeliveredAt ? { lastDeliveredAt } : {}),
      ...(lastFailed?.lastError ? { lastError: lastFailed.lastError } : {}),
      ...(nextAttemptAt ? { nextAttemptAt } : {}),
    };
  });
}

export class WebhookService {
  readonly #o: WebhookServiceOptions;

  constructor(options: WebhookServiceOptions) {
    this.#o = options;
  }

  #timed<T>(fn: () => Promise<T>): Promise<T> {
    return this.#o.client.withDeadline(Date.now() + this.#o.timeoutMs, fn);
  }

  endpoints(caller: Caller): EndpointView[] {
    return this.#o.clients.webhooksOf(caller.id).map(endpointView);
  }

  /** Whether the order view should show webhook deliveries: the caller's own order, and it has endpoints. */
  showsDeliveries(caller: Caller, owner: string): boolean {
    return caller.id === owner && this.#o.clients.webhooksOf(caller.id).length > 0;
  }

  /**
   * Every event of the order and its deliveries: those its announcements settled themselves (the
   * order's history) with those of its delivery workflow's runs (webhook-records.ts).
   */
  #state(orderWorkflowId: string): Promise<{
    merged: WebhookDeliveryState | undefined;
    workflow: WebhookDeliveryState | undefined;
  }> {
    return orderDeliveryRecords(this.#o.client, orderWorkflowId, (fn) => this.#timed(fn));
  }

  /** The per-endpoint summary for the order view (see showsDeliveries). */
  async summary(orderWorkflowId: string): Promise<EndpointDeliverySummary[]> {
    return summarize((await this.#state(orderWorkflowId)).merged);
  }

  /** Every event of the caller's order and its delivery at each endpoint; 404 for an order it does not own. */
  async deliveries(caller: Caller, ref: string): Promise<{ ref: string; events: EventDeliveryView[] }> {
    const state = (await this.#state(await this.#o.orders.ownOrder(caller, ref))).merged;
    return {
      ref,
      events: (state?.events ?? []).map(({ event, deliveries }) => ({
        id: event.id,
        sequence: event.sequence,
        type: event.type,
        timestamp: event.timestamp,
        deliveries,
      })),
    };
  }

  /**
   * Sends one event of the caller's order again, to every endpoint it was for or to one of them:
   * same id, same body, new signature; its attempts and retry window start again. A delivery
   * workflow that has closed is started again with the state it closed with.
   */
  async redeliver(
    caller: Caller,
    ref: string,
    eventId: string,
    endpoint: string | undefined,
    log: Logger = this.#o.logger,
  ): Promise<{ eventId: string; sequence: number; type: WebhookEventType; endpoints: string[] }> {
    const orderWorkflowId = await this.#o.orders.ownOrder(caller, ref);
    const { merged: state, workflow } = await this.#state(orderWorkflowId);
    const record = state?.events.find((e) => e.event.id === eventId);
    if (!state || !record)
      throw new ApiError('webhook-event-not-found', `Order ${ref} has no event ${eventId}.`);
    if (endpoint !== undefined && !record.event.targets.includes(endpoint)) {
      throw new ApiError('webhook-event-not-found', `Event ${eventId} was not for endpoint ${endpoint}.`);
    }
    // An event (or endpoint) the announcement delivered itself is new to the delivery workflow: it
    // comes with the request. A workflow that has closed, or never ran, starts with what it had.
    const known = workflow?.events.find((e) => e.event.id === eventId);
    const wanted = endpoint !== undefined ? [endpoint] : record.event.targets;
    const missing = wanted.some((target) => !known?.deliveries.some((d) => d.endpoint === target));
    const input: WebhookDeliveryInput = {
      orderWorkflowId,
      client: state.client,
      policy: state.policy,
      carried: workflow ?? {
        orderWorkflowId,
        client: state.client,
        policy: state.policy,
        events: [],
        // Started for this redelivery only: it closes once that is settled.
        orderFinal: true,
        backoffMs: {},
      },
    };
    // A running workflow just takes the signal (the arguments are for a closed one, which starts again).
    await this.#timed(() =>
      this.#o.client.workflow.signalWithStart(webhookDeliveryWorkflowType, {
        workflowId: webhookDeliveryWorkflowId(orderWorkflowId),
        taskQueue: this.#o.taskQueue,
        args: [input],
        signal: redeliverSignal,
        signalArgs: [
          {
            eventId,
            ...(endpoint !== undefined ? { endpoint } : {}),
            ...(missing ? { event: record.event } : {}),
          },
        ],
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        // The client's delivery workflows take turns with other clients' on the webhook queue.
        priority: { fairnessKey: caller.id },
      }),
    );
    log.info({ client: caller.id, ref, eventId, endpoint }, 'webhook redelivery requested');
    return {
      eventId,
      sequence: record.event.sequence,
      type: record.event.type,
      endpoints: endpoint !== undefined ? [endpoint] : record.event.targets,
    };
  }
}
