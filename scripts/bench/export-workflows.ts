/**
 * The export bench's stand-in order workflows (test/tools/bench-export.ts): each completes at once
 * with the view a FULFILLED order ends with, built from its input, so 20,000 completed orders can
 * be seeded without a provider. The export reads them as it reads real ones (their last event).
 */
import type { OrderInput, OrderView } from '../../contract/order';

function fulfilled(input: OrderInput): OrderView {
  const { request, acceptedAt } = input;
  const completedAt = new Date(Date.parse(acceptedAt) + 60_000).toISOString();
  return {
    ref: request.ref,
    type: request.type,
    ...(input.clientId && { client: input.clientId }),
    status: 'FULFILLED',
    providerStatus: 'FULFILLED',
    request,
    providerReference: `bench-${request.ref}`,
    result:
      request.type === 'mobile_topup'
        ? {
            msisdn: request.msisdn,
            amount: request.amount,
            debit: { amount: request.amount ?? 0, source: 'balance_amount' },
          }
        : request.type === 'internet_topup'
          ? { cardCode: '1234567890123456', transactionNumber: '123456789012' }
          : {
              cards: Array.from({ length: request.quantity }, (_, i) => ({
                code: `CODE-${i}`,
                serial: `SN-${i}`,
              })),
            },
    acceptedAt,
    updatedAt: completedAt,
    completedAt,
    timeline: [
      { at: acceptedAt, status: 'ACCEPTED', event: 'Order accepted' },
      { at: completedAt, status: 'FULFILLED', event: 'The provider reports FULFILLED' },
    ],
  };
}

export async function mobileTopupWorkflow(input: OrderInput): Promise<OrderView> {
  return fulfilled(input);
}
export async function internetTopupWorkflow(input: OrderInput): Promise<OrderView> {
  return fulfilled(input);
}
export async function giftCardWorkflow(input: OrderInput): Promise<OrderView> {
  return fulfilled(input);
}
