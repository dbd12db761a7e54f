/**
 * Continuing as new: when the history grows long, into a run of the review's own when the
 * order enters NEEDS_REVIEW or DISPUTED (Temporal UI shows a run's input as the workflow page
 * opens, so the operator reads why and copies a decision without a click), and onto the current
 * worker version when a new one was made current while the order waits long (../versioning.ts).
 *
 * Orders run PINNED. Waiting long is being in review (NEEDS_REVIEW, DISPUTED: re-checked or woken
 * every `reviewRecheckMs`), QUEUED (checked every `queuedRecheckMs`), HELD (tried again every
 * `reviewRecheckMs`, hold.ts) or watched after a decision (checked at most `reviewRecheckMs`
 * apart). At its next wake-up such an order continues as new with `initialVersioningBehavior:
 * 'AUTO_UPGRADE'`: its next run starts, pinned, on the current version. An order still being sent
 * or polled toward its first outcome stays on its version to the end (minutes). So an old version
 * drains within the longest interval between two wake-ups of a long wait (QUEUED: 6 h by default),
 * and no run executes two versions. The input below is read by the next version: its schema is
 * contract/continued.ts.
 */
import {
  allHandlersFinished,
  condition,
  log,
  makeContinueAsNewFunc,
  workflowInfo,
} from '@temporalio/workflow';
import type { OrderInput, OrderRequest } from '../../../contract/order';
import { pastableDecisions, reviewNotice } from '../../../contract/ui-metadata';
import type { Order } from './state.workflow';
import type { OrderWorkflow, ProviderCheck } from './types.workflow';
import { versionChanged } from '../../temporal/workflows';

/** Continues as new when the history grows long, or into a run of the review's own. */
export async function continueAsNewIfDue<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
): Promise<void> {
  const long = o.historyIsLong();
  const intoReview = !long && o.reviewGetsOwnRun();
  const upgrade = waitsLong(o) && versionChanged();
  if (!(long || intoReview || upgrade) || o.decisions.length > 0) return;
  await continueAsNewNow(o, { intoReview, upgrade });
}

/**
 * An order in a long wait (see above): one that may move to another worker version. Sending and
 * polling toward the first outcome is not: it ends on the version that started it.
 */
export function waitsLong<R extends OrderRequest, C extends ProviderCheck>(o: Order<R, C>): boolean {
  return (
    o.watch !== undefined || o.takesDecisions() || o.view.status === 'QUEUED' || o.view.status === 'HELD'
  );
}

/** HELD (hold.ts), at a wake-up that did not let it go: onto the current version if it changed. */
export async function continueHeldOntoNewVersion<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
): Promise<void> {
  if (o.view.status !== 'HELD' || !versionChanged() || o.decisions.length > 0) return;
  await continueAsNewNow(o, { intoReview: false, upgrade: true });
}

async function continueAsNewNow<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  { intoReview, upgrade }: { intoReview: boolean; upgrade: boolean },
): Promise<void> {
  // Announcements first: a decision that arrives while one is handed over must not be left
  // behind in this run. Then an update handler still returning its answer would lose it; a
  // decision arriving meanwhile goes first. Nothing is awaited between that check and the end.
  await o.announcing;
  await condition(() => allHandlersFinished() || o.decisions.length > 0);
  if (o.decisions.length > 0) return;
  log.info(
    upgrade
      ? 'continuing as new onto the current worker version'
      : intoReview
        ? 'continuing as new into review'
        : 'continuing as new to keep the history short',
    { historyLength: workflowInfo().historyLength },
  );
  // The next run of a resumed (or reconciled) order is not resumed (reopened) itself: it goes on from this one.
  const { resumed: _resumed, reconciled: _reconciled, ...input } = o.input;
  const continued: OrderInput = {
    ...input,
    continued: {
      view: o.view,
      deadlineAt: o.deadlineAt,
      nextCheckMs: o.nextCheckMs,
      ...(o.watch && { watch: o.watch }),
      ...(o.recordsWindow && { recordsWindow: o.recordsWindow }),
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
    // Only from a long wait: an order in its active phase keeps its version even when its history is long.
    ...(upgrade && { initialVersioningBehavior: 'AUTO_UPGRADE' as const }),
  });
  await (notice ? continueAsNew(continued, notice, ...pastableDecisions) : continueAsNew(continued));
}
