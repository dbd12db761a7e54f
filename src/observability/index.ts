/**
 * src/observability/ (metrics and tracing): its Node-side surface. Other folders import from here,
 * never from its files (.dependency-cruiser.cjs).
 */
export { matchedRoute } from './matched-route';
export { type Counter, type Metrics, noMetrics } from './metrics';
export { serveMetrics } from './metrics-server';
export { type GaugeSample, PrometheusMetrics } from './prometheus';
export { providerCallMetrics } from './provider-metrics';
export { requestSpans } from './request-spans';
export { histogramBucketOverrides, temporalMetrics } from './temporal-meter';
export { type Tracing, tracingFromConfig } from './tracing';
