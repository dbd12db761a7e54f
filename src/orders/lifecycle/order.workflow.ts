/**
 * The lifecycle every order goes through, whatever its type: send to the provider, poll on the
 * provider's schedule, end FULFILLED / REFUNDED / FAILED, or wait in NEEDS_REVIEW for an operator
 * (re-checking the provider now and then), and watch a decision the provider had not confirmed. A
 * small adapter per order type (adapters/) says how to send, check and read a fulfilled order.
 *
 * This file holds the handlers and the run loop; each phase lives in its own file: state.ts (the
 * order's state and transitions), send.ts, polling.ts, review.ts, watch.ts.
 */
import { allHandlersFinished, CancellationScope, condition, setHandler } from '@temporalio/workflow';
import {
  decideReviewUpdate,
  finalStatuses,
  orderInputQuery,
  resolveReviewSignal,
  statusQuery,
  type OrderRequest,
  type OrderView,
} from '../../../contract/order';
import { resumeHeldSignal } from '../../../contract/account';
import { handlerDescriptions } from '../../../contract/ui-metadata';
import { onCancelRequested } from './cancellation.workflow';
import { continueAsNewIfDue } from './continue-as-new.workflow';
import { pollStep } from './polling.workflow';
import { onSignal, onUpdate, reviewStep, validateDecision } from './review.workflow';
import { submit } from './send.workflow';
import { Order } from './state.workflow';
import type { OrderAdapter, OrderWorkflow, ProviderCheck } from './types.workflow';
import { reopenReconciled, watchStep } from './watch.workflow';

export function defineOrderWorkflow<R extends OrderRequest, C extends ProviderCheck>(
  orderType: R['type'],
  adapter: OrderAdapter<R, C>,
): OrderWorkflow {
  return (input, review) => {
    const order = new Order(orderType, adapter, input, review);
    setHandler(statusQuery, () => order.view, { description: handlerDescriptions.status });
    // The sweep reads a closed run's input with it to resume the order (order-sweep.ts).
    setHandler(orderInputQuery, () => order.input);
    // The account workflow lets a HELD order go (hold.ts).
    setHandler(resumeHeldSignal, () => void (order.resumeRequested = true));
    setHandler(resolveReviewSignal, (decision) => onSignal(order, decision), {
      description: handlerDescriptions.resolveReview,
    });
    // Its handler waits for the run loop: a cancel request must not end that wait (cancellation.ts).
    setHandler(
      decideReviewUpdate,
      (decision) => CancellationScope.nonCancellable(() => onUpdate(order, decision)),
      {
        validator: (decision) => validateDecision(order, decision),
        description: handlerDescriptions.decideReview,
      },
    );
    // A cancel request never interrupts an order (money may be at the provider): recorded and
    // acted on by the lifecycle itself (cancellation.ts).
    CancellationScope.current().cancelRequested.catch(() => onCancelRequested(order));
    return CancellationScope.nonCancellable(() => run(order));
  };
}

async function run<R extends OrderRequest, C extends ProviderCheck>(order: Order<R, C>): Promise<OrderView> {
  order.publishStatus();
  const { reconciled } = order.input;
  if (reconciled && finalStatuses.includes(order.view.status)) reopenReconciled(order, reconciled);
  for (;;) {
    // HELD here only in a run the sweep resumed during a hold (its run was terminated): back to
    // the send, whose settle rules look the ref up before anything is sent and hold it again while
    // the account cannot take it.
    if (order.view.status === 'ACCEPTED' || order.view.status === 'HELD') {
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
