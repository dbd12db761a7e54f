/** A mobile top-up: sent under our ref, checked by it; the check shows the number and amount. */
import type { MobileTopupRequest } from '../../../../contract/schemas';
import type { MobileCheck } from '../../order.activities';
import type { OrderAdapter } from '../types.workflow';
import { madeBeforeTheOrder, otherTopup, sameAmount } from './other-topup.workflow';
import { topupDebit } from '../debit.workflow';

export const mobileTopupAdapter: OrderAdapter<MobileTopupRequest, MobileCheck> = {
  submitRetry: 'lookup',
  submit: (activities, { request, providerRef }, how) =>
    activities.sendMobileTopup(request, { ...how, providerRef }),
  check: (activities, { providerRef }) => activities.checkMobileTopup(providerRef),
  poll: (activities, { providerRef }, _topupId, plan) => activities.pollMobileTopup(providerRef, plan),
  fulfilledResult: (check, request) =>
    // The ref is ours, but a DUPLICATED_REF could point at an earlier order under the same ref: make sure it is this one.
    check.MSSIDN === request.msisdn && sameAmount(check.topup_amount, request.amount)
      ? { msisdn: check.MSSIDN, amount: check.topup_amount }
      : { problem: 'the fulfilled top-up under this ref has another number or amount than the order' },
  debit: topupDebit,
  notThisOrder: (check, { request, acceptedAt }, topupId) =>
    check.MSSIDN !== request.msisdn || !sameAmount(check.topup_amount, request.amount)
      ? 'the top-up under this ref has another number or amount than the order'
      : (otherTopup(check, topupId) ?? madeBeforeTheOrder(check, acceptedAt, topupId)),
};
