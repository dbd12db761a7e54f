/**
 * Metrics of what an order makes of operator decisions, emitted from the lifecycle where it knows
 * (the interceptors see a signal arrive, not what came of it). Through the workflow's
 * `metricMeter`, which the SDK drops while replaying: no command, no history event, and an
 * outcome is counted once, when it first happens.
 */
import type { MetricCounter } from '@temporalio/common';
import { metricMeter } from '@temporalio/workflow';
import { metricCatalog } from '../../../contract/metrics';
import type { DecisionOutcome, DecisionRefusal, OrderType } from '../../../contract/order';

let counters: { outcomes: MetricCounter; disputes: MetricCounter } | undefined;

/** Created on first use, inside the workflow's context (the meter belongs to it). */
function meters(): NonNullable<typeof counters> {
  counters ??= {
    outcomes: metricMeter.createCounter(
      metricCatalog.reviewDecisionOutcomes.name,
      undefined,
      metricCatalog.reviewDecisionOutcomes.help,
    ),
    disputes: metricMeter.createCounter(
      metricCatalog.ordersDisputed.name,
      undefined,
      metricCatalog.ordersDisputed.help,
    ),
  };
  return counters;
}

export function countDecisionOutcome(
  orderType: OrderType,
  decision: string,
  outcome: DecisionOutcome['outcome'],
  refusal: DecisionRefusal['kind'] | undefined,
): void {
  meters().outcomes.add(1, { order_type: orderType, decision, outcome, refusal: refusal ?? 'none' });
}

export function countDispute(orderType: OrderType, decision: 'FULFILLED' | 'REFUNDED'): void {
  meters().disputes.add(1, { order_type: orderType, decision });
}
