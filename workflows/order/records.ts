/**
 * A placement whose answer was lost, settled from the provider's records (docs/contributors.md "A
 * lost placement, found in the provider's records"). Nothing is placed while it is looked for. Once
 * the settle window has passed since the placement ended — the provider shows a commit within it,
 * or never: the assumption of a top-up's check-ref — the provider's list is searched for an order
 * of the same item committed between just before the placement and that window's end:
 * - exactly one that is no other order's, and no other order of ours that may have placed the same
 *   item then: that is this order's; it carries on with it (polling, delivery, partial fill as usual);
 * - more than one, or a rival of ours: review, with the candidates as evidence;
 * - none: looked for again a settle window later; none twice means it was never placed: placed
 *   again (or FAILED, nothing placed, when the deadline has come).
 * Deterministic workflow code: the search is an activity, every wait a durable timer.
 */
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { OrderActivities } from '../../activities';
import {
  describeCandidates,
  placementReviewReasons,
  type PlacementSearch,
} from '../../contract/placement-records';
import type { OrderRequest } from '../../contract/order';
import { describeFailure } from './failures';
import type { Order } from './state';
import type { ProviderCheck } from './types';

/** Our other orders are read from visibility, which may lag: the search starts this long after the window. */
const VISIBILITY_MARGIN_MS = 2_000;
/** The provider's clock may be behind ours: the window starts this much before the placement. */
const CLOCK_MARGIN_MS = 2_000;

/** When the placement that may have reached the provider began and ended (epoch ms, the workflow's clock). */
export interface PlacingTime {
  startedAt: number;
  endedAt: number;
}

/** After an unclear placement: 'resend' when the records show it never happened, else 'done' (the order moved on). */
export async function settleFromRecords<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  placing: PlacingTime,
  failure: string,
): Promise<'resend' | 'done'> {
  const find = o.adapter.findInRecords;
  if (!find) {
    o.toReview(placementReviewReasons.unknown, failure);
    return 'done';
  }
  const { settleMs } = o.timings;
  const window = { from: placing.startedAt - CLOCK_MARGIN_MS, to: placing.endedAt + settleMs, settleMs };
  const settleS = Math.round(settleMs / 100) / 10;
  o.note(
    `Placement outcome unknown; looking for it in the provider's gift-card list in ${settleS} s, nothing is placed before`,
  );
  let lookAt = window.to + VISIBILITY_MARGIN_MS;
  let notFound = 0;
  for (;;) {
    const wait = Math.min(lookAt, o.deadlineAt) - Date.now();
    if (wait > 0)
      await sleep(wait, { summary: "settle window: the provider's records before placing again" });
    // Retried for a settle window at most (never past the deadline): a search that cannot finish
    // decides nothing, and the order goes to review as it did before records were searched.
    const { activityTimeoutMs } = o.timings;
    const activities = proxyActivities<OrderActivities>({
      startToCloseTimeout: activityTimeoutMs,
      scheduleToCloseTimeout: Math.max(Math.min(o.deadlineAt - Date.now(), settleMs), activityTimeoutMs),
      retry: o.retryPolicy(),
      summary: "look for the placement in the provider's gift-card list",
    });
    let search: PlacementSearch;
    try {
      search = await find(activities, o.order, window);
    } catch (err) {
      o.toReview(
        placementReviewReasons.unknown,
        `${failure}; the provider's records could not be searched (${describeFailure(err)})`,
      );
      return 'done';
    }
    if (search.kind === 'found') {
      const { orderId, time } = search.candidate;
      o.note(
        `Found in the provider's gift-card list: order ${orderId}${time ? ` of ${time}` : ''}, the only one that can be this placement`,
      );
      o.onSubmitted({ providerReference: orderId, alreadySent: true });
      return 'done';
    }
    if (search.kind === 'ambiguous') {
      o.toReview(placementReviewReasons.ambiguous, `${failure}; ${describeCandidates(search)}`);
      return 'done';
    }
    notFound++;
    if (notFound >= 2) {
      if (Date.now() < o.deadlineAt) {
        o.note(
          `Not in the provider's gift-card list twice, ${settleS} s apart: it was never placed; placing again`,
        );
        return 'resend';
      }
      o.finish('FAILED', "The placement is not in the provider's records: nothing was placed", {
        failure: { code: 'NOT_PLACED', message: `${failure}; not in the provider's gift-card list twice` },
      });
      return 'done';
    }
    if (Date.now() >= o.deadlineAt) {
      o.toReview(
        placementReviewReasons.unknown,
        `${failure}; not in the provider's gift-card list by the deadline`,
      );
      return 'done';
    }
    o.note(`Not in the provider's gift-card list; looking again in ${settleS} s`);
    lookAt = Date.now() + settleMs;
  }
}
