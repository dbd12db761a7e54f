/**
 * The order lifecycle's legal status moves: the one table `Order.transition()` checks
 * (state.workflow.ts) and `npm run docs:lifecycle` draws into docs/contributors.md.
 *
 * A move not in the table throws a plain Error: the workflow task fails and Temporal retries it
 * (the order waits, visibly, in Temporal UI) instead of the order taking a wrong status. A move to
 * the status the order already has is not in the table either: the code never makes one (polling
 * and a look-up skip an unchanged status, a second hold only notes), so one is a bug.
 *
 * A run does not always start at ACCEPTED (`runStarts`): a continued or resumed run starts from
 * its carried view's status, and its first move is checked from there.
 *
 * Deterministic workflow code: no I/O.
 */
import type { OrderStatus } from '../../../contract/order';

export interface LifecycleMove {
  from: OrderStatus;
  to: OrderStatus;
  /** What makes the move, short: the diagram's edge label. */
  by: string;
}

const open = ['SUBMITTED', 'PROCESSING', 'QUEUED'] as const;
const settled = ['FULFILLED', 'PARTIALLY_FULFILLED', 'REFUNDED'] as const;
const final = [...settled, 'FAILED', 'CANCELLED'] as const;
const beforeSend = ['ACCEPTED', 'HELD'] as const;
const review = ['NEEDS_REVIEW', 'DISPUTED'] as const;

function moves(from: readonly OrderStatus[], to: readonly OrderStatus[], by: string): LifecycleMove[] {
  return from.flatMap((f) => to.filter((t) => t !== f).map((t) => ({ from: f, to: t, by })));
}

/** Every legal move, in the order the diagram draws them. */
export const lifecycleMoves: readonly LifecycleMove[] = [
  // send.workflow.ts, hold.workflow.ts, cancellation.workflow.ts: nothing sent yet.
  ...moves(['ACCEPTED'], ['HELD'], 'account cannot take it'),
  ...moves(beforeSend, ['SUBMITTED'], 'sent / found at the provider'),
  ...moves(beforeSend, ['FAILED'], 'refused / unreachable / held too long'),
  ...moves(beforeSend, ['CANCELLED'], 'cancel requested, nothing sent'),
  ...moves(beforeSend, ['NEEDS_REVIEW'], 'send outcome unclear'),
  // polling.workflow.ts, state.workflow.ts observe(): the provider's answer leads, also backwards.
  ...moves(open, open, "provider's answer"),
  ...moves(open, settled, "provider's final answer"),
  ...moves(open, ['NEEDS_REVIEW'], 'stuck / not this order'),
  // review.workflow.ts: a decision, a recheck, or a gift card's orderId that is still open.
  ...moves(review, settled, 'decision / recheck'),
  ...moves(review, open, "operator's orderId still open"),
  // watch.workflow.ts (a decision contradicted) and reopenReconciled (the reconciliation).
  ...moves(final, ['DISPUTED'], 'provider contradicts it'),
];

/** Where a run starts: a new order at ACCEPTED; any later run from the view it carries. */
export const runStarts: readonly { status: OrderStatus | 'carried'; by: string }[] = [
  { status: 'ACCEPTED', by: 'a new order (the API starts its workflow)' },
  {
    status: 'carried',
    by:
      "continue-as-new (long history, review's own run, new worker version: any status but a final one " +
      'without a watch), the sweep (a closed run without a final status: its last view, often HELD or an ' +
      'open status), the reconciliation (a final status, moved to DISPUTED at once)',
  },
];

const legal = new Set(lifecycleMoves.map((m) => `${m.from}>${m.to}`));

export function isLegalMove(from: OrderStatus, to: OrderStatus): boolean {
  return legal.has(`${from}>${to}`);
}

/**
 * Throws a plain Error (not an ApplicationFailure) on a move not in the table: in a workflow that
 * fails the workflow task, which Temporal retries, so the order never records the wrong status.
 */
export function assertLegalMove(from: OrderStatus, to: OrderStatus): void {
  if (!isLegalMove(from, to)) {
    throw new Error(`illegal move ${from} → ${to}: not in the lifecycle's table (transitions.workflow.ts)`);
  }
}
