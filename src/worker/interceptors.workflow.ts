/**
 * Workflow interceptors, bundled with the order workflows (src/worker/bundle.ts): metrics of
 * finished orders and operator decisions, and OpenTelemetry spans for orders started with a trace.
 * Neither issues a command, so neither adds a history event or changes what a workflow decides:
 * histories recorded without them replay the same (test/orders/replay.test.ts).
 *
 * Metrics go through the workflow's `metricMeter`, which the SDK drops while replaying, so an
 * order is counted once, when its final workflow task first runs (a worker that dies after it ran
 * and before Temporal recorded it would count that order again on the next worker: rare, and an
 * overcount, never a loss).
 */
import {
  ContinueAsNew,
  metricMeter,
  workflowInfo,
  type Next,
  type SignalInput,
  type UpdateInput,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptors,
} from '@temporalio/workflow';
import type * as WorkflowTracingModule from '@temporalio/interceptors-opentelemetry/lib/workflow';
import { metricCatalog } from '../../contract/metrics';
import {
  decideReviewUpdate,
  finalStatuses,
  resolveReviewSignal,
  workflowTypeByOrderType,
  type OrderView,
} from '../../contract/order';

/**
 * Signals and updates that carry an operator decision (`{decision, operator, …}`), counted as they
 * arrive (an update its validator rejected never does). What came of each is counted by the
 * lifecycle (./decision-metrics.ts). A new decision handler is counted once its name is added here.
 */
export const decisionHandlers: ReadonlySet<string> = new Set([
  resolveReviewSignal.name,
  decideReviewUpdate.name,
]);

const decisionValues = new Set(['FULFILLED', 'REFUNDED', 'RECHECK']);

function orderTypeOf(workflowType: string): string {
  const entry = Object.entries(workflowTypeByOrderType).find(([, name]) => name === workflowType);
  return entry?.[0] ?? workflowType;
}

function isFinalView(value: unknown): value is OrderView {
  const view = value as Partial<OrderView> | null;
  return (
    typeof view === 'object' &&
    view !== null &&
    typeof view.status === 'string' &&
    finalStatuses.includes(view.status) &&
    typeof view.acceptedAt === 'string'
  );
}

class OrderMetricsInterceptor implements WorkflowInboundCallsInterceptor {
  readonly #finished = metricMeter.createCounter(
    metricCatalog.ordersFinished.name,
    undefined,
    metricCatalog.ordersFinished.help,
  );
  readonly #timeToFinal = metricMeter.createHistogram(
    metricCatalog.orderTimeToFinal.name,
    'float',
    's',
    metricCatalog.orderTimeToFinal.help,
  );
  readonly #decisions = metricMeter.createCounter(
    metricCatalog.reviewDecisions.name,
    undefined,
    metricCatalog.reviewDecisions.help,
  );

  async execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) {
    const orderType = orderTypeOf(workflowInfo().workflowType);
    let result: unknown;
    try {
      result = await next(input);
    } catch (err) {
      // A run that continues as new is not finished; a workflow that failed is (no view to read).
      if (!(err instanceof ContinueAsNew)) {
        this.#finished.add(1, { order_type: orderType, outcome: 'WORKFLOW_FAILED', reviewed: 'false' });
      }
      throw err;
    }
    if (isFinalView(result)) {
      const outcome = result.status;
      this.#finished.add(1, {
        order_type: orderType,
        outcome,
        reviewed: String(result.review !== undefined),
      });
      const seconds = (Date.now() - Date.parse(result.acceptedAt)) / 1000;
      if (seconds >= 0) this.#timeToFinal.record(seconds, { order_type: orderType, outcome });
    }
    return result;
  }

  async handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>) {
    if (decisionHandlers.has(input.signalName)) this.#countDecision(input.signalName, input.args[0]);
    return next(input);
  }

  async handleUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>) {
    if (decisionHandlers.has(input.name)) this.#countDecision(input.name, input.args[0]);
    return next(input);
  }

  #countDecision(handler: string, payload: unknown): void {
    const decision = (payload as { decision?: unknown } | null)?.decision;
    this.#decisions.add(1, {
      order_type: orderTypeOf(workflowInfo().workflowType),
      // Typed by hand in Temporal UI: anything else is one bounded value, never the text itself.
      decision: typeof decision === 'string' && decisionValues.has(decision) ? decision : 'invalid',
      handler,
    });
  }
}

/** The header Temporal's OpenTelemetry interceptors carry a trace in (their TRACE_HEADER). */
export const TRACE_HEADER = '_tracer-data';

type WorkflowTracing = typeof WorkflowTracingModule;

/**
 * OpenTelemetry for one workflow, loaded on first use. The bundle carries it, but every module of
 * a workflow bundle is evaluated anew for each workflow in the worker's cache: imported at the
 * top, OpenTelemetry's API and SDK would be evaluated and kept for every order, traced or not
 * (its memory cost: docs/contributors.md, "What the code's choices cost"). Required here, only
 * traced orders pay for it.
 */
function workflowTracing(): WorkflowTracing {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- deliberately lazy, see above
  return require('@temporalio/interceptors-opentelemetry/lib/workflow') as WorkflowTracing;
}

/**
 * OpenTelemetry's workflow interceptors, for orders whose start carried a trace (the API traces
 * when OTEL_EXPORTER_OTLP_ENDPOINT is set). Every other order runs without them: OpenTelemetry is
 * not even loaded, no spans are built in the sandbox and nothing crosses to the worker's span
 * sink, so tracing off costs nothing here. Whether a run is traced is read from its start's
 * headers, which are in its history, so a replay decides the same.
 */
class TracingGate {
  #inbound?: WorkflowTracingModule.OpenTelemetryInboundInterceptor;
  #outbound?: WorkflowTracingModule.OpenTelemetryOutboundInterceptor;

  readonly inbound: WorkflowInboundCallsInterceptor = {
    execute: (input, next) => {
      if (input.headers[TRACE_HEADER] === undefined) return next(input);
      const tracing = workflowTracing();
      this.#inbound = new tracing.OpenTelemetryInboundInterceptor();
      this.#outbound = new tracing.OpenTelemetryOutboundInterceptor();
      return this.#inbound.execute(input, next);
    },
    handleSignal: (input, next) => (this.#inbound ? this.#inbound.handleSignal(input, next) : next(input)),
    handleUpdate: (input, next) => (this.#inbound ? this.#inbound.handleUpdate(input, next) : next(input)),
    validateUpdate: (input, next) =>
      this.#inbound ? this.#inbound.validateUpdate(input, next) : next(input),
  };

  readonly outbound: WorkflowInterceptors['outbound'] = [
    {
      scheduleActivity: (input, next) =>
        this.#outbound ? this.#outbound.scheduleActivity(input, next) : next(input),
      scheduleLocalActivity: (input, next) =>
        this.#outbound ? this.#outbound.scheduleLocalActivity(input, next) : next(input),
      continueAsNew: (input, next) =>
        this.#outbound ? this.#outbound.continueAsNew(input, next) : next(input),
      signalWorkflow: (input, next) =>
        this.#outbound ? this.#outbound.signalWorkflow(input, next) : next(input),
      startChildWorkflowExecution: (input, next) =>
        this.#outbound ? this.#outbound.startChildWorkflowExecution(input, next) : next(input),
      getLogAttributes: (input, next) =>
        this.#outbound ? this.#outbound.getLogAttributes(input, next) : next(input),
    },
  ];

  readonly internals: WorkflowInterceptors['internals'] = [
    {
      dispose: (input, next) => {
        // OpenTelemetry's dispose runs synchronously up to `next`; it returns a promise only by its signature.
        if (this.#inbound)
          void new (workflowTracing().OpenTelemetryInternalsInterceptor)().dispose(input, next);
        else next(input);
      },
    },
  ];
}

export const interceptors = (): WorkflowInterceptors => {
  const tracing = new TracingGate();
  return {
    // The metrics interceptor first: the order's own span (tracing) is inside its measurements.
    inbound: [new OrderMetricsInterceptor(), tracing.inbound],
    outbound: tracing.outbound,
    internals: tracing.internals,
  };
};
