/**
 * The lifecycle every order goes through, whatever its type: send to the provider, poll on the
 * provider's schedule, end FULFILLED / REFUNDED / FAILED, or wait in NEEDS_REVIEW for an operator
 * (re-checking the provider now and then), and watch a decision the provider had not confirmed. A
 * small adapter per order type (adapters/) says how to send, check and read a fulfilled order.
 *
 * This file holds the handlers and the run loop; each phase lives in its own file: state.ts (the
 * order's state and transitions), send.ts, polling.ts, review.ts, watch.ts.
 */
import { allHandlersFinished, condition, setHandler } from '@temporalio/workflow';
import {
  decideReviewUpdate,
  finalStatuses,
  resolveReviewSignal,
  statusQuery,
  type OrderRequest,
  type OrderView,
} from '../contract';
import { handlerDescriptions } from '../ui-metadata';
import { continueAsNewIfDue } from './continue-as-new';
import { pollStep } from './polling';
import { onSignal, onUpdate, reviewStep, validateDecision } from './review';
import { submit } from './send';
import { Order } from './state';
import type { OrderAdapter, OrderWorkflow, ProviderCheck } from './types';
import { watchStep } from './watch';

export function defineOrderWorkflow<R extends OrderRequest, C extends ProviderCheck>(
  orderType: R['type'],
  adapter: OrderAdapter<R, C>,
): OrderWorkflow {
  return (input, review) => {
    const order = new Order(orderType, adapter, input, review);
    setHandler(statusQuery, () => order.view, { description: handlerDescriptions.status });
    setHandler(resolveReviewSignal, (decision) => onSignal(order, decision), {
      description: handlerDescriptions.resolveReview,
    });
    setHandler(decideReviewUpdate, (decision) => onUpdate(order, decision), {
      validator: (decision) => validateDecision(order, decision),
      description: handlerDescriptions.decideReview,
    });
    return run(order);
  };
}

async function run<R extends OrderRequest, C extends ProviderCheck>(order: Order<R, C>): Promise<OrderView> {
  order.publishStatus();
  for (;;) {
    if (order.view.status === 'ACCEPTED') {
      await submit(order);
      continue;
    }
    if (finalStatuses.includes(order.view.status) && !order.watch) break;
    await continueAsNewIfDue(order);
    if (order.watch) await watchStep(order, order.watch);
    else if (order.takesDecisions()) await reviewStep(order);
    else await pollStep(order);
  }
  await order.announcing;
  // Decisions still queued were answered when the order left review; let their handlers return.
  await condition(allHandlersFinished);
  return order.view;
}
