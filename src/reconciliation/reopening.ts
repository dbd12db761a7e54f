/**
 * The reconciliation's verdict on a closed order, the provider's final status against the order's,
 * and the reopening it leads to when the provider contradicts the order: a new run of the order's
 * workflow, DISPUTED with the evidence (src/orders/reopen.ts, which the sweep uses too).
 */
import { log } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { disputedSearchAttributes, reopenedInput, reopenOrder } from '../orders';
import {
  finalStatuses,
  orderInputQuery,
  type OrderStatus,
  type OrderView,
  type ProviderStatus,
  type ReconciledDispute,
} from '../../contract/order';
import type { ItemOutcome, ReconciliationItem } from '../../contract/reconciliation';
import { asItStands, describeOrder } from './order-runs';

/**
 * The provider's answer `status` against a closed order's final view: agreed, or the order is
 * reopened as DISPUTED. The start is safe against a change since the order was read: the latest
 * run is described again right before it and must still be the one read, and the start fails if
 * any run of the order is open (conflict policy FAIL).
 */
export async function settle(
  temporal: Client,
  order: { workflowId: string; runId: string },
  view: OrderView,
  status: ProviderStatus,
  date: string,
  evidence: string,
  item: (outcome: ItemOutcome, evidence: string) => ReconciliationItem,
): Promise<ReconciliationItem> {
  const providerSays = `provider status ${status}`;
  const verdict = reconcileStatus(view, status);
  if (verdict.kind === 'overridden')
    return item('agreed', `${providerSays}, which an operator saw and forced past`);
  if (verdict.kind !== 'contradicted') {
    return verdict.kind === 'agreed'
      ? item('agreed', providerSays)
      : item('unreachable', `${providerSays}, not final`);
  }
  const run = temporal.workflow.getHandle(order.workflowId, order.runId);
  const input = await run.query(orderInputQuery);
  const latest = await describeOrder(temporal, order.workflowId);
  if (!latest) return item('unreachable', 'the order’s workflow is gone');
  // Changed since it was read: a decision needs a running order, so only another start can have.
  if (latest.runId !== order.runId || latest.status.name === 'RUNNING')
    return asItStands(temporal, order.workflowId, latest, item);
  const { started } = await reopenOrder(temporal, {
    workflowId: order.workflowId,
    latest,
    input: reopenedInput(
      input,
      view,
      { reconciled: { date, providerStatus: verdict.providerStatus, evidence } },
      // The closed run's own continuation (a watch, its event sequence) is over: only its last view goes on.
      'closed',
    ),
    // As the new run will publish them: listed DISPUTED, not final, from its start.
    searchAttributes: disputedSearchAttributes(latest),
  });
  if (!started) return item('open', 'the order was started again meanwhile');
  log.warn('reconciliation: order reopened as DISPUTED', {
    workflowId: order.workflowId,
    status: view.status,
    providerStatus: status,
  });
  return item('disputed', providerSays);
}

/**
 * The provider's final status against the order's: the same (agreed); another (contradicted, the
 * order reopens as DISPUTED) — partial fills included, as the watch reopens on them; or one an
 * operator saw and forced past (overridden: the decision stands, as the watch lets it stand).
 */
export function reconcileStatus(
  view: Pick<OrderView, 'status' | 'review'>,
  status: ProviderStatus,
):
  | { kind: 'agreed' | 'not-final' | 'overridden' }
  | { kind: 'contradicted'; providerStatus: ReconciledDispute['providerStatus'] } {
  if (!isFinalProviderStatus(status)) return { kind: 'not-final' };
  const ours: OrderStatus = view.status;
  const agrees =
    (status === 'FULFILLED' && ours === 'FULFILLED') ||
    (status === 'PARTIALLY_FILLED' && ours === 'PARTIALLY_FULFILLED') ||
    (status === 'REFUNDED' && (ours === 'REFUNDED' || ours === 'FAILED' || ours === 'CANCELLED'));
  if (agrees) return { kind: 'agreed' };
  const resolution = view.review?.resolution;
  if (resolution?.forcedPast !== undefined && resolution.provider?.status === status)
    return { kind: 'overridden' };
  // Ours PARTIALLY_FULFILLED against a FULFILLED answer has no dispute shape yet (decision is
  // FULFILLED or REFUNDED); it is reported agreed-in-part rather than reopened.
  if (ours === 'PARTIALLY_FULFILLED' && status === 'FULFILLED') return { kind: 'agreed' };
  if (!finalStatuses.includes(ours)) return { kind: 'not-final' };
  return { kind: 'contradicted', providerStatus: status };
}

function isFinalProviderStatus(status: ProviderStatus): status is ReconciledDispute['providerStatus'] {
  return status === 'FULFILLED' || status === 'REFUNDED' || status === 'PARTIALLY_FILLED';
}
