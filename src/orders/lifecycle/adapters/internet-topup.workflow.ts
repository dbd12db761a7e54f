/** An internet top-up: sent under our ref, checked by it; a fulfilled one carries a card code. */
import type { InternetTopupRequest } from '../../../../contract/schemas';
import type { InternetCheck } from '../../order.activities';
import type { OrderAdapter } from '../types.workflow';
import { madeBeforeTheOrder, otherTopup } from './other-topup.workflow';
import { topupDebit } from '../debit.workflow';

export const internetTopupAdapter: OrderAdapter<InternetTopupRequest, InternetCheck> = {
  submitRetry: 'lookup',
  submit: (activities, { request, providerRef }, how) =>
    activities.sendInternetTopup(request, { ...how, providerRef }),
  check: (activities, { providerRef }) => activities.checkInternetTopup(providerRef),
  poll: (activities, { providerRef }, _topupId, plan) => activities.pollInternetTopup(providerRef, plan),
  fulfilledResult: (check) => {
    if (!check.card_code) return { problem: 'FULFILLED without card_code' };
    // num_trans (Algérie Télécom's transaction number) is optional in the documented answer.
    if (check.num_trans) return { cardCode: check.card_code, transactionNumber: check.num_trans };
    return { cardCode: check.card_code };
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
