/**
 * The one way the service's code records a metric, whatever exports it: the API's prom-client
 * registry (./prometheus.ts) or the worker's Temporal Runtime meter (./temporal-meter.ts). Code
 * that records takes a `Metrics`, so tests and parts without an exporter pass `noMetrics`.
 */
import type { CounterDefinition, HistogramDefinition } from '../../contract/metrics';

export type Labels<L extends string> = Readonly<Record<L, string>>;

export interface Counter<L extends string> {
  add(labels: Labels<L>, value?: number): void;
}

export interface Histogram<L extends string> {
  /** `value` in the metric's unit (seconds for durations). */
  record(labels: Labels<L>, value: number): void;
}

export interface Metrics {
  counter<L extends string>(definition: CounterDefinition<L>): Counter<L>;
  histogram<L extends string>(definition: HistogramDefinition<L>): Histogram<L>;
}

/** Records nothing. */
export const noMetrics: Metrics = {
  counter: () => ({ add: () => {} }),
  histogram: () => ({ record: () => {} }),
};
