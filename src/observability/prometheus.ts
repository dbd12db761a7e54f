/**
 * Metrics of the intake API in a prom-client registry, served on the API's metrics listener
 * (API_METRICS_ADDRESS, see ./metrics-server.ts): the catalog's counters and histograms, gauges
 * computed when scraped, and Node's process metrics.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import {
  exportedName,
  type CounterDefinition,
  type GaugeDefinition,
  type HistogramDefinition,
} from '../../contract/metrics';
import type { Counter as CounterPort, Histogram as HistogramPort, Labels, Metrics } from './metrics';

export interface GaugeSample<L extends string> {
  labels: Labels<L>;
  value: number;
}

export class PrometheusMetrics implements Metrics {
  readonly registry = new Registry();
  // One prom-client metric per name: a second registration of the same name would throw.
  readonly #made = new Map<string, unknown>();

  constructor({ processMetrics = true }: { processMetrics?: boolean } = {}) {
    // Event-loop lag, heap, GC, file descriptors: topup_api_process_* and topup_api_nodejs_*.
    if (processMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'topup_api_' });
  }

  counter<L extends string>(definition: CounterDefinition<L>): CounterPort<L> {
    const metric = this.#once(
      definition.name,
      () =>
        new Counter<L>({
          name: exportedName(definition),
          help: definition.help,
          labelNames: definition.labels,
          registers: [this.registry],
        }),
    );
    return { add: (labels, value = 1) => metric.inc(labels as Partial<Record<L, string>>, value) };
  }

  histogram<L extends string>(definition: HistogramDefinition<L>): HistogramPort<L> {
    const metric = this.#once(
      definition.name,
      () =>
        new Histogram<L>({
          name: exportedName(definition),
          help: definition.help,
          labelNames: definition.labels,
          buckets: [...definition.buckets],
          registers: [this.registry],
        }),
    );
    return { record: (labels, value) => metric.observe(labels as Partial<Record<L, string>>, value) };
  }

  /**
   * A gauge whose samples `read` computes when Prometheus scrapes (it may cache). A failed read
   * leaves the gauge without samples for that scrape: no value is better than a stale one passed
   * off as current; Prometheus' `absent()` can alert on it.
   */
  gauge<L extends string>(definition: GaugeDefinition<L>, read: () => Promise<GaugeSample<L>[]>): void {
    this.#once(
      definition.name,
      () =>
        new Gauge<L>({
          name: exportedName(definition),
          help: definition.help,
          labelNames: definition.labels,
          registers: [this.registry],
          async collect() {
            this.reset();
            let samples: GaugeSample<L>[];
            try {
              samples = await read();
            } catch {
              return;
            }
            for (const { labels, value } of samples) this.set(labels as Partial<Record<L, string>>, value);
          },
        }),
    );
  }

  /** The text a Prometheus scrape gets. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  #once<T>(name: string, make: () => T): T {
    if (!this.#made.has(name)) this.#made.set(name, make());
    return this.#made.get(name) as T;
  }
}
