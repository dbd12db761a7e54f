/**
 * The worker's metrics through Temporal's Runtime metric meter, so they share one Prometheus
 * endpoint (WORKER_METRICS_ADDRESS) with the SDK's own worker metrics (temporal_*).
 */
import type { MetricMeter } from '@temporalio/common';
import { metricCatalog, type CounterDefinition, type HistogramDefinition } from '../../contract/metrics';
import type { Counter, Histogram, Metrics } from './metrics';

export function temporalMetrics(meter: MetricMeter): Metrics {
  const made = new Map<string, unknown>();
  const once = <T>(name: string, make: () => T): T => {
    if (!made.has(name)) made.set(name, make());
    return made.get(name) as T;
  };
  return {
    counter<L extends string>(definition: CounterDefinition<L>): Counter<L> {
      const metric = once(definition.name, () =>
        meter.createCounter(definition.name, undefined, definition.help),
      );
      return { add: (labels, value = 1) => metric.add(value, labels) };
    },
    histogram<L extends string>(definition: HistogramDefinition<L>): Histogram<L> {
      const metric = once(definition.name, () =>
        meter.createHistogram(definition.name, 'float', 's', definition.help),
      );
      return { record: (labels, value) => metric.record(value, labels) };
    },
  };
}

/**
 * The catalog's bucket bounds for Core's Prometheus exporter, which otherwise uses its own
 * defaults (sized for milliseconds) for every histogram it does not know.
 */
export function histogramBucketOverrides(): Record<string, number[]> {
  return Object.fromEntries(
    Object.values(metricCatalog)
      .filter((definition) => definition.kind === 'histogram')
      .map((definition) => [definition.name, [...definition.buckets]]),
  );
}
