/**
 * The webhook activities (docs/integrators.md "Webhooks"):
 *
 * - `announceOrderEvent`, a *local* activity of the order workflow, run at each status change of an
 *   order whose client had endpoints: it picks the endpoints subscribed to the event from the
 *   clients file as the worker knows it now and tries each one **directly**, once: a receiver that
 *   answers 2xx promptly has its event, and the order's history (this activity's marker, its
 *   result) is its delivery record — no workflow, no task, nothing more in Temporal. An endpoint
 *   that fails that try, is slow, is busy or is already behind for this order is **handed off**:
 *   the activity signals-with-start the order's delivery workflow (on the webhook task queue), which
 *   retries it for as long as ever. Nothing at all when no endpoint wants the event.
 * - `deliverWebhook`, an activity of the delivery workflow (and the direct try): one signed POST to
 *   one endpoint. The endpoint's URL, opt-in and secret are read at each attempt, so a changed URL
 *   or a rotated secret applies to the next attempt, and a removed endpoint gets nothing more.
 */
import { Context, log } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { WebhookEndpoint } from '../clients';
import { metricCatalog } from '../../contract/metrics';
import { noMetrics, type Metrics } from '../observability';
import { webhookEventId, webhookMessage, signedHeaders } from './message';
import { endpointSecrets } from './secrets';
import {
  webhookDeliveryWorkflowId,
  webhookDeliveryWorkflowType,
  webhookEventSignal,
  type AnnounceOutcome,
  type DeliveryOutcome,
  type DirectAttempt,
  type DurableEndpoints,
  type EndpointDelivery,
  type UntriedReason,
  type OrderEvent,
  type WebhookDeliveryInput,
  type WebhookDeliveryPolicy,
  type WebhookEvent,
} from '../../contract/webhooks';

/** Where a client's endpoints are looked up: the clients file as this worker last read it. */
export interface WebhookEndpoints {
  webhooksOf(client: string): readonly WebhookEndpoint[];
}

type Deliver = (input: { event: WebhookEvent; endpoint: string }) => Promise<DeliveryOutcome>;

/** How announcements try endpoints themselves (docs/integrators.md "Delivery, retries, and what never waits"). */
export interface DirectDelivery {
  /** One attempt, as the delivery activity makes it, with a sender whose timeout is `timeoutMs` at most. */
  deliver: Deliver;
  /** Direct tries one endpoint may have in flight in this worker; more are handed off (default 16). */
  maxInFlight?: number;
  /** A failed try (a slow answer is a timeout) sends the endpoint's events to the delivery workflow for this long. */
  cooldownMs?: number;
  /**
   * A try that finds a *prompt* endpoint's tries all in flight waits this long at most for one of
   * them to end (no more waiting than `maxInFlight`), instead of being handed off at once. Prompt:
   * its tries lately took less than this on average. 0 turns waiting off.
   */
  maxWaitMs?: number;
  clock?: () => number;
}

/**
 * A first try gets 2 s (WEBHOOK_TIMEOUT_MS if shorter): a receiver slower than that is left to the
 * delivery workflow. After a failure, 10 s without first tries: a dead endpoint costs a worker at
 * most `maxInFlight` short tries that often.
 */
export const DIRECT_DELIVERY_DEFAULTS = {
  timeoutMs: 2_000,
  maxInFlight: 16,
  cooldownMs: 10_000,
  maxWaitMs: 500,
};

export interface AnnounceDeps {
  /** A Temporal client with the worker's data converter: the event is a payload like any other. */
  temporal: Client;
  taskQueue: string;
  endpoints: WebhookEndpoints;
  policy: WebhookDeliveryPolicy;
  /** Without it every event goes to the delivery workflow (as before direct delivery). */
  direct?: DirectDelivery;
}

function subscribed(endpoint: WebhookEndpoint, event: OrderEvent): boolean {
  return endpoint.events === undefined || endpoint.events.includes(event.type);
}

/**
 * Per endpoint, in this worker, a circuit breaker on direct tries: the tries in flight (at most
 * `maxInFlight`) and, after a failed one (a slow answer is a timeout), until when its events skip
 * the direct try. Once that cooldown is over the endpoint is still suspect: one try at a time
 * until one succeeds, then `maxInFlight` again. A slow or dead endpoint thus holds one
 * local-activity slot — and the order workflow task waiting on it — per cooldown, not
 * `maxInFlight` of them, and never holds another client's events.
 */
export class DirectGate {
  readonly #inFlight = new Map<string, number>();
  readonly #coolingUntil = new Map<string, number>();
  /** Endpoints whose last try failed and none has succeeded since. */
  readonly #suspect = new Set<string>();
  /** Per endpoint, how long its tries lately took (a moving mean of the successful ones), ms. */
  readonly #typicalMs = new Map<string, number>();
  /** Per endpoint, the tries waiting for one in flight to end, first come first served. */
  readonly #waiting = new Map<string, ((entered: boolean) => void)[]>();
  readonly #o: Required<Omit<DirectDelivery, 'deliver'>>;

  constructor(options: Omit<DirectDelivery, 'deliver'> = {}) {
    const { maxInFlight, cooldownMs, maxWaitMs } = DIRECT_DELIVERY_DEFAULTS;
    this.#o = { maxInFlight, cooldownMs, maxWaitMs, clock: Date.now, ...options };
  }

  /**
   * `enter`, or, when a prompt endpoint's tries are all in flight, a short wait for one to end (its
   * slot passes straight to the first waiting). A burst of a prompt receiver's events thus gets its
   * first tries a moment later instead of a delivery workflow each; the receiver still has at most
   * `maxInFlight` at once, and a slow, failing or unknown endpoint waits for nothing.
   */
  async enterOrWait(key: string): Promise<boolean> {
    if (this.enter(key)) return true;
    const waiting = this.#waiting.get(key) ?? [];
    const typical = this.#typicalMs.get(key);
    const prompt = typical !== undefined && typical < this.#o.maxWaitMs;
    if (this.refusal(key) !== 'busy' || !prompt || waiting.length >= this.#o.maxInFlight) return false;
    this.#waiting.set(key, waiting);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => settle(false), this.#o.maxWaitMs);
      const settle = (entered: boolean) => {
        clearTimeout(timer);
        const at = waiting.indexOf(settle);
        if (at >= 0) waiting.splice(at, 1);
        if (waiting.length === 0 && this.#waiting.get(key) === waiting) this.#waiting.delete(key);
        resolve(entered);
      };
      waiting.push(settle);
    });
  }

  /** Whether a direct try may start now; if so it is counted until `leave`. */
  enter(key: string): boolean {
    const now = this.#o.clock();
    if ((this.#coolingUntil.get(key) ?? 0) > now) return false;
    const inFlight = this.#inFlight.get(key) ?? 0;
    if (inFlight >= (this.#suspect.has(key) ? 1 : this.#o.maxInFlight)) return false;
    this.#inFlight.set(key, inFlight + 1);
    return true;
  }

  /** Why `enter` just refused: cooling after a failure, or as many tries in flight as allowed (one while suspect). */
  refusal(key: string): UntriedReason {
    if ((this.#coolingUntil.get(key) ?? 0) > this.#o.clock()) return 'cooling';
    return this.#suspect.has(key) ? 'suspect' : 'busy';
  }

  /** A try ended: `ok` unless it failed; `tookMs`, how long it took. */
  leave(key: string, ok: boolean, tookMs?: number): void {
    if (ok && tookMs !== undefined) {
      const typical = this.#typicalMs.get(key);
      this.#typicalMs.set(key, typical === undefined ? tookMs : typical * 0.8 + tookMs * 0.2);
    }
    if (!ok) this.#typicalMs.delete(key);
    const waiting = this.#waiting.get(key);
    if (ok) {
      this.#suspect.delete(key);
      // The slot goes to the first try waiting for it, if any: in flight stays as it was.
      const next = waiting?.[0];
      if (next) return next(true);
    }
    const left = (this.#inFlight.get(key) ?? 1) - 1;
    if (left > 0) this.#inFlight.set(key, left);
    else this.#inFlight.delete(key);
    if (ok) return;
    this.#suspect.add(key);
    this.#coolingUntil.set(key, this.#o.clock() + this.#o.cooldownMs);
    // Cooling now: whoever waited is handed off.
    for (const settle of [...(waiting ?? [])]) settle(false);
  }

  now(): number {
    return this.#o.clock();
  }
}

/** Without `deps` (a worker with no webhook configuration) events are dropped, and the order goes on. */
export function createAnnounceActivity(deps: AnnounceDeps | undefined) {
  let warned = false;
  const gate = deps?.direct ? new DirectGate(deps.direct) : undefined;

  /** One direct try: a settled delivery record, or the failed attempt to hand off with. */
  async function tryDirect(
    event: WebhookEvent,
    endpoint: string,
  ): Promise<{ settled: EndpointDelivery } | { failed?: DirectAttempt; untried?: UntriedReason }> {
    const key = `${event.client}:${endpoint}`;
    if (!gate || !deps?.direct) return {};
    if (!(await gate.enterOrWait(key))) return { untried: gate.refusal(key) };
    const startedAt = gate.now();
    const at = new Date(startedAt).toISOString();
    let result: DeliveryOutcome;
    try {
      result = await deps.direct.deliver({ event, endpoint });
    } catch (err) {
      result = {
        outcome: 'failed',
        error: `the attempt failed (${err instanceof Error ? err.message : String(err)})`,
      };
    }
    gate.leave(key, result.outcome !== 'failed', gate.now() - startedAt);
    const base = { endpoint, attempts: 1, dueSince: at, lastAttemptAt: at };
    switch (result.outcome) {
      case 'delivered':
        return {
          settled: {
            ...base,
            state: 'delivered',
            deliveredAt: new Date(gate.now()).toISOString(),
            lastStatus: result.status,
          },
        };
      case 'endpoint-removed':
        return { settled: { ...base, state: 'skipped', lastError: 'the endpoint is no longer configured' } };
      case 'deferred':
        // Not an attempt (first tries have no cap of their own; kept for the type): handed off untried.
        return {};
      case 'failed':
        return {
          failed: {
            endpoint,
            at,
            error: result.error,
            ...(result.status !== undefined ? { status: result.status } : {}),
          },
        };
    }
  }

  return {
    async announceOrderEvent(event: OrderEvent, durable: DurableEndpoints = 'all'): Promise<AnnounceOutcome> {
      if (!deps) {
        if (!warned) log.warn('webhook event dropped: this worker has no webhook configuration');
        warned = true;
        return { deliveries: [], handedOff: [] };
      }
      const targets = deps.endpoints
        .webhooksOf(event.client)
        .filter((endpoint) => subscribed(endpoint, event))
        .map((endpoint) => endpoint.id);
      if (targets.length === 0) return { deliveries: [], handedOff: [] };
      const info = Context.current().info;
      const orderWorkflowId = info.workflowExecution?.workflowId;
      if (!orderWorkflowId) throw new Error('announceOrderEvent runs only inside an order workflow');
      const webhookEvent: WebhookEvent = {
        ...event,
        id: webhookEventId(orderWorkflowId, event.sequence),
        orderWorkflowId,
        targets,
      };
      // A retry of this activity may follow direct deliveries that went through: it hands
      // everything off rather than guess (at least once, the same id).
      const tryable = (endpoint: string) =>
        info.attempt === 1 && durable !== 'all' && !durable.includes(endpoint);
      const tries = await Promise.all(
        targets.map(async (endpoint) => ({
          endpoint,
          ...(tryable(endpoint) ? await tryDirect(webhookEvent, endpoint) : {}),
        })),
      );
      const deliveries: EndpointDelivery[] = [];
      const handedOff: string[] = [];
      const directAttempts: DirectAttempt[] = [];
      const untried: NonNullable<WebhookEvent['untried']> = [];
      for (const t of tries) {
        if ('settled' in t && t.settled) deliveries.push(t.settled);
        else {
          handedOff.push(t.endpoint);
          if ('failed' in t && t.failed) directAttempts.push(t.failed);
          if ('untried' in t && t.untried) untried.push({ endpoint: t.endpoint, reason: t.untried });
        }
      }
      if (handedOff.length > 0) {
        const input: WebhookDeliveryInput = { orderWorkflowId, client: event.client, policy: deps.policy };
        const handed: WebhookEvent = {
          ...webhookEvent,
          targets: handedOff,
          ...(directAttempts.length > 0 ? { directAttempts } : {}),
          ...(untried.length > 0 ? { untried } : {}),
        };
        await deps.temporal.workflow.signalWithStart(webhookDeliveryWorkflowType, {
          workflowId: webhookDeliveryWorkflowId(orderWorkflowId),
          taskQueue: deps.taskQueue,
          args: [input],
          signal: webhookEventSignal,
          signalArgs: [handed],
          // A run that closed (all delivered) is followed by a new one if a late event comes.
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          // The client's delivery workflows take turns with other clients' on the webhook queue.
          priority: { fairnessKey: event.client },
        });
      }
      return { event: webhookEvent, deliveries, handedOff, policy: deps.policy };
    },
  };
}

export interface DeliveryDeps {
  endpoints: WebhookEndpoints;
  /** WEBHOOK_SIGNING_KEY; without it nothing can be signed and every attempt fails saying so. */
  signingKey: Buffer | undefined;
  sender: { post(url: string, body: string, headers: Record<string, string>): Promise<DeliveryOutcome> };
  clock?: () => Date;
  /** Delivery outcomes and lag (docs/deployers.md "Metrics and traces"); none by default. */
  metrics?: Metrics;
  /**
   * Attempts one endpoint may have in flight in this worker (WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT).
   * One more is `deferred` at once, sending nothing: not an attempt, so it neither counts nor
   * backs off nor leaves an error, and the delivery workflow tries it again soon. A slow endpoint
   * holds this many of the worker's delivery slots, not all of them. Unbounded when absent.
   */
  maxInFlightPerEndpoint?: number;
}

export function createDeliveryActivities(deps: DeliveryDeps) {
  const clock = deps.clock ?? (() => new Date());
  const metrics = deps.metrics ?? noMetrics;
  const deliveries = metrics.counter(metricCatalog.webhookDeliveries);
  const deliveryLag = metrics.histogram(metricCatalog.webhookDeliveryLag);
  const inFlight = new Map<string, number>();
  const maxInFlight = deps.maxInFlightPerEndpoint ?? Infinity;
  const slots = new EndpointSlots(maxInFlight);

  /** Where every attempt ends: one log line per attempt, and the place to count outcomes. */
  function attemptEnded(event: WebhookEvent, endpoint: string, result: DeliveryOutcome): DeliveryOutcome {
    const fields = {
      client: event.client,
      endpoint,
      eventType: event.type,
      sequence: event.sequence,
      outcome: result.outcome,
      ...((result.outcome === 'delivered' || result.outcome === 'failed') && result.status !== undefined
        ? { status: result.status }
        : {}),
      ...(result.outcome === 'failed' ? { error: result.error } : {}),
      ...(result.outcome === 'deferred' ? { reason: result.reason } : {}),
    };
    if (result.outcome === 'delivered') log.info('webhook delivered', fields);
    // Not a failure of the endpoint: the worker's own limit; counted below for whoever tunes it.
    else if (result.outcome === 'deferred') log.debug('webhook attempt deferred', fields);
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
      const key = `${event.client}:${endpoint.id}`;
      const busy = inFlight.get(key) ?? 0;
      if (busy >= maxInFlight) {
        return attemptEnded(event, endpoint.id, {
          outcome: 'deferred',
          reason: `${busy} attempts at this endpoint were already in flight on this worker`,
          retryAfterMs: slots.nextFreeInMs(key),
        });
      }
      inFlight.set(key, busy + 1);
      const ended = slots.attemptStarted(key);
      try {
        const body = JSON.stringify(webhookMessage(event, endpoint));
        const secrets = endpointSecrets(deps.signingKey, event.client, endpoint);
        const result = await deps.sender.post(
          endpoint.url,
          body,
          signedHeaders(event.id, body, secrets, clock()),
        );
        return attemptEnded(event, endpoint.id, result);
      } finally {
        ended();
        const left = (inFlight.get(key) ?? 1) - 1;
        if (left > 0) inFlight.set(key, left);
        else inFlight.delete(key);
      }
    },
  };
}

/**
 * When a deferred attempt should come back (activities at the cap): a virtual line per endpoint.
 * The endpoint serves `cap` attempts per typical attempt's time (the recent attempts' mean), so
 * each deferral is given the next turn after the turns already given out — instead of every
 * deferred event trying again after the same short wait, each of those tries an activity and a
 * timer of its delivery workflow. An estimate, not a reservation: an event that comes back to a
 * full endpoint is deferred again, to a later turn.
 */
export class EndpointSlots {
  readonly #typicalMs = new Map<string, number>();
  readonly #lineEndsAt = new Map<string, number>();

  constructor(
    private readonly cap: number,
    private readonly clock: () => number = Date.now,
  ) {}

  readonly #inFlightSince = new Map<string, number[]>();

  /** An attempt at `key` starts; the callback says it ended. */
  attemptStarted(key: string): () => void {
    const startedAt = this.clock();
    const since = this.#inFlightSince.get(key) ?? [];
    since.push(startedAt);
    this.#inFlightSince.set(key, since);
    return () => {
      since.splice(since.indexOf(startedAt), 1);
      if (since.length === 0) this.#inFlightSince.delete(key);
      const ms = this.clock() - startedAt;
      const typical = this.#typicalMs.get(key);
      this.#typicalMs.set(key, typical === undefined ? ms : typical * 0.8 + ms * 0.2);
    };
  }

  /** The wait until this deferral's turn, which it takes. */
  nextFreeInMs(key: string): number {
    const now = this.clock();
    // An attempt still in flight has taken at least its age so far (the slow endpoint's first ones).
    const oldest = Math.min(now, ...(this.#inFlightSince.get(key) ?? []));
    const typical = Math.max(this.#typicalMs.get(key) ?? FIRST_TURN_MS, now - oldest);
    const turnMs = typical / this.cap;
    const end = Math.max(now, this.#lineEndsAt.get(key) ?? 0) + turnMs;
    this.#lineEndsAt.set(key, end);
    return Math.max(MIN_TURN_MS, Math.round(end - now));
  }
}

/**
 * Before an attempt at the endpoint has ended, an attempt is guessed to take 5 s (the default first
 * back-off): a guess too short sends the first deferrals back before any slot can be free.
 */
const FIRST_TURN_MS = 5_000;
const MIN_TURN_MS = 100;

export type AnnounceActivity = ReturnType<typeof createAnnounceActivity>;
export type DeliveryActivities = ReturnType<typeof createDeliveryActivities>;
