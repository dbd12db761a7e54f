/**
 * The webhook delivery contract, shared by the order workflow (which announces its events), the
 * delivery workflow, the worker's activities and the intake API: event and state types, the
 * delivery workflow's ID, signals and query. Safe to import from workflow code (no I/O).
 *
 * How an event travels (docs/integrators.md "Webhooks"): a status change in the order workflow → one local
 * activity (`announceOrderEvent`) that tries each endpoint once itself and records what it settled
 * in its result (the order's history) → for the endpoints it did not settle, a signal-with-start of
 * the order's delivery workflow → one delivery activity per endpoint and attempt, retried by the
 * delivery workflow with back-off. The order never waits for a receiver to change status.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { ReviewDecision } from './schemas';
import type { WebhookEventType } from './event-types';
import type { OrderStatus, OrderView } from './order';

export type { WebhookEventType };

export const webhookDeliveryWorkflowType = 'webhookDeliveryWorkflow';

/** One delivery workflow per order; `:` cannot appear in an order's workflow ID's parts (order.ts). */
export function webhookDeliveryWorkflowId(orderWorkflowId: string): string {
  return `webhooks:${orderWorkflowId}`;
}

/** What the order workflow hands on when its status changes or it acts on a decision. */
export interface OrderEvent {
  /** 1, 2, 3… per order, in the order the changes happened: receivers order events by it. */
  sequence: number;
  type: WebhookEventType;
  /** ISO time of the change (the workflow's clock). */
  timestamp: string;
  /** The order's owner, whose endpoints receive it. */
  client: string;
  /** Top-ups: the ref the provider knows the order by (the order view's `providerRef`). */
  providerRef?: string;
  /** The order's view right after the change: what the event's `data` shows. */
  view: OrderView;
  /** order.review_decision: the decision the workflow acted on, and the status it left the order in. */
  decision?: ReviewDecision & { outcome: OrderStatus };
}

/** An event as the delivery workflow keeps it. */
export interface WebhookEvent extends OrderEvent {
  /** `webhook-id`: the same on every attempt and redelivery, so receivers de-duplicate on it. */
  id: string;
  orderWorkflowId: string;
  /** The endpoints (ids) subscribed to this event type when the event happened. */
  targets: string[];
  /**
   * Attempts the announcement already made itself (src/webhooks/webhook.activities.ts "direct"), which failed:
   * the delivery workflow counts each as its endpoint's first attempt and retries after the back-off.
   */
  directAttempts?: DirectAttempt[];
  /** Endpoints the announcement handed off without a first try, and why (the bench counts them). */
  untried?: { endpoint: string; reason: UntriedReason }[];
}

/**
 * Why the announcement handed an endpoint's event off without a first try (its breaker, per
 * endpoint and worker: src/webhooks/webhook.activities.ts DirectGate). Information only: no code decides on it.
 */
export type UntriedReason = 'cooling' | 'busy' | 'suspect';

/** A failed first attempt made by the announcement, before the event was handed to the delivery workflow. */
export interface DirectAttempt {
  endpoint: string;
  at: string;
  error: string;
  status?: number;
}

/**
 * What an announcement (the order workflow's local activity) came to; its result, so it is in the
 * order's history. `deliveries` are the endpoints it settled itself (delivered on the first try, or
 * skipped); `handedOff` those it gave to the order's delivery workflow, which owns them from then
 * on. No `event` when no endpoint wanted it. A marker without this (an announcement made before
 * direct delivery) handed everything off.
 */
export interface AnnounceOutcome {
  event?: WebhookEvent;
  deliveries: EndpointDelivery[];
  handedOff: string[];
  /** The retry policy a redelivery of a directly delivered event starts the delivery workflow with. */
  policy?: WebhookDeliveryPolicy;
}

/**
 * Endpoints whose events of this order go to the delivery workflow without a direct try: once one
 * event of the order was handed off for an endpoint, the later ones follow it, so they queue behind
 * it in sequence. `all`: an order whose earlier events were announced before direct delivery.
 */
export type DurableEndpoints = string[] | 'all';

/** Retry and close timings of the delivery workflows, from the worker's configuration (WEBHOOK_*). */
export interface WebhookDeliveryPolicy {
  /** Start-to-close of one attempt: its HTTP timeout plus a margin. */
  attemptTimeoutMs: number;
  retryInitialMs: number;
  retryMaxIntervalMs: number;
  /** An event is given up (failed) when an attempt fails this long after it became due. */
  retryForMs: number;
  /** Close once everything is settled, the order is final and nothing came for this long. */
  idleCloseMs: number;
}

export type DeliveryState = 'pending' | 'delivered' | 'failed' | 'skipped';

/** One event at one endpoint. */
export interface EndpointDelivery {
  endpoint: string;
  state: DeliveryState;
  /** Attempts since the event (or its last redelivery) became due; a deferral is not one. */
  attempts: number;
  /**
   * When the retry window of the current round started (the event, or its redelivery): the window
   * (`retryForMs`) runs from here, deferrals included.
   */
  dueSince: string;
  /**
   * Times the worker did not make an attempt because the endpoint already had as many in flight as
   * it may (WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT), since the event (or its redelivery) became due.
   */
  deferrals?: number;
  nextAttemptAt?: string;
  lastAttemptAt?: string;
  /** Why the latest failed attempt failed (kept once delivered): an HTTP status, a timeout, a refused address; never a body. */
  lastError?: string;
  /** The receiver's HTTP status on the last attempt, when it answered. */
  lastStatus?: number;
  deliveredAt?: string;
  redeliveries?: number;
}

export interface EventDeliveries {
  event: WebhookEvent;
  deliveries: EndpointDelivery[];
}

/** The delivery workflow's whole state: its query answer, its result, and what continue-as-new carries. */
export interface WebhookDeliveryState {
  orderWorkflowId: string;
  client: string;
  /** The timings this run works with; a redelivery that restarts a closed workflow starts it with the same. */
  policy: WebhookDeliveryPolicy;
  events: EventDeliveries[];
  /** The order reached a final status: the workflow may close once idle. */
  orderFinal: boolean;
  /** Per endpoint, the back-off of its next retry (ms), reset by a success. */
  backoffMs: Record<string, number>;
}

export interface WebhookDeliveryInput {
  orderWorkflowId: string;
  client: string;
  policy: WebhookDeliveryPolicy;
  /** Set when a run continues as new, or a redelivery restarts a closed workflow: the state so far. */
  carried?: WebhookDeliveryState;
  /** Continue as new once the history has this many events (default 2,000); lowered only by tests. */
  historyEventLimit?: number;
}

/** What one delivery attempt came to. */
export type DeliveryOutcome =
  | { outcome: 'delivered'; status: number }
  | { outcome: 'failed'; error: string; status?: number }
  /** The endpoint is no longer in the clients file: nothing to send to. */
  | { outcome: 'endpoint-removed' }
  /**
   * Nothing was sent and it was no attempt: the endpoint already had as many attempts in flight on
   * this worker as it may (WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT). Tried again with no back-off, after
   * `retryAfterMs`: the worker's estimate of when a slot at the endpoint is free for this one.
   */
  | { outcome: 'deferred'; reason: string; retryAfterMs?: number };

export interface RedeliverRequest {
  eventId: string;
  /** Only this endpoint; default: every endpoint the event was for. */
  endpoint?: string;
  /**
   * The event itself, for one this workflow never had (delivered directly by the announcement) or
   * had for other endpoints only: the workflow adds it, then redelivers.
   */
  event?: WebhookEvent;
}

export const webhookEventSignal = defineSignal<[WebhookEvent]>('webhookEvent');
export const redeliverSignal = defineSignal<[RedeliverRequest]>('redeliverWebhook');
export const webhookDeliveriesQuery = defineQuery<WebhookDeliveryState>('webhookDeliveries');
