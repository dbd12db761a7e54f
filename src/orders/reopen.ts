/**
 * Reopening an order: a new run of its workflow under the same workflow ID, after its latest run
 * closed, carrying the closed run's input and last view. Two callers, each marking the new run:
 * - the sweep (src/orders/sweep.activities.ts) `resumed` a run that closed without a final status;
 * - the nightly reconciliation (src/reconciliation/) `reconciled` a final order the provider now
 *   contradicts: the new run reopens it as DISPUTED.
 *
 * The start is safe against another one: the closed run's ID is taken again for this one start
 * (reuse ALLOW_DUPLICATE), and it fails if any run of the order is open (conflict policy FAIL).
 */
import {
  WorkflowExecutionAlreadyStartedError,
  type Client,
  type WorkflowExecutionDescription,
} from '@temporalio/client';
import type { SearchAttributePair, TypedSearchAttributes } from '@temporalio/common';
import {
  AcceptedAtAttribute,
  defaultOrderTimings,
  OrderClientAttribute,
  OrderStatusAttribute,
  OrderTypeAttribute,
  ReviewSinceAttribute,
  searchAttributeDefinitions,
  type OrderInput,
  type OrderView,
  type ReconciledDispute,
} from '../../contract/order';

/** What the new run is marked as: resumed by the sweep, or reopened by the reconciliation. */
export type ReopenMark = { resumed: NonNullable<OrderInput['resumed']> } | { reconciled: ReconciledDispute };

/**
 * What becomes of the closed run's continuation (`OrderInput.continued`):
 * - `carried`: it goes on (its watch, its webhook event sequence), with the last view;
 * - `closed`: it is over, only the last view goes on; webhook events are numbered after the view's
 *   timeline (the closed run's last sequence is not in its view; each announced event has its
 *   timeline entry), so the delivery workflow does not take them for repeats.
 */
export type ClosedContinuation = 'carried' | 'closed';

/**
 * The closed run's input with its last view, marked: the new run starts where the closed one was,
 * looks the order up at once, with a deadline of a whole order from now (the closed run's deadline
 * is not in its view). Without a view (a closed run whose replay failed) no continuation is carried.
 * The other mark is dropped: a reconciliation's dispute is reopened once (a resumed run carries its
 * view, not the order to reopen again), and a reopened run is not resumed.
 */
export function reopenedInput(
  input: OrderInput,
  view: OrderView | undefined,
  mark: ReopenMark,
  continuation: ClosedContinuation,
): OrderInput {
  const { continued, ...marked } = input;
  // The run's own mark, if the input had one, is replaced in place; the other is dropped.
  const rest: Omit<OrderInput, 'continued'> = { ...marked };
  if ('resumed' in mark) delete rest.reconciled;
  else delete rest.resumed;
  const { deadlineMs } = { ...defaultOrderTimings[input.request.type], ...input.timings };
  if (!view) return { ...rest, ...mark };
  return {
    ...rest,
    ...mark,
    continued:
      continuation === 'carried'
        ? { ...continued, view, deadlineAt: Date.now() + deadlineMs, nextCheckMs: 0 }
        : { view, deadlineAt: Date.now() + deadlineMs, nextCheckMs: 0, eventSequence: view.timeline.length },
  };
}

/**
 * The closed run's search attributes the service owns (the order's type, client, status …), none
 * of Temporal's: the closed run's patch versions (`TemporalChangeVersion`) are not the new run's.
 */
export function ownSearchAttributes(attributes: TypedSearchAttributes): SearchAttributePair[] {
  return attributes.getAll().filter((pair) => Object.hasOwn(searchAttributeDefinitions, pair.key.name));
}

/**
 * The search attributes a disputed order's new run starts with: the service's own (none of
 * Temporal's, such as a closed run's worker version or patch versions), as its first task will
 * publish them — DISPUTED, in review since now, no longer completed — so no list sees it final in between.
 */
export function disputedSearchAttributes(latest: WorkflowExecutionDescription): SearchAttributePair[] {
  const pairs: SearchAttributePair[] = [
    { key: OrderStatusAttribute, value: 'DISPUTED' },
    { key: ReviewSinceAttribute, value: new Date() },
  ];
  const type = latest.typedSearchAttributes.get(OrderTypeAttribute);
  if (type !== undefined) pairs.push({ key: OrderTypeAttribute, value: type });
  const owner = latest.typedSearchAttributes.get(OrderClientAttribute);
  if (owner !== undefined) pairs.push({ key: OrderClientAttribute, value: owner });
  const accepted = latest.typedSearchAttributes.get(AcceptedAtAttribute);
  if (accepted !== undefined) pairs.push({ key: AcceptedAtAttribute, value: accepted });
  return pairs;
}

/** One reopening: the order, its closed latest run, what the new run starts with. */
export interface Reopening {
  workflowId: string;
  /** The order's latest run, closed, as described right before the start. */
  latest: WorkflowExecutionDescription;
  /** The new run's first argument (`reopenedInput`). */
  input: OrderInput;
  /** The new run's search attributes (`ownSearchAttributes`, `disputedSearchAttributes`). */
  searchAttributes: SearchAttributePair[];
}

/**
 * Starts the order's new run on the closed run's workflow type, task queue and memo. `started`
 * false: another run of the order was started meanwhile (and is open), nothing was started.
 */
export async function reopenOrder(temporal: Client, reopening: Reopening): Promise<{ started: boolean }> {
  const { workflowId, latest } = reopening;
  try {
    await temporal.workflow.start(latest.type, {
      workflowId,
      taskQueue: latest.taskQueue,
      args: [reopening.input],
      // This one start only: the closed run's ID is taken again for the new run.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      // Never beside a run another sweep or reconciliation has just started.
      workflowIdConflictPolicy: 'FAIL',
      memo: latest.memo,
      typedSearchAttributes: reopening.searchAttributes,
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return { started: false };
    throw err;
  }
  return { started: true };
}
