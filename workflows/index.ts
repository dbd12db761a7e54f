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
  submit: (activities, { request, providerRef }, resubmission) =>
    activities.sendMobileTopup(request, { lookUpFirst: resubmission, providerRef }),
  check: (activities, { providerRef }) => activities.checkMobileTopup(providerRef),
  fulfilledResult: (check, request) =>
    // The ref is ours, but a 409 could point at an earlier order under the same ref: make sure it is this one.
    check.MSSIDN === request.msisdn && check.topup_amount === request.amount
      ? { msisdn: check.MSSIDN, amount: check.topup_amount }
      : { problem: 'the fulfilled top-up under this ref has another number or amount than the order' },
});

export const internetTopupWorkflow = defineOrderWorkflow<InternetTopupRequest, InternetCheck>(
  'internet_topup',
  {
    submitRetry: 'lookup',
    submit: (activities, { request, providerRef }, resubmission) =>
      activities.sendInternetTopup(request, { lookUpFirst: resubmission, providerRef }),
    check: (activities, { providerRef }) => activities.checkInternetTopup(providerRef),
    fulfilledResult: (check) =>
      check.card_code && check.num_trans
        ? { cardCode: check.card_code, transactionNumber: check.num_trans }
        : { problem: 'FULFILLED without card_code or num_trans' },
  },
);

export const giftCardWorkflow = defineOrderWorkflow<GiftCardRequest, GiftCardOrderCheck>('gift_card', {
  // placeOrder carries no reference of ours: an attempt whose answer was lost cannot be looked up.
  submitRetry: 'once',
  submit: (activities, { request }) => activities.placeGiftCardOrder(request),
  check: (activities, _request, orderId) => (orderId ? activities.checkGiftCardOrder(orderId) : undefined),
  fulfilledResult: (check, request) =>
    check.cards?.length === request.quantity
      ? { cards: check.cards.map((card) => ({ code: card.value, serial: card.serial })) }
      : { problem: `FULFILLED with ${check.cards?.length ?? 0} cards for a quantity of ${request.quantity}` },
});
