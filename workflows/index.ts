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
    // The ref is ours, but a 409 could point at an earlier order under the same ref: make sure it is this one.
    check.MSSIDN === request.msisdn && check.topup_amount === request.amount
      ? { msisdn: check.MSSIDN, amount: check.topup_amount }
      : { problem: 'the fulfilled top-up under this ref has another number or amount than the order' },
  notThisOrder: (check, { request }, topupId) =>
    check.MSSIDN !== request.msisdn || check.topup_amount !== request.amount
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
      const shown = check as { type?: unknown; number?: unknown; value?: unknown };
      const differs = (value: unknown, ours: unknown) => value !== undefined && value !== ours;
      return differs(shown.type, request.lineType) ||
        differs(shown.number, request.number) ||
        differs(shown.value, request.value)
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

/** A check that shows a topupId (the spec does not promise one) must show the one our send got back. */
function otherTopup(check: object, topupId: string | undefined): string | undefined {
  const shown = (check as { topupId?: unknown }).topupId;
  return topupId !== undefined && typeof shown === 'string' && shown !== topupId
    ? 'check-ref shows another topupId than the send returned'
    : undefined;
}
