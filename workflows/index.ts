/**
 * The order workflows, one per order type (names: contract.ts `workflowTypeByOrderType`). Each is
 * the shared lifecycle with an adapter saying how this type is submitted, checked and delivered.
 */
import type { GiftCardRequest, InternetTopupRequest, MobileTopupRequest } from '../src/orders/schemas';
import type { GiftCardOrderCheck, InternetCheck, MobileCheck } from '../src/provider/wire';
import { defineOrderWorkflow } from './order-lifecycle';

export { webhookDeliveryWorkflow } from './webhook-delivery';

export const mobileTopupWorkflow = defineOrderWorkflow<MobileTopupRequest, MobileCheck>('mobile_topup', {
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
  notThisOrder: (check, { request }, topupId) =>
    check.MSSIDN !== request.msisdn || !sameAmount(check.topup_amount, request.amount)
      ? 'the top-up under this ref has another number or amount than the order'
      : otherTopup(check, topupId),
});

export const internetTopupWorkflow = defineOrderWorkflow<InternetTopupRequest, InternetCheck>(
  'internet_topup',
  {
    submitRetry: 'lookup',
    submit: (activities, { request, providerRef }, how) =>
      activities.sendInternetTopup(request, { ...how, providerRef }),
    check: (activities, { providerRef }) => activities.checkInternetTopup(providerRef),
    poll: (activities, { providerRef }, _topupId, plan) => activities.pollInternetTopup(providerRef, plan),
    fulfilledResult: (check) =>
      check.card_code && check.num_trans
        ? { cardCode: check.card_code, transactionNumber: check.num_trans }
        : { problem: 'FULFILLED without card_code or num_trans' },
    notThisOrder: (check, { request }, topupId) => {
      // The spec shows only the status here; a provider that also shows the line is held to it.
      const differs = (value: unknown, ours: unknown) => value !== undefined && value !== ours;
      return differs(check.type, request.lineType) ||
        differs(check.number, request.number) ||
        differs(check.topup_amount, request.value)
        ? 'the top-up under this ref has another line or value than the order'
        : otherTopup(check, topupId);
    },
  },
);

export const giftCardWorkflow = defineOrderWorkflow<GiftCardRequest, GiftCardOrderCheck>('gift_card', {
  // placeOrder carries no reference of ours: an attempt whose answer was lost cannot be looked up.
  submitRetry: 'once',
  submit: (activities, { request }, { notAfter }) =>
    // Older workflow code placed with the request alone: the same call, as recorded, when not local.
    notAfter === undefined
      ? activities.placeGiftCardOrder(request)
      : activities.placeGiftCardOrder(request, { notAfter }),
  check: (activities, _request, orderId) => (orderId ? activities.checkGiftCardOrder(orderId) : undefined),
  poll: (activities, _request, orderId, plan) =>
    orderId ? activities.pollGiftCardOrder(orderId, plan) : undefined,
  fulfilledResult: (check, request) =>
    check.cards?.length === request.quantity
      ? { cards: check.cards.map((card) => ({ code: card.value, serial: card.serial })) }
      : { problem: `FULFILLED with ${check.cards?.length ?? 0} cards for a quantity of ${request.quantity}` },
});

/** A check shows the top-up's `_id` (documented): it must be the topupId our send got back. */
function otherTopup(check: { _id?: string }, topupId: string | undefined): string | undefined {
  return topupId !== undefined && check._id !== undefined && check._id !== topupId
    ? 'check-ref shows another _id than the topupId the send returned'
    : undefined;
}

/** A fixed plan's order names no amount (the plan has its own): any amount the provider shows is its. */
function sameAmount(shown: number | undefined, ordered: number | undefined): boolean {
  return ordered === undefined || shown === ordered;
}
