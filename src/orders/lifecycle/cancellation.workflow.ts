/**
 * What a Temporal cancellation (Temporal UI's Request Cancellation, `temporal workflow cancel`)
 * does to an order (docs/operators.md "What Temporal's buttons do to an order"). Money may already
 * be at the provider, so a cancel request never interrupts the lifecycle: the run loop works in a
 * non-cancellable scope (workflow.ts), and the request is recorded and acted on here.
 *
 * - Before anything may have reached the provider: the order ends CANCELLED at its next send
 *   point, nothing sent. A send that may be in flight (the first, local send) counts as sent.
 * - After the send: the order carries on to the provider's outcome; the timeline says when it
 *   was asked (who asked is the history's WorkflowExecutionCancelRequested `identity`).
 * - In review or disputed: the order keeps waiting and stays decidable.
 */
import { log } from '@temporalio/workflow';
import { finalStatuses, type OrderRequest } from '../../../contract/order';
import type { Order } from './state.workflow';
import type { ProviderCheck } from './types.workflow';

export function onCancelRequested<R extends OrderRequest, C extends ProviderCheck>(o: Order<R, C>): void {
  const at = new Date().toISOString();
  o.cancelRequestedAt = at;
  const { status } = o.view;
  log.warn('cancellation requested', { status });
  const asked = `Cancellation requested in Temporal at ${at}`;
  if (status === 'HELD') {
    o.note(`${asked}: held, nothing was sent; it ends CANCELLED`);
  } else if (status === 'ACCEPTED') {
    o.note(`${asked}: nothing more is sent; a send that may be in flight is followed to its outcome`);
  } else if (o.takesDecisions()) {
    o.note(`${asked}: not cancelled, the order waits for an operator's decision`);
  } else if (finalStatuses.includes(status)) {
    o.note(`${asked}: not cancelled, the order is already ${status}`);
  } else {
    o.note(`${asked}: not cancelled, the provider may have the order; following it to its outcome`);
  }
}

/**
 * At a point where the order would send (the provider certainly does not have it): ends the order
 * CANCELLED if cancellation was requested, and says whether it did.
 */
export function cancelledBeforeSending<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  nothingAtTheProvider: string,
): boolean {
  if (o.cancelRequestedAt === undefined) return false;
  o.finish('CANCELLED', `Cancelled as requested: ${nothingAtTheProvider}`, {});
  return true;
}
