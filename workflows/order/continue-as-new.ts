/**
 * Continuing as new: when the history grows long, and into a run of the review's own when the
 * order enters NEEDS_REVIEW or DISPUTED (Temporal UI shows a run's input as the workflow page
 * opens, so the operator reads why and copies a decision without a click).
 */
import {
  allHandlersFinished,
  condition,
  log,
  makeContinueAsNewFunc,
  workflowInfo,
} from '@temporalio/workflow';
import type { OrderInput, OrderRequest } from '../../contract/order';
import { pastableDecisions, reviewNotice } from '../../contract/ui-metadata';
import type { Order } from './state';
import type { OrderWorkflow, ProviderCheck } from './types';

/** Continues as new when the history grows long, or into a run of the review's own. */
export async function continueAsNewIfDue<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
): Promise<void> {
  const long = o.historyIsLong();
  const intoReview = !long && o.reviewGetsOwnRun();
  if (!(long || intoReview) || o.decisions.length > 0) return;
  // Announcements first: a decision that arrives while one is handed over must not be left
  // behind in this run. Then an update handler still returning its answer would lose it; a
  // decision arriving meanwhile goes first. Nothing is awaited between that check and the end.
  await o.announcing;
  await condition(() => allHandlersFinished() || o.decisions.length > 0);
  if (o.decisions.length > 0) return;
  log.info(intoReview ? 'continuing as new into review' : 'continuing as new to keep the history short', {
    historyLength: workflowInfo().historyLength,
  });
  // The next run of a resumed (or reconciled) order is not resumed (reopened) itself: it goes on from this one.
  const { resumed: _resumed, reconciled: _reconciled, ...input } = o.input;
  const continued: OrderInput = {
    ...input,
    continued: {
      view: o.view,
      deadlineAt: o.deadlineAt,
      nextCheckMs: o.nextCheckMs,
      ...(o.watch && { watch: o.watch }),
      ...(o.eventSequence > 0 ? { eventSequence: o.eventSequence } : {}),
      ...(o.webhookDurable !== 'all' && o.webhookDurable.length > 0
        ? { webhookDurable: o.webhookDurable }
        : {}),
    },
  };
  // A long review shown in its own run keeps showing it in the next.
  const showsReview = intoReview || (o.shownReview !== undefined && o.takesDecisions());
  const notice = showsReview ? reviewNotice(o.view) : undefined;
  const continueAsNew = makeContinueAsNewFunc<OrderWorkflow>({
    // The starter's memo (the API keeps the request's fingerprint there) goes along explicitly.
    memo: workflowInfo().memo,
    // The review's run starts listed in review: no moment where visibility still says SUBMITTED.
    ...(notice && { typedSearchAttributes: o.reviewAttributes(notice) }),
  });
  await (notice ? continueAsNew(continued, notice, ...pastableDecisions) : continueAsNew(continued));
}
