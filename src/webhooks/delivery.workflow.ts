/**
 * One delivery workflow per order that needs one (ID `webhooks:<order workflow ID>`, on the webhook
 * task queue): it receives the order's events its announcement could not settle with a first try
 * (signal-with-start from the order workflow's local activity, src/webhooks/webhook.activities.ts), and events a
 * redelivery gives it, and delivers each to its endpoints, durably, without ever holding the order.
 *
 * Per endpoint, events go out one at a time in sequence order: a later event waits while an
 * earlier one is retried, so a receiver that comes back gets them in order. A failed attempt is
 * retried after a back-off (doubling from WEBHOOK_RETRY_INITIAL_MS up to
 * WEBHOOK_RETRY_MAX_INTERVAL_MS) until WEBHOOK_RETRY_FOR_MS after the event became due; then it is
 * `failed`, and only a redelivery sends it again. The workflow drives the retries itself (each
 * attempt is one activity with a single try), so its state — the `webhookDeliveries` query and
 * its result — always says how many attempts were made and why the last one failed. An attempt the
 * worker did not make because the endpoint was at its cap (`deferred`) is no attempt: it is tried
 * again after a short wait of its own, leaving the count, the error, the endpoint's back-off and the
 * retry window (still measured from when the event became due) as they were; a deferral after the
 * window has ended ends the event as `failed`, as a failed attempt would.
 *
 * It closes once the order is final, everything is settled and nothing new came for
 * WEBHOOK_IDLE_CLOSE_MS; its result is its state. A redelivery after that starts a new run with
 * that state (src/webhooks/webhook.service.ts). Deterministic workflow code: no I/O, Date.now() is workflow time.
 */
import {
  ActivityFailure,
  condition,
  makeContinueAsNewFunc,
  proxyActivities,
  setHandler,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type { DeliveryActivities } from './webhook.activities';
import { upgradeOnContinueAsNew, versionChanged } from '../temporal/workflows';
import { finalStatuses } from '../../contract/order';
import {
  redeliverSignal,
  webhookDeliveriesQuery,
  webhookEventSignal,
  type DeliveryOutcome,
  type EndpointDelivery,
  type EventDeliveries,
  type RedeliverRequest,
  type WebhookDeliveryInput,
  type WebhookDeliveryState,
  type WebhookEvent,
} from '../../contract/webhooks';

/** Continue as new well before Temporal's 10,240-event warning (a dead endpoint retries for days). */
const DEFAULT_HISTORY_EVENT_LIMIT = 2_000;

export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryState> {
  return new WebhookDelivery(input).run();
}

class WebhookDelivery {
  private readonly state: WebhookDeliveryState;
  /** Endpoints with an attempt in flight: one at a time per endpoint keeps each endpoint's events in order. */
  private readonly inFlight = new Set<string>();
  /** Something changed (an event, a redelivery, an attempt ended): look at the queues again. */
  private woke = false;
  private readonly deliver: DeliveryActivities['deliverWebhook'];
  private readonly deliveries = new Map<string, DeliveryActivities['deliverWebhook']>();

  constructor(private readonly input: WebhookDeliveryInput) {
    this.state = {
      ...(input.carried ?? {
        orderWorkflowId: input.orderWorkflowId,
        client: input.client,
        events: [],
        orderFinal: false,
        backoffMs: {},
      }),
      policy: input.policy,
    };
    this.deliver = (args) => this.deliveryTo(args.endpoint)(args);
    setHandler(webhookEventSignal, (event) => this.onEvent(event));
    setHandler(redeliverSignal, (request) => this.onRedeliver(request));
    setHandler(webhookDeliveriesQuery, () => this.state);
  }

  /**
   * The delivery activity for one endpoint. Each endpoint's attempts carry the fairness key
   * `<client>:<endpoint>` on the delivery queue (docs/integrators.md "Delivery, retries, and what
   * never waits"): while deliveries wait for a worker slot, each endpoint gets its turn, so a slow
   * or dead endpoint's backlog does not hold another's deliveries behind it.
   */
  private deliveryTo(endpoint: string): DeliveryActivities['deliverWebhook'] {
    let deliver = this.deliveries.get(endpoint);
    if (!deliver) {
      deliver = proxyActivities<DeliveryActivities>({
        startToCloseTimeout: this.input.policy.attemptTimeoutMs,
        // One try per activity: the workflow retries, so that its state shows every attempt.
        retry: { maximumAttempts: 1 },
        priority: { fairnessKey: `${this.state.client}:${endpoint}` },
      }).deliverWebhook;
      this.deliveries.set(endpoint, deliver);
    }
    return deliver;
  }

  async run(): Promise<WebhookDeliveryState> {
    for (;;) {
      this.startDueAttempts();
      const idle = this.inFlight.size === 0;
      // Also onto a new current worker version, once idle (src/temporal/versioning.workflow.ts).
      if (idle && (this.historyIsLong() || versionChanged())) {
        await makeContinueAsNewFunc<typeof webhookDeliveryWorkflow>(upgradeOnContinueAsNew())({
          ...this.input,
          carried: this.state,
        });
      }
      const nextDue = this.nextDueInMs();
      this.woke = false;
      if (idle && nextDue === undefined && this.state.orderFinal) {
        // Everything settled: close unless something comes (a decision's event right after the last status, say).
        if (!(await condition(() => this.woke, this.input.policy.idleCloseMs))) return this.state;
      } else if (nextDue === undefined) {
        await condition(() => this.woke);
      } else {
        await condition(() => this.woke, nextDue);
      }
    }
  }

  private onEvent(event: WebhookEvent): void {
    // The order's local activity may run twice (a retry after its signal went through): once is enough.
    if (this.state.events.some((e) => e.event.sequence === event.sequence)) return;
    this.insert({ event, deliveries: event.targets.map((endpoint) => this.newDelivery(event, endpoint)) });
    if (finalStatuses.includes(event.view.status)) this.state.orderFinal = true;
    this.woke = true;
  }

  /**
   * A pending delivery; when the announcement's own try failed, that was its first attempt, and the
   * next comes after the first back-off.
   */
  private newDelivery(event: WebhookEvent, endpoint: string): EndpointDelivery {
    const tried = event.directAttempts?.find((a) => a.endpoint === endpoint);
    if (!tried) return { endpoint, state: 'pending', attempts: 0, dueSince: new Date().toISOString() };
    const backoff = this.state.backoffMs[endpoint] ?? this.input.policy.retryInitialMs;
    this.state.backoffMs[endpoint] = backoff;
    return {
      endpoint,
      state: 'pending',
      attempts: 1,
      dueSince: tried.at,
      lastAttemptAt: tried.at,
      lastError: tried.error,
      ...(tried.status !== undefined ? { lastStatus: tried.status } : {}),
      nextAttemptAt: new Date(Date.parse(tried.at) + backoff).toISOString(),
    };
  }

  private insert(record: EventDeliveries): void {
    const at = this.state.events.findIndex((e) => e.event.sequence > record.event.sequence);
    if (at < 0) this.state.events.push(record);
    else this.state.events.splice(at, 0, record);
  }

  private onRedeliver({ eventId, endpoint, event }: RedeliverRequest): void {
    let record = this.state.events.find((e) => e.event.id === eventId);
    if (event && event.id === eventId) {
      // An event the announcement delivered itself: this workflow takes it on for the endpoints asked.
      if (!record) {
        record = { event: { ...event, targets: [] }, deliveries: [] };
        this.insert(record);
      }
      for (const target of endpoint !== undefined ? [endpoint] : event.targets) {
        if (record.deliveries.some((d) => d.endpoint === target)) continue;
        record.event.targets = [...record.event.targets, target];
        record.deliveries.push({ endpoint: target, state: 'pending', attempts: 0, dueSince: '' });
      }
    }
    if (!record) return; // the API checks first; a stale request changes nothing
    const now = new Date().toISOString();
    for (const delivery of record.deliveries) {
      if (endpoint !== undefined && delivery.endpoint !== endpoint) continue;
      delivery.state = 'pending';
      delivery.attempts = 0;
      delete delivery.deferrals;
      delivery.dueSince = now;
      delete delivery.nextAttemptAt;
      delivery.redeliveries = (delivery.redeliveries ?? 0) + 1;
    }
    this.woke = true;
  }

  /** Each endpoint's earliest pending event, if no attempt for that endpoint is in flight. */
  private heads(): { record: EventDeliveries; delivery: EndpointDelivery }[] {
    const heads = new Map<string, { record: EventDeliveries; delivery: EndpointDelivery }>();
    for (const record of this.state.events) {
      for (const delivery of record.deliveries) {
        if (delivery.state !== 'pending' || this.inFlight.has(delivery.endpoint)) continue;
        if (!heads.has(delivery.endpoint)) heads.set(delivery.endpoint, { record, delivery });
      }
    }
    return [...heads.values()];
  }

  private startDueAttempts(): void {
    const now = Date.now();
    for (const { record, delivery } of this.heads()) {
      if (dueAt(delivery) > now) continue;
      this.inFlight.add(delivery.endpoint);
      void this.attempt(record.event, delivery).finally(() => {
        this.inFlight.delete(delivery.endpoint);
        this.woke = true;
      });
    }
  }

  private nextDueInMs(): number | undefined {
    const dues = this.heads().map(({ delivery }) => dueAt(delivery));
    return dues.length === 0 ? undefined : Math.max(1, Math.min(...dues) - Date.now());
  }

  private async attempt(event: WebhookEvent, delivery: EndpointDelivery): Promise<void> {
    const previousAttemptAt = delivery.lastAttemptAt;
    delivery.attempts += 1;
    const attemptAt = (delivery.lastAttemptAt = new Date().toISOString());
    let result: DeliveryOutcome;
    try {
      result = await this.deliver({ event, endpoint: delivery.endpoint });
    } catch (err) {
      // The activity itself failed: a worker died mid-attempt, or the attempt outlived its timeout.
      result = { outcome: 'failed', error: attemptFailure(err) };
    }
    const now = Date.now();
    switch (result.outcome) {
      case 'delivered':
        delivery.state = 'delivered';
        delivery.deliveredAt = new Date(now).toISOString();
        delivery.lastStatus = result.status;
        // lastError stays: it says why an earlier attempt of this event failed.
        delete delivery.nextAttemptAt;
        delete this.state.backoffMs[delivery.endpoint];
        return;
      case 'deferred': {
        // Not an attempt: the count, the error and the endpoint's back-off stay as they were.
        // (A redelivery meanwhile may have started the count again: take back this one only.)
        delivery.attempts = Math.max(0, delivery.attempts - 1);
        if (delivery.lastAttemptAt === attemptAt) {
          if (previousAttemptAt === undefined) delete delivery.lastAttemptAt;
          else delivery.lastAttemptAt = previousAttemptAt;
        }
        delivery.deferrals = (delivery.deferrals ?? 0) + 1;
        // The window runs from dueSince, deferrals included: past it, the event ends as a failed attempt would end it.
        if (this.windowEnded(delivery, now)) {
          delivery.state = 'failed';
          // An earlier attempt's error stays: it says why the event failed before it waited its turn.
          const earlier = delivery.lastError !== undefined ? `; the last attempt: ${delivery.lastError}` : '';
          delivery.lastError = `the retry window ended before its next attempt could be made (${result.reason})${earlier}`;
          delete delivery.nextAttemptAt;
          return;
        }
        const wait =
          result.retryAfterMs !== undefined
            ? Math.min(this.input.policy.retryMaxIntervalMs, result.retryAfterMs)
            : this.deferralMs(delivery.deferrals);
        delivery.nextAttemptAt = new Date(now + wait).toISOString();
        return;
      }
      case 'endpoint-removed':
        delivery.state = 'skipped';
        delivery.lastError = 'the endpoint is no longer configured';
        delete delivery.nextAttemptAt;
        return;
      case 'failed': {
        delivery.lastError = result.error;
        if (result.status !== undefined) delivery.lastStatus = result.status;
        else delete delivery.lastStatus;
        const { retryInitialMs, retryMaxIntervalMs } = this.input.policy;
        const previous = this.state.backoffMs[delivery.endpoint];
        const backoff = previous === undefined ? retryInitialMs : Math.min(retryMaxIntervalMs, previous * 2);
        this.state.backoffMs[delivery.endpoint] = backoff;
        if (this.windowEnded(delivery, now)) {
          delivery.state = 'failed';
          delete delivery.nextAttemptAt;
        } else {
          delivery.nextAttemptAt = new Date(now + backoff).toISOString();
        }
      }
    }
  }

  /** WEBHOOK_RETRY_FOR_MS has passed since the event (or its redelivery) became due. */
  private windowEnded(delivery: EndpointDelivery, now: number): boolean {
    return now - Date.parse(delivery.dueSince) >= this.input.policy.retryForMs;
  }

  /**
   * How long a deferred attempt waits when the worker gave no estimate (`retryAfterMs`, its turn at
   * the endpoint; the first deferrals recorded had none): a slot at the endpoint frees when one of its attempts ends,
   * within an attempt's timeout at the latest. From the first back-off, doubling with the event's
   * deferrals up to that timeout, spread (±25 %) so the events deferred together do not all come
   * back together. Workflow code: Math.random is Temporal's seeded, replayable one.
   */
  private deferralMs(deferrals: number): number {
    const { retryInitialMs, attemptTimeoutMs } = this.input.policy;
    const wait = Math.min(attemptTimeoutMs, retryInitialMs * 2 ** Math.min(deferrals - 1, 16));
    return Math.round(wait * (0.75 + Math.random() * 0.5));
  }

  private historyIsLong(): boolean {
    const { historyLength, continueAsNewSuggested } = workflowInfo();
    return (
      continueAsNewSuggested || historyLength >= (this.input.historyEventLimit ?? DEFAULT_HISTORY_EVENT_LIMIT)
    );
  }
}

function dueAt(delivery: EndpointDelivery): number {
  return delivery.nextAttemptAt === undefined ? 0 : Date.parse(delivery.nextAttemptAt);
}

function attemptFailure(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof TimeoutFailure) return `the attempt did not finish in time (${cause.timeoutType})`;
  return `the attempt failed (${cause instanceof Error ? cause.message : String(cause)})`;
}
