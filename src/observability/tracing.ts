/**
 * OpenTelemetry tracing for the API and the worker: on when an OTLP endpoint is configured
 * (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), off otherwise — then no
 * tracer provider is registered, no interceptor is installed and the API starts no trace, so
 * orders carry no trace header and their workflows build no spans (src/worker/interceptors.workflow.ts).
 *
 * One trace per request: the API's request span (./request-spans.ts), Temporal's client,
 * workflow and activity spans (@temporalio/interceptors-opentelemetry), and the provider's HTTP
 * calls (the undici instrumentation, which hooks undici's diagnostics channels and so needs no
 * load order).
 */
import type { Tracer } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Config } from '../config';

export interface Tracing {
  tracer: Tracer;
  /** Where the worker's workflow span sink hands the spans built inside workflows. */
  spanProcessor: SpanProcessor;
  resource: Resource;
  /** Exports what is buffered, then stops. */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  serviceName: string;
  exporter: SpanExporter;
  /** Batch (default) for production; tests export each span at once. */
  batch?: boolean;
}

/**
 * Registers the process-wide tracer provider (context manager, W3C trace-context propagation)
 * and the undici instrumentation. Once per process. The SDK is loaded here, so a process with
 * tracing off never loads it.
 */
export async function startTracing({
  serviceName,
  exporter,
  batch = true,
}: TracingOptions): Promise<Tracing> {
  const [{ registerInstrumentations }, { UndiciInstrumentation }, { Resource }, sdk, { NodeTracerProvider }] =
    await Promise.all([
      import('@opentelemetry/instrumentation'),
      import('@opentelemetry/instrumentation-undici'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/sdk-trace-node'),
    ]);
  const resource = new Resource({ 'service.name': serviceName });
  const spanProcessor = batch ? new sdk.BatchSpanProcessor(exporter) : new sdk.SimpleSpanProcessor(exporter);
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  const unregister = registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      // Only calls made inside a trace (an activity, an API request): not the worker's key check
      // at start, not the dev stack's health polls.
      new UndiciInstrumentation({ requireParentforSpans: true }),
    ],
  });
  return {
    tracer: provider.getTracer('topup-fulfillment'),
    spanProcessor,
    resource,
    shutdown: async () => {
      unregister();
      await provider.shutdown();
    },
  };
}

/** The OTLP/HTTP endpoint for traces, or undefined when tracing is off. */
export function tracesEndpoint(
  config: Pick<Config, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'>,
): string | undefined {
  if (config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = config.OTEL_EXPORTER_OTLP_ENDPOINT;
  // The specification's rule: the signal's path is appended to the shared endpoint.
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined;
}

/** Tracing exported over OTLP/HTTP when configured; undefined (off) otherwise. */
export async function tracingFromConfig(
  config: Config,
  defaultServiceName: string,
): Promise<Tracing | undefined> {
  const url = tracesEndpoint(config);
  if (!url) return undefined;
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
  // Headers (OTEL_EXPORTER_OTLP_HEADERS), timeouts and compression come from the standard
  // variables, which the exporter reads itself.
  return startTracing({
    serviceName: config.OTEL_SERVICE_NAME ?? defaultServiceName,
    exporter: new OTLPTraceExporter({ url }),
  });
}
