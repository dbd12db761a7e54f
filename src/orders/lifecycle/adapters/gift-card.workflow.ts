/** A gift card: placed without a ref of ours, so it is checked only by the provider's orderId. */
import type { GiftCardRequest } from '../../../../contract/schemas';
import type { GiftCardOrderCheck } from '../../order.activities';
import type { OrderAdapter } from '../types.workflow';
import { giftCardDebit } from '../debit.workflow';

export const giftCardAdapter: OrderAdapter<GiftCardRequest, GiftCardOrderCheck> = {
  // placeOrder carries no reference of ours: an attempt whose answer was lost cannot be looked up.
  submitRetry: 'once',
  submit: (activities, { request }, how) => activities.placeGiftCardOrder(request, how),
  // …but the provider lists the account's orders: a lost placement is looked for there (records.workflow.ts).
  findInRecords: (activities, { request }, window) =>
    activities.findGiftCardPlacement({
      request: { productId: request.productId, typeId: request.typeId, quantity: request.quantity },
      ...window,
    }),
  check: (activities, _request, orderId) => (orderId ? activities.checkGiftCardOrder(orderId) : undefined),
  poll: (activities, _request, orderId, plan) =>
    orderId ? activities.pollGiftCardOrder(orderId, plan) : undefined,
  fulfilledResult: (check, request) =>
    check.cards?.length === request.quantity
      ? { cards: check.cards.map((card) => ({ code: card.value, serial: card.serial })) }
      : { problem: `FULFILLED with ${check.cards?.length ?? 0} cards for a quantity of ${request.quantity}` },
  partialResult: (check, request) => {
    const delivered = check.cards ?? [];
    const fulfilled = check.fulfilled_quantity ?? delivered.length;
    if (!(fulfilled > 0 && fulfilled < request.quantity) || delivered.length !== fulfilled) {
      return {
        problem: `PARTIALLY_FILLED with ${delivered.length} cards, ${fulfilled} fulfilled, for a quantity of ${request.quantity}`,
      };
    }
    const refunded = request.quantity - fulfilled;
    const price = check.price_per_card;
    return {
      cards: delivered.map((card) => ({ code: card.value, serial: card.serial })),
      partial: {
        quantity: request.quantity,
        fulfilledQuantity: fulfilled,
        refundedQuantity: refunded,
        ...(check.fulfilled_amount !== undefined && { fulfilledAmount: check.fulfilled_amount }),
        ...(price !== undefined && { refundedAmount: price * refunded }),
      },
    };
  },
  debit: (check, request) => giftCardDebit(check, request.quantity),
};
