/**
 * A ledger row no order explains, checked by its own id (check-id): the provider's ref leads back
 * to an order of ours, which is then settled against it (src/reconciliation/reopening.ts), or to a
 * second top-up under an order's ref; otherwise the row is foreign.
 */
import { log } from '@temporalio/activity';
import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import {
  finalStatuses,
  orderWorkflowId,
  parseOrderWorkflowId,
  PROVIDER_REF_MEMO,
  workflowTypeByOrderType,
  type OrderStatus,
} from '../../contract/order';
import type { ItemOutcome, Mismatch, ReconciliationItem, TopUpSeen } from '../../contract/reconciliation';
import { describeRows } from './matching';
import { asItStands, closedView, describeOrder } from './order-runs';
import { askById, type IdAnswer, type ReconciliationProvider } from './provider-checks';
import { settle } from './reopening';

/**
 * A ledger row no order explains, checked by its own id: the provider's ref leads back to an
 * order of ours (one whose view never named this id: a cancelled order the provider debited
 * anyway), which is then settled against it; otherwise it is foreign.
 */
export async function recheckRow(
  temporal: Client,
  provider: ReconciliationProvider,
  mismatch: Mismatch,
  date: string,
): Promise<ReconciliationItem> {
  const row = mismatch.rows[0]!;
  const item = (
    outcome: ItemOutcome,
    evidence: string,
    order?: { workflowId: string; ref: string; client?: string; status?: OrderStatus },
  ): ReconciliationItem => ({
    kind: 'unexplained-row',
    ref: order?.ref ?? '',
    ...(order?.client !== undefined && { client: order.client }),
    workflowId: order?.workflowId ?? '',
    ...(order?.status !== undefined && { status: order.status }),
    row,
    outcome,
    evidence: `${evidence}; ledger: ${describeRows([row])}`,
  });
  if (row.objid === undefined) return item('unreachable', 'the row names no provider id');
  const answer = await askById(provider, mismatch.orderType, row.objid);
  if (answer.kind === 'unreachable') return item('unreachable', answer.detail);
  const providerSays = `the provider's ${mismatch.orderType} ${row.objid} is ${answer.status}`;
  const order = answer.ref !== undefined ? await orderByProviderRef(temporal, answer.ref) : undefined;
  if (!order) {
    const where = answer.ref !== undefined ? `ref ${answer.ref}` : 'no ref';
    return item(
      'foreign',
      `${providerSays} (${where}${answer.createdAt ? `, created ${answer.createdAt}` : ''}), no order of ours has it`,
    );
  }
  const parsed = parseOrderWorkflowId(order.workflowId);
  const ours = {
    workflowId: order.workflowId,
    ref: parsed?.ref ?? '',
    ...(parsed?.client && { client: parsed.client }),
  };
  const { latest } = order;
  if (latest.status.name === 'RUNNING')
    return asItStands(temporal, order.workflowId, latest, (o, e) => item(o, e, ours));
  const view = await closedView(temporal, order.workflowId, latest);
  if (!view || !finalStatuses.includes(view.status))
    return item('open', `the order's workflow closed without a final view (${latest.status.name})`, ours);
  const named = { ...ours, status: view.status };
  if (view.providerReference !== undefined && view.providerReference !== row.objid) {
    // Money sent twice for one order. Not reopened: the order's own top-up is what its status
    // speaks of; the second is a matter for operators and the provider (docs/operators.md).
    const own = await askById(provider, mismatch.orderType, view.providerReference);
    const secondTopUp = {
      order: seen(view.providerReference, own),
      second: seen(row.objid, answer),
    };
    log.warn('reconciliation: a second top-up under the ref of an order', {
      workflowId: order.workflowId,
      order: view.providerReference,
      second: row.objid,
    });
    return {
      ...item(
        'second-top-up',
        `a second top-up under the ref of order ${order.workflowId}: the provider's ` +
          `${mismatch.orderType} ${describeSeen(secondTopUp.second)}, the order's own ` +
          describeSeen(secondTopUp.order),
        named,
      ),
      secondTopUp,
    };
  }
  return settle(
    temporal,
    { workflowId: order.workflowId, runId: latest.runId },
    view,
    answer.status,
    date,
    `${providerSays}, an id the order never named; ledger: ${describeRows([row])}`,
    (o, e) => item(o, e, named),
  );
}

/**
 * The order a provider ref was sent for. Our refs are `<client>.<ref>.<hash>` (src/orders/
 * provider-ref.ts), recorded in the order's memo, which confirms the match; an order from before
 * them sent its own ref. A ref whose readable part was cut short leads nowhere: reported foreign.
 */
async function orderByProviderRef(
  temporal: Client,
  ref: string,
): Promise<{ workflowId: string; latest: WorkflowExecutionDescription } | undefined> {
  const candidates: { workflowId: string; sentAs?: string }[] = [];
  const parts = /^([^.]+)\.(.+)\.[0-9a-f]+$/.exec(ref);
  if (parts) {
    // The default client's orders have the unscoped ID.
    candidates.push(
      { workflowId: orderWorkflowId(parts[2]!, parts[1]!), sentAs: ref },
      { workflowId: orderWorkflowId(parts[2]!), sentAs: ref },
    );
  }
  candidates.push({ workflowId: orderWorkflowId(ref) });
  for (const { workflowId, sentAs } of candidates) {
    const latest = await describeOrder(temporal, workflowId);
    if (!latest || !Object.values<string>(workflowTypeByOrderType).includes(latest.type)) continue;
    const recorded = latest.memo?.[PROVIDER_REF_MEMO];
    if (recorded === sentAs) return { workflowId, latest };
  }
  return undefined;
}

/** A top-up as its check by id answered (its id alone when the provider could not be asked). */
function seen(providerReference: string, answer: IdAnswer): TopUpSeen {
  if (answer.kind === 'unreachable') return { providerReference };
  return {
    providerReference,
    status: answer.status,
    ...(answer.amount !== undefined && { amount: answer.amount }),
  };
}

function describeSeen(topUp: TopUpSeen): string {
  const amount = topUp.amount === undefined ? 'amount unknown' : `${topUp.amount} DZD`;
  return `${topUp.providerReference} (${topUp.status ?? 'status unknown'}, ${amount})`;
}
