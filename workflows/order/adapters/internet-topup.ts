/** An internet top-up: sent under our ref, checked by it; a fulfilled one carries a card code. */
import { patched } from '@temporalio/workflow';
import type { InternetTopupRequest } from '../../../contract/schemas';
import type { InternetCheck } from '../../../activities';
import type { OrderAdapter } from '../types';
import { madeBeforeTheOrder, otherTopup } from './other-topup';
import { topupDebit } from '../debit';

/**
 * `num_trans` (Algérie Télécom's transaction number) is optional in the documented check answer:
 * a FULFILLED answer with a card code and no num_trans settles the order (issue 25). Lifecycle 1.0
 * sent it to review; its marker is written only when an answer lacks num_trans.
 */
export const FULFILLED_WITHOUT_NUM_TRANS_PATCH = 'fulfilled-without-num-trans';

export const internetTopupAdapter: OrderAdapter<InternetTopupRequest, InternetCheck> = {
  submitRetry: 'lookup',
  submit: (activities, { request, providerRef }, how) =>
    activities.sendInternetTopup(request, { ...how, providerRef }),
  check: (activities, { providerRef }) => activities.checkInternetTopup(providerRef),
  poll: (activities, { providerRef }, _topupId, plan) => activities.pollInternetTopup(providerRef, plan),
  fulfilledResult: (check) => {
    if (!check.card_code) return { problem: 'FULFILLED without card_code' };
    if (check.num_trans) return { cardCode: check.card_code, transactionNumber: check.num_trans };
    return patched(FULFILLED_WITHOUT_NUM_TRANS_PATCH)
      ? { cardCode: check.card_code }
      : { problem: 'FULFILLED without card_code or num_trans' };
  },
  // The internet check documents no balance_amount: recorded only if the provider gives one.
  debit: topupDebit,
  notThisOrder: (check, { request, acceptedAt }, topupId) => {
    // The spec shows only the status here; a provider that also shows the line is held to it.
    const differs = (value: unknown, ours: unknown) => value !== undefined && value !== ours;
    return differs(check.type, request.lineType) ||
      differs(check.number, request.number) ||
      differs(check.topup_amount, request.value)
      ? 'the top-up under this ref has another line or value than the order'
      : (otherTopup(check, topupId) ?? madeBeforeTheOrder(check, acceptedAt, topupId));
  },
};
