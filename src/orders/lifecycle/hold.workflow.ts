/**
 * Holding an order the account cannot take now (docs/operators.md "Orders on hold"): the provider
 * refused it for the balance (INSUFFICIENT_BALANCE: certainly nothing sent), or the worker did not
 * send it because orders already wait for the balance or /v3/ping reports its operator down. The
 * order is HELD (its hold published in search attributes), makes sure the account workflow runs
 * (src/provider-account/provider-account.workflow.ts), which watches the account once for everyone, finds the held
 * orders by visibility and lets them go in acceptance order, and waits —
 * no event while it waits — for that, a cancellation, or its maximum hold (then FAILED, NOT_SENT).
 * As a backstop against a lost account workflow it also tries again every `reviewRecheckMs`.
 */
import { condition, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { AccountActivities } from '../../provider-account/workflows';
import { ProviderFailureType } from '../../../contract/activity-outcomes';
import type { OperatorName } from '../../../contract/account';
import { heldNeed, type OrderRequest } from '../../../contract/order';
import { continueHeldOntoNewVersion } from './continue-as-new.workflow';
import type { ProviderFailure } from './failures.workflow';
import type { Order } from './state.workflow';
import type { ProviderCheck } from './types.workflow';

const account = proxyLocalActivities<AccountActivities>({
  startToCloseTimeout: 10_000,
  retry: { initialInterval: 1_000, backoffCoefficient: 2, maximumInterval: 60_000, maximumAttempts: 5 },
});

/** The failures that hold an order rather than end it: nothing was sent, and the account may recover. */
export function holdsTheOrder(failure: ProviderFailure): boolean {
  return (
    failure.type === ProviderFailureType.insufficientBalance ||
    failure.type === ProviderFailureType.operatorDown
  );
}

/**
 * Holds the order until the account can take it. 'send': send now (`released`: the account
 * workflow let it go). 'ended': it gave up (FAILED) or a cancellation came (the caller's send
 * point ends it CANCELLED).
 */
export async function holdUntilResumed<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  failure: ProviderFailure,
): Promise<{ next: 'send'; released: boolean } | { next: 'ended' }> {
  const operator = failure.type === ProviderFailureType.operatorDown ? failure.details?.operator : undefined;
  const reason = operator ? 'operator' : 'balance';
  const now = Date.now();
  const first = o.view.hold;
  const until = first ? Date.parse(first.until) : now + o.timings.maxHoldMs;
  const balance = failure.details?.balance;
  o.view.hold = {
    reason,
    ...(operator && { operator }),
    ...(balance?.required !== undefined && { required: balance.required }),
    ...(balance?.available !== undefined && { available: balance.available }),
    since: first?.since ?? new Date(now).toISOString(),
    until: new Date(until).toISOString(),
  };
  const why = operator
    ? `the provider reports operator ${operator} down`
    : "the account's balance does not cover the order";
  if (now >= until) return giveUp(o, why);
  if (o.view.status === 'HELD') {
    o.note(`Still held: ${why}; nothing was sent`);
    // The reason may have changed (the balance, then an operator down): the account reads it from there.
    o.publishStatus();
  } else o.transition('HELD', `Held, nothing sent: ${why}; sent once the account can take it`);

  const workflowId = workflowInfo().workflowId;
  const need = heldNeed(o.view.hold, o.request);
  try {
    await account.holdOrder({
      workflowId,
      acceptedAt: o.view.acceptedAt,
      reason,
      ...(operator && { operator: operator as OperatorName }),
      ...(need !== undefined && { required: need }),
      until,
    });
  } catch {
    o.note(`The account workflow could not be told; trying again in ${o.timings.reviewRecheckMs / 1000} s`);
  }
  o.resumeRequested = false;
  const woken = await condition(
    () => o.resumeRequested || o.cancelRequestedAt !== undefined,
    Math.max(0, Math.min(until, Date.now() + o.timings.reviewRecheckMs) - Date.now()),
    { summary: 'held: wait for the account to take the order' },
  );
  // Leaving the hold needs no word to the account: the order leaves HELD, and its listing with it.
  if (o.cancelRequestedAt !== undefined) return { next: 'ended' };
  if (!woken && Date.now() >= until) return giveUp(o, why);
  // Still held at a wake-up and a new worker version is current: the next run, on it, sends or holds
  // again (nothing was sent: a hold follows only a send the provider certainly never took).
  if (!woken) await continueHeldOntoNewVersion(o);
  o.view.hold.resumedAt = new Date().toISOString();
  o.note(
    woken
      ? 'Let go by the account watch: the account can take the order now; sending'
      : 'Still held after a while: trying the send again',
  );
  // The order's deadline counts from when it could be sent.
  o.deadlineAt = Math.max(o.deadlineAt, Date.now() + o.timings.deadlineMs);
  return { next: 'send', released: woken };
}

function giveUp<R extends OrderRequest, C extends ProviderCheck>(
  o: Order<R, C>,
  why: string,
): { next: 'ended' } {
  const hours = Math.round(o.timings.maxHoldMs / 360_000) / 10;
  o.finish('FAILED', `Not sent: held ${hours} h, the longest an order is held; ${why}`, {
    failure: { code: 'NOT_SENT', message: `held for the account and never sent: ${why}` },
  });
  return { next: 'ended' };
}
