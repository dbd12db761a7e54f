/**
 * The intake API's metrics (contract/metrics.ts): requests by route and status, orders
 * accepted, and the review backlog read from Temporal visibility when Prometheus scrapes.
 */
import type { Client } from '@temporalio/client';
import type { RequestHandler } from 'express';
import { metricCatalog } from '../../contract/metrics';
import type { Metrics } from '../observability';
import type { GaugeSample, PrometheusMetrics } from '../observability';
import { AcceptedAtAttribute, ReviewSinceAttribute } from '../../contract/order';
import { orderTypes } from '../../contract/schemas';
import { matchedRoute } from '../observability';
import type { AccountReport } from '../provider-account';
import { operatorNames } from '../provider';

/** Counts each answered request under its route pattern; unmatched paths share one label value. */
export function requestMetrics(metrics: Metrics): RequestHandler {
  const requests = metrics.counter(metricCatalog.apiRequests);
  const duration = metrics.histogram(metricCatalog.apiRequestDuration);
  return (req, res, next) => {
    const started = performance.now();
    res.once('close', () => {
      const labels = {
        method: req.method,
        // The pattern (`/v1/orders/:ref`), never the path: a ref must not become a label value.
        route: matchedRoute(req) ?? '(unmatched)',
      };
      requests.add({ ...labels, status: String(res.statusCode) });
      duration.record(labels, (performance.now() - started) / 1000);
    });
    next();
  };
}

/** Past this many orders in review the oldest is looked for among the first this many listed only. */
const MAX_REVIEW_ROWS_SCANNED = 1_000;

interface ReviewSnapshot {
  byType: GaugeSample<'order_type'>[];
  oldestAgeSeconds: number;
}

/**
 * The review backlog gauges: one count per order type and one listing (for the oldest), on this
 * API's task queue only, refreshed at most every `ttlMs` whatever the number of scrapers or API
 * instances asking. A failed refresh leaves the gauges empty for that scrape.
 */
export function registerReviewGauges(
  metrics: PrometheusMetrics,
  {
    client,
    taskQueue,
    ttlMs,
    now = Date.now,
  }: { client: Client; taskQueue: string; ttlMs: number; now?: () => number },
): void {
  const base = `OrderStatus="NEEDS_REVIEW" AND ExecutionStatus="Running" AND TaskQueue=${JSON.stringify(taskQueue)}`;
  let cached: { at: number; snapshot: Promise<ReviewSnapshot> } | undefined;

  async function read(): Promise<ReviewSnapshot> {
    const byType = await Promise.all(
      orderTypes.map(async (type) => ({
        labels: { order_type: type },
        value: (await client.workflow.count(`${base} AND OrderType=${JSON.stringify(type)}`)).count,
      })),
    );
    let oldest: number | undefined;
    let scanned = 0;
    for await (const execution of client.workflow.list({ query: base, pageSize: 200 })) {
      const attributes = execution.typedSearchAttributes;
      const since =
        attributes.get(ReviewSinceAttribute) ?? attributes.get(AcceptedAtAttribute) ?? execution.startTime;
      oldest = Math.min(oldest ?? Infinity, since.getTime());
      if (++scanned >= MAX_REVIEW_ROWS_SCANNED) break;
    }
    return { byType, oldestAgeSeconds: oldest === undefined ? 0 : Math.max(0, (now() - oldest) / 1000) };
  }

  function snapshot(): Promise<ReviewSnapshot> {
    if (!cached || now() - cached.at >= ttlMs) {
      const pending = read();
      cached = { at: now(), snapshot: pending };
      // A failure is not cached: the next scrape tries again.
      pending.catch(() => {
        if (cached?.snapshot === pending) cached = undefined;
      });
    }
    return cached.snapshot;
  }

  metrics.gauge(metricCatalog.reviewBacklog, async () => (await snapshot()).byType);
  metrics.gauge(metricCatalog.reviewOldestAge, async () => [
    { labels: {}, value: (await snapshot()).oldestAgeSeconds },
  ]);
}

/** The provider account's gauges: orders held by reason, each operator's and the API's state, the balance. */
export function registerAccountGauges(
  metrics: PrometheusMetrics,
  report: () => Promise<AccountReport>,
): void {
  metrics.gauge(metricCatalog.ordersHeld, async () => {
    const { held } = await report();
    return held
      ? (['balance', 'operator'] as const).map((reason) => ({ labels: { reason }, value: held[reason] }))
      : [];
  });
  // Every operator, 0 when none is held for it: a series that drops to 0 rather than vanishing.
  metrics.gauge(metricCatalog.ordersHeldForOperator, async () => {
    const { held } = await report();
    return held
      ? operatorNames.map((operator) => ({ labels: { operator }, value: held.byOperator[operator] ?? 0 }))
      : [];
  });
  metrics.gauge(metricCatalog.providerOperatorUp, async () =>
    Object.entries((await report()).operators ?? {}).map(([operator, state]) => ({
      labels: { operator },
      value: state === 'up' ? 1 : 0,
    })),
  );
  metrics.gauge(metricCatalog.providerApiUp, async () => {
    const { api } = await report();
    return api === undefined ? [] : [{ labels: {}, value: api === 'ok' ? 1 : 0 }];
  });
  metrics.gauge(metricCatalog.providerBalance, async () => {
    const { balance } = await report();
    return balance === undefined ? [] : [{ labels: {}, value: balance }];
  });
}
