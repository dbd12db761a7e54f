/**
 * Every metric the service exports, in one place: name, help, labels and histogram buckets. The
 * API (prom-client, ./prometheus.ts), the worker (Temporal's Runtime metric meter,
 * ./temporal-meter.ts) and the workflow interceptors (src/worker/interceptors.workflow.ts, through the
 * workflow's own metric meter) all read their definitions here, and the dashboard test checks that
 * what Grafana queries is what the services export.
 *
 * Adding a metric is one entry here and one `metrics.counter(metricCatalog.x).add(…)` where it
 * happens. Labels are bounded sets only: order type, outcome, operation, route, status code,
 * client id (clients are a short configured list). Never a ref, a key, a phone number or a card
 * code: each distinct label value is a time series kept forever.
 *
 * Free of imports so that workflow code may use it (it is bundled into the workflow sandbox).
 * Counter names carry no `_total`: both exporters add it.
 */

export interface MetricDefinition<L extends string = string> {
  name: string;
  help: string;
  labels: readonly L[];
}
export interface CounterDefinition<L extends string = string> extends MetricDefinition<L> {
  kind: 'counter';
}
export interface HistogramDefinition<L extends string = string> extends MetricDefinition<L> {
  kind: 'histogram';
  /** Upper bounds of the buckets, in the metric's unit (seconds). */
  buckets: readonly number[];
}
export interface GaugeDefinition<L extends string = string> extends MetricDefinition<L> {
  kind: 'gauge';
}
export type AnyMetricDefinition = CounterDefinition | HistogramDefinition | GaugeDefinition;

const counter = <L extends string>(
  name: string,
  help: string,
  labels: readonly L[],
): CounterDefinition<L> => ({
  kind: 'counter',
  name,
  help,
  labels,
});
const histogram = <L extends string>(
  name: string,
  help: string,
  labels: readonly L[],
  buckets: readonly number[],
): HistogramDefinition<L> => ({ kind: 'histogram', name, help, labels, buckets });
const gauge = <L extends string>(name: string, help: string, labels: readonly L[]): GaugeDefinition<L> => ({
  kind: 'gauge',
  name,
  help,
  labels,
});

/** A provider call: tens of milliseconds when healthy, up to the attempt's timeout (30 s) when not. */
const PROVIDER_CALL_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30];
/** An order: about 20 s at the spec's timings, up to the review that may take hours. */
const ORDER_BUCKETS = [1, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600];
/** A webhook: a second on a healthy path, up to the 24 h of retries for a receiver that is down. */
const WEBHOOK_LAG_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 6 * 3600, 24 * 3600];
/** An API request: milliseconds, up to API_REQUEST_TIMEOUT_MS (15 s). */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15];

export const metricCatalog = {
  // ---- intake API ----
  ordersAccepted: counter(
    'topup_orders_accepted',
    'Orders the intake API accepted (a new workflow started; repeats of the same request not counted).',
    ['order_type', 'client'],
  ),
  auditReveals: counter(
    'topup_audit_reveals',
    'Orders read with secrets revealed (card codes, phone and line numbers in clear) through audit:reveal: the audit export, the order view, the orders export; by the client that read them.',
    ['client'],
  ),
  apiRequests: counter(
    'topup_api_requests',
    'Intake API requests answered, by route pattern and status code.',
    ['method', 'route', 'status'],
  ),
  apiRequestDuration: histogram(
    'topup_api_request_duration_seconds',
    'Time to answer an intake API request.',
    ['method', 'route'],
    REQUEST_BUCKETS,
  ),
  reviewBacklog: gauge(
    'topup_review_backlog',
    'Open orders in NEEDS_REVIEW on this task queue (Temporal visibility, cached briefly).',
    ['order_type'],
  ),
  reviewOldestAge: gauge(
    'topup_review_oldest_age_seconds',
    'How long the oldest open order in NEEDS_REVIEW has waited: since ReviewSince where the order ' +
      'carries it, otherwise since it was accepted (an upper bound). 0 with none in review.',
    [],
  ),

  ordersHeld: gauge(
    'topup_orders_held',
    'Orders HELD now (the provider account cannot take them), by reason: balance or operator (account workflow, cached briefly).',
    ['reason'],
  ),
  ordersHeldForOperator: gauge(
    'topup_operator_orders_held',
    'Orders HELD now for an operator the provider reports down, by operator (account workflow, cached briefly).',
    ['operator'],
  ),
  providerOperatorUp: gauge(
    'topup_provider_operator_up',
    'Each operator as the provider’s /v3/ping reports it: 1 up, 0 down (cached briefly).',
    ['operator'],
  ),
  providerApiUp: gauge(
    'topup_provider_api_up',
    'The provider’s own API as its /v3/ping reports it: 1 ok, 0 error (cached briefly). Reported only: ' +
      'sends go on, and each call’s own answer decides.',
    [],
  ),
  providerBalance: gauge(
    'topup_provider_balance_dzd',
    'The provider account’s balance in DZD (/v3/account/balance, cached briefly): alert before it reaches 0.',
    [],
  ),

  workerVersionState: gauge(
    'topup_worker_version_state',
    'This worker’s Worker Deployment version and how Temporal routes it: 1 for the state it is in ' +
      '(current, ramping, draining, drained, inactive, unregistered), 0 for the others; read every minute.',
    ['deployment', 'build_id', 'state'],
  ),

  // ---- worker: workflows (emitted by src/worker/interceptors.workflow.ts, never during replay) ----
  ordersFinished: counter(
    'topup_orders_finished',
    'Orders that reached a final status; reviewed="true" when an operator or a review recheck settled them.',
    ['order_type', 'outcome', 'reviewed'],
  ),
  orderTimeToFinal: histogram(
    'topup_order_time_to_final_seconds',
    'From acceptance by the API to the final status.',
    ['order_type', 'outcome'],
    ORDER_BUCKETS,
  ),
  reviewDecisions: counter(
    'topup_review_decisions',
    'Operator decisions received by orders (the signal or update that carries one), by decision.',
    ['order_type', 'decision', 'handler'],
  ),
  reviewDecisionOutcomes: counter(
    'topup_review_decision_outcomes',
    'What came of the operator decisions an order worked off (signal or update alike): applied, ' +
      'rechecked, resumed or refused, and why refused (contradicted, unconfirmed, invalid, not-in-review).',
    ['order_type', 'decision', 'outcome', 'refusal'],
  ),
  reconciliationOrders: counter(
    'topup_reconciliation_orders',
    'The nightly reconciliation, by outcome: orders whose ledger rows matched (matched), mismatches ' +
      're-checked at the provider that it agreed with (agreed), that were reopened as DISPUTED or found ' +
      'DISPUTED already (disputed), that could not be checked (unreachable) or whose workflow was running ' +
      'again (open), ledger rows of the day no order explains (unexplained), and those of them the ' +
      'provider knows under an id no order of ours has (foreign) or as a second top-up under the ref of ' +
      'an order of ours, money sent twice (second-top-up).',
    ['outcome'],
  ),
  ordersDisputed: counter(
    'topup_orders_disputed',
    'Orders reopened as DISPUTED: the provider later reported the other final status than the ' +
      "operator's decision, by that decision.",
    ['order_type', 'decision'],
  ),

  // ---- worker: webhooks (src/webhooks/webhook.activities.ts) ----
  webhookDeliveries: counter(
    'topup_webhook_deliveries',
    'Webhook delivery attempts by event type and outcome: delivered, failed (retried), endpoint-removed; deferred: not made, the endpoint was at its cap on this worker.',
    ['client', 'event_type', 'outcome'],
  ),
  webhookDeliveryLag: histogram(
    'topup_webhook_delivery_lag_seconds',
    "From the order's status change to the event's successful delivery (retries included).",
    ['client', 'event_type'],
    WEBHOOK_LAG_BUCKETS,
  ),

  // ---- worker and API: the provider ----
  providerCalls: counter(
    'topup_provider_calls',
    'Calls to the provider by operation and outcome: ok, or the failure kind (refused, not_found, ' +
      'not_reached, rate_limited, duplicate_ref, outcome_unknown).',
    ['operation', 'outcome'],
  ),
  providerCallDuration: histogram(
    'topup_provider_call_duration_seconds',
    'Duration of a provider call, queueing for a connection included.',
    ['operation', 'outcome'],
    PROVIDER_CALL_BUCKETS,
  ),
} as const;

export type MetricCatalog = typeof metricCatalog;

/** The name a metric has on a Prometheus /metrics page (counters gain `_total`). */
export function exportedName(definition: AnyMetricDefinition): string {
  return definition.kind === 'counter' ? `${definition.name}_total` : definition.name;
}
