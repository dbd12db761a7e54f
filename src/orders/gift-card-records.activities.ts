/**
 * A gift-card placement whose answer was lost, looked for in the provider's records
 * (docs/contributors.md "A lost placement, found in the provider's records"). placeOrder carries no
 * ref of ours, but the provider lists the account's gift-card orders (GET /v3/gift-cards/list,
 * `{_id, status, quantity, price_per_card, product, type, time}`, paged, `from`/`to`): an order of
 * the same product, type and quantity committed inside the placement's window may be ours.
 *
 * It is ours only when nothing else can be: exactly one such order that no other order of ours
 * holds (its provider order id: the ProviderOrderId search attribute, or that order's view), and no
 * other order of ours of the same product, type and quantity that may have placed in the window
 * without knowing its order id (a placement in flight, or one whose answer was lost too). Two
 * candidates, or one and such a rival: ambiguous, never a guess. None: not shown yet — the provider
 * documents no bound on its list's lag, so the workflow never reads "none" as "never placed".
 *
 * Evidence carries ids, times, quantities and amounts: never card codes.
 */
import { Context } from '@temporalio/activity';
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import type { ProviderClient } from '../provider';
import { listLimits, type GiftCardOrderCheck } from '../provider';
import {
  AcceptedAtAttribute,
  OrderStatusAttribute,
  ProviderOrderIdAttribute,
  ReviewSinceAttribute,
  statusQuery,
  workflowTypeByOrderType,
  type OrderView,
} from '../../contract/order';
import type { GiftCardRequest } from '../../contract/schemas';
import { toTemporalFailure } from '../provider';
import type {
  OtherOrder,
  PlacementCandidate,
  PlacementSearch,
  PlacementSearchInput,
} from '../../contract/placement-records';

export type { PlacementSearch, PlacementSearchInput } from '../../contract/placement-records';

/**
 * The memo key of the request's figures, set at intake (src/orders/figures.ts FIGURES_MEMO, which
 * activities may not import; test/orders/placement-records.test.ts checks the two agree).
 */
export const FIGURES_MEMO_KEY = 'figures';

/** More pages than this in one window is not a lost placement's search any more: ambiguous. */
const MAX_PAGES = 20;

export type PlacementRecordsProvider = Pick<ProviderClient, 'listGiftCardOrders'>;

/** The product or type field of a list row: documented as an id, accepted as `{id}` / `{_id}` too. */
function idOf(value: unknown): string | undefined {
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  if (value && typeof value === 'object') {
    const { id, _id } = value as { id?: unknown; _id?: unknown };
    if (typeof id === 'string') return id;
    if (typeof _id === 'string') return _id;
  }
  return undefined;
}

/** The rows of the list that match the placement: product, type, quantity, and a time inside the window. */
export function matchingRows(rows: GiftCardOrderCheck[], input: PlacementSearchInput): PlacementCandidate[] {
  const { request, from, to } = input;
  const candidates: PlacementCandidate[] = [];
  for (const row of rows) {
    if (!row._id) continue;
    if (idOf(row.product) !== request.productId || idOf(row.type) !== request.typeId) continue;
    if (row.quantity !== request.quantity) continue;
    const at = row.time === undefined ? NaN : Date.parse(row.time);
    // A row without a readable time is in the window the provider filtered on.
    if (!Number.isNaN(at) && (at < from || at > to)) continue;
    candidates.push({
      orderId: row._id,
      status: row.status,
      ...(row.time !== undefined && { time: row.time }),
      ...(row.quantity !== undefined && { quantity: row.quantity }),
      ...(row.price_per_card !== undefined && { pricePerCard: row.price_per_card }),
    });
  }
  return candidates;
}

/**
 * May this other order of ours have committed a placement of the same item inside the window
 * without knowing its order id? Certainly not when it holds one, is of another item, ended with
 * nothing placed (FAILED, CANCELLED), was accepted after the window, or went to review more than a
 * settle window before it. An item not known yet (`sameItem` undefined) may be the same.
 */
export function mayBeRival(other: OtherOrder, input: PlacementSearchInput): boolean {
  if (other.unreadable) return true;
  if (other.sameItem === false || other.providerReference !== undefined) return false;
  if (other.status === 'FAILED' || other.status === 'CANCELLED') return false;
  if (other.acceptedAt !== undefined && Date.parse(other.acceptedAt) > input.to) return false;
  if (other.reviewSince !== undefined && Date.parse(other.reviewSince) + input.settleMs < input.from)
    return false;
  return true;
}

/** The verdict: one certain candidate, none, or ambiguous (pure: the unit tests' subject). */
export function judgePlacement(
  candidates: PlacementCandidate[],
  others: OtherOrder[],
  input: PlacementSearchInput,
): PlacementSearch {
  const claimed = new Set(others.flatMap((o) => (o.providerReference ? [o.providerReference] : [])));
  const open = candidates.filter((c) => !claimed.has(c.orderId));
  if (open.length === 0) {
    return { kind: 'none', claimedByOthers: candidates.map((c) => c.orderId) };
  }
  const rivals = others.filter((o) => mayBeRival(o, input)).map((o) => o.ref);
  if (open.length === 1 && rivals.length === 0) return { kind: 'found', candidate: open[0]! };
  return { kind: 'ambiguous', candidates: open, rivals };
}

export function createGiftCardRecordsActivities(
  provider: PlacementRecordsProvider | undefined,
  temporal: Client | undefined,
) {
  return {
    /**
     * Looks the lost placement up in the provider's gift-card list (every page of the window) and,
     * when some order matches, reads our other gift-card orders of that time (visibility, then each
     * one's view) to see which are claimed and which could be rivals. Fails (retried) when the
     * provider or Temporal cannot be read: a search that could not finish decides nothing.
     */
    async findGiftCardPlacement(input: PlacementSearchInput): Promise<PlacementSearch> {
      if (!provider) throw new Error('this worker has no provider client for the records search');
      const rows: GiftCardOrderCheck[] = [];
      const range = { from: new Date(input.from).toISOString(), to: new Date(input.to).toISOString() };
      for (let page = 1; ; page++) {
        if (page > MAX_PAGES) {
          return {
            kind: 'ambiguous',
            candidates: matchingRows(rows, input),
            rivals: ['(the list has too many pages)'],
          };
        }
        let answer;
        try {
          answer = await provider.listGiftCardOrders({ page, pageSize: listLimits.maxPageSize, range });
        } catch (err) {
          throw toTemporalFailure(err);
        }
        rows.push(...answer.items);
        Context.current().heartbeat({ page });
        if (page >= (answer.pagination?.totalPages ?? 1) || answer.items.length === 0) break;
      }
      const candidates = matchingRows(rows, input);
      if (candidates.length === 0) return { kind: 'none', claimedByOthers: [] };
      if (!temporal) throw new Error('this worker has no Temporal client to read the other orders');
      const self = Context.current().info.workflowExecution?.workflowId ?? '';
      const others = await readOtherOrders(temporal, self, input, candidates);
      return judgePlacement(candidates, others, input);
    },
  };
}

function sameItem(request: Partial<GiftCardRequest>, input: PlacementSearchInput): boolean {
  return (
    request.productId === input.request.productId &&
    request.typeId === input.request.typeId &&
    request.quantity === input.request.quantity
  );
}

/** A provider order id that can be quoted in a visibility query as it is. */
const QUOTABLE_ID = /^[A-Za-z0-9_.:-]{1,200}$/;

/**
 * Our other gift-card orders (this deployment's task queue) that matter to the search, in two
 * visibility calls and a read of only those few whose item the listing cannot tell:
 * - claimed: any order that holds a candidate's id (ProviderOrderId, published with SUBMITTED);
 * - may be rivals: every order open at some time in the window (accepted before its end, its latest
 *   run still running or closed after its start), from the listing's attributes (OrderStatus,
 *   AcceptedAt, ReviewSince, ProviderOrderId) and memo (the request's figures: its item). Those
 *   without a provider order id that the listing cannot rule out are read (the status query, a closed run's result) for their item and a
 *   provider order id visibility may not show yet; one that cannot be read may be anything.
 */
async function readOtherOrders(
  temporal: Client,
  self: string,
  input: PlacementSearchInput,
  candidates: PlacementCandidate[],
): Promise<OtherOrder[]> {
  const iso = (ms: number) => new Date(ms).toISOString();
  // The orders of one deployment share its task queue (TEMPORAL_TASK_QUEUE), as the sweep assumes.
  const { taskQueue } = Context.current().info;
  const ours = `TaskQueue = '${taskQueue}' AND WorkflowType = '${workflowTypeByOrderType.gift_card}'`;
  const others = new Map<string, OtherOrder>();
  const fromListing = (execution: WorkflowExecutionInfo): OtherOrder => {
    const attributes = execution.typedSearchAttributes;
    const acceptedAt = attributes.get(AcceptedAtAttribute);
    const reviewSince = attributes.get(ReviewSinceAttribute);
    const providerReference = attributes.get(ProviderOrderIdAttribute);
    const status = attributes.get(OrderStatusAttribute);
    // The request's figures, in the memo since intake (src/orders/figures.ts): the item, without a query.
    const figures = execution.memo?.[FIGURES_MEMO_KEY] as Partial<GiftCardRequest> | undefined;
    const known = figures?.productId !== undefined && figures.quantity !== undefined;
    return {
      ref: execution.workflowId,
      ...(known && { sameItem: sameItem(figures, input) }),
      ...(status !== undefined && { status }),
      ...(acceptedAt !== undefined && { acceptedAt: acceptedAt.toISOString() }),
      ...(reviewSince !== undefined && { reviewSince: reviewSince.toISOString() }),
      ...(providerReference !== undefined && { providerReference }),
    };
  };

  const ids = candidates.map((c) => c.orderId).filter((id) => QUOTABLE_ID.test(id));
  if (ids.length > 0) {
    const claimed = `${ours} AND ProviderOrderId IN (${ids.map((id) => `'${id}'`).join(', ')})`;
    for await (const execution of temporal.workflow.list({ query: claimed })) {
      if (execution.workflowId !== self) others.set(execution.workflowId, fromListing(execution));
    }
  }
  Context.current().heartbeat({ listed: 'claimed' });

  // AcceptedAt, not StartTime: a review's own run (continue-as-new) starts after the window.
  const open =
    `${ours} AND AcceptedAt <= '${iso(input.to)}' AND ExecutionStatus != 'ContinuedAsNew' ` +
    `AND (ExecutionStatus = 'Running' OR CloseTime >= '${iso(input.from)}')`;
  // An order may show more than one run here (a terminated run and the sweep's new one): read
  // once, as its latest run, if any of them may be a rival.
  const unread = new Map<string, boolean>();
  for await (const execution of temporal.workflow.list({ query: open })) {
    const { workflowId } = execution;
    if (workflowId === self || others.get(workflowId)?.providerReference !== undefined) continue;
    const other = fromListing(execution);
    if (!unread.has(workflowId)) others.set(workflowId, other);
    if (mayBeRival(other, input)) {
      unread.set(workflowId, unread.get(workflowId) === true || execution.status.name === 'RUNNING');
    }
  }
  Context.current().heartbeat({ listed: 'open', toRead: unread.size });

  await Promise.all(
    [...unread].map(async ([workflowId, running]) => {
      const view = await viewOf(temporal, workflowId, running);
      if (!view) {
        others.set(workflowId, { ref: workflowId, unreadable: true });
        return;
      }
      others.set(workflowId, {
        ref: view.ref,
        sameItem: sameItem(view.request as Partial<GiftCardRequest>, input),
        status: view.status,
        acceptedAt: view.acceptedAt,
        ...(view.providerReference !== undefined && { providerReference: view.providerReference }),
        ...(view.review?.since !== undefined && { reviewSince: view.review.since }),
      });
    }),
  );
  return [...others.values()];
}

/** The latest run's view: a running one's status query, a closed one's result; undefined if unreadable. */
async function viewOf(
  temporal: Client,
  workflowId: string,
  running: boolean,
): Promise<OrderView | undefined> {
  const handle = temporal.workflow.getHandle(workflowId);
  try {
    if (running) return await handle.query(statusQuery);
  } catch {
    // closed since it was listed, or not answering: read as closed below
  }
  try {
    const description = await handle.describe();
    if (description.status.name === 'COMPLETED') return (await handle.result()) as OrderView;
    if (description.status.name === 'RUNNING') return await handle.query(statusQuery);
  } catch {
    // unreadable
  }
  return undefined;
}
