/** Provider calls as metrics: the ProviderClient's `onCall` hook, in the worker and in the API. */
import type { ProviderCallRecord } from '../provider';
import { metricCatalog } from '../../contract/metrics';
import type { Metrics } from './metrics';

export function providerCallMetrics(metrics: Metrics): (call: ProviderCallRecord) => void {
  const calls = metrics.counter(metricCatalog.providerCalls);
  const duration = metrics.histogram(metricCatalog.providerCallDuration);
  return ({ operation, outcome, durationMs }) => {
    const labels = { operation, outcome };
    calls.add(labels);
    duration.record(labels, durationMs / 1000);
  };
}
