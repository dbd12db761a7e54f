/**
 * A placement whose answer was lost, settled from the provider's records (docs/contributors.md "A
 * lost placement, found in the provider's records"). Nothing is placed while it is looked for. Once
 * the settle window has passed since the placement ended — the provider shows a commit within it,
 * or never: the assumption of a top-up's check-ref — the provider's list is searched for an order
 * of the same item committed between just before the placement and that window's end:
 * - exactly one that is no other order's, and no other order of ours that may have placed the same
 *   item then: that is this order's; it carries on with it (polling, delivery, partial fill as usual);
 * - more than one, or a rival of ours: review, with the candidates as evidence;
 * - none: looked for again a settle window later; none twice: review, with when the list was read
 *   (the provider documents no bound on its list's lag, so it is never read as "never placed":
 *   nothing is placed again, nothing ends FAILED on it); the review's rechecks keep looking.
 * A search that fails is retried until the order's deadline; still failing then: review.
 * Deterministic workflow code: the search is an activity, every wait a durable timer.
 */
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { OrderActivities } from '../order.activities';
import {
  describeCandidates,
  describeNotFound,
  placementReviewReasons,
  type PlacementSearch,
} from '../../../contract/placement-records';
import type { OrderRequest } from '../../../contract/order';
import { describeFailure } from './failures.workflow';
import type { Order } from './state.workflow';
import type { ProviderCheck } from './types.workflow';

/** Our other orders are read from visibility, which may lag: the search starts this long after the window. */
const VISIBILITY_MARGIN_MS = 2_000;
/** The provider's clock may be behind ours: the window starts this much before the placement. */
const CLOCK_MARGIN_MS = 2_000;

/** When the placement that may have reached the provider began and ended (epoch ms, the workflow's clock). */
export interface PlacingTime {
  startedAt: number;
  endedAt: number;
}

/** After an unclear placement: the order carries on with the one it found, or goes to review. */
export async function settleFromRecords<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  placing: PlacingTime,
  failure: string,
): Promise<void> {
  const find = o.adapter.findInRecords;
  if (!find) return o.toReview(placementReviewReasons.unknown, failure);
  const { settleMs } = o.timings;
  const window = { from: placing.startedAt - CLOCK_MARGIN_MS, to: placing.endedAt + settleMs, settleMs };
  const settleS = Math.round(settleMs / 100) / 10;
  o.note(
    `Placement outcome unknown; looking for it in the provider's gift-card list in ${settleS} s, nothing is placed again`,
  );
  let lookAt = window.to + VISIBILITY_MARGIN_MS;
  let firstLook: number | undefined;
  for (;;) {
    const wait = Math.min(lookAt, o.deadlineAt) - Date.now();
    if (wait > 0) await sleep(wait, { summary: "settle window: then the provider's gift-card list" });
    // Retried until the deadline (one attempt at least): a search that cannot finish decides
    // nothing, and the order goes to review as it did before records were searched.
    const { activityTimeoutMs } = o.timings;
    const activities = proxyActivities<OrderActivities>({
      startToCloseTimeout: activityTimeoutMs,
      scheduleToCloseTimeout: Math.max(o.deadlineAt - Date.now(), activityTimeoutMs),
      retry: o.retryPolicy(),
      summary: "look for the placement in the provider's gift-card list",
    });
    const lookedAt = Date.now();
    let search: PlacementSearch;
    try {
      search = await find(activities, o.order, window);
    } catch (err) {
      // The review's rechecks search them again (recheckRecords).
      o.recordsWindow = window;
      return o.toReview(
        placementReviewReasons.unknown,
        `${failure}; the provider's records could not be searched (${describeFailure(err)})`,
      );
    }
    if (search.kind === 'found') {
      const { orderId, time } = search.candidate;
      o.note(
        `Found in the provider's gift-card list: order ${orderId}${time ? ` of ${time}` : ''}, the only one that can be this placement`,
      );
      return o.onSubmitted({ providerReference: orderId, alreadySent: true });
    }
    if (search.kind === 'ambiguous') {
      return o.toReview(placementReviewReasons.ambiguous, `${failure}; ${describeCandidates(search)}`);
    }
    // None: the provider documents no bound on its list's lag, so "not shown" is never "never
    // placed" — placing again could send it twice, FAILED could hide a delivered card.
    if (firstLook !== undefined || Date.now() >= o.deadlineAt) {
      // The review's rechecks look again (recheckRecords): a list that lagged settles it then.
      o.recordsWindow = window;
      return o.toReview(
        placementReviewReasons.notFound,
        `${failure}; ${describeNotFound(search, window, firstLook ?? lookedAt, lookedAt)}`,
      );
    }
    firstLook = lookedAt;
    o.note(`Not in the provider's gift-card list yet; looking again in ${settleS} s`);
    lookAt = Date.now() + settleMs;
  }
}

/**
 * A review's recheck of an order in review because its records could not be searched, or did not
 * show the placement (the list may lag): searched again (one attempt's retries: decisions queued behind a recheck should not wait long). Found: the
 * order takes that provider order id, and the recheck asks the provider about it (review.ts); the
 * records showing more than one: noted for the operator, not searched again; none: noted, searched
 * again at the next recheck.
 */
export async function recheckRecords<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
): Promise<void> {
  const window = o.recordsWindow;
  const find = o.adapter.findInRecords;
  if (!window || !find || o.view.providerReference !== undefined) return;
  const { activityTimeoutMs } = o.timings;
  const activities = proxyActivities<OrderActivities>({
    startToCloseTimeout: activityTimeoutMs,
    scheduleToCloseTimeout: activityTimeoutMs,
    retry: o.retryPolicy(),
    summary: "review re-check: look for the placement in the provider's gift-card list",
  });
  let search: PlacementSearch;
  try {
    search = await find(activities, o.order, window);
  } catch (err) {
    o.note(`Recheck: the provider's records could not be searched (${describeFailure(err)})`);
    return;
  }
  if (search.kind === 'found') {
    const { orderId, time } = search.candidate;
    o.recordsWindow = undefined;
    o.view.providerReference = orderId;
    o.note(
      `Recheck: found in the provider's gift-card list: order ${orderId}${time ? ` of ${time}` : ''}, the only one that can be this placement`,
    );
  } else if (search.kind === 'ambiguous') {
    o.recordsWindow = undefined;
    o.note(`Recheck: ${describeCandidates(search)}`);
  } else {
    const at = Date.now();
    o.note(`Recheck: ${describeNotFound(search, window, at, at)}`);
  }
}
