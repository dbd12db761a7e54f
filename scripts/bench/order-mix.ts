/** The order mix the statement and export benches seed: a third of each type, amounts varying with `i`. */
import type { OrderRequest } from '../../contract/order';

export function benchOrderRequest(i: number, ref: string): OrderRequest {
  if (i % 3 === 0) {
    return {
      type: 'mobile_topup',
      ref,
      planCode: 'PREPAID_DJEZZY',
      msisdn: '0551234567',
      amount: 100 + (i % 50),
    };
  }
  if (i % 3 === 1) return { type: 'internet_topup', ref, lineType: 'ADSL', number: '021123456', value: 1000 };
  return {
    type: 'gift_card',
    ref,
    productId: 'GOOGLE_PLAY',
    typeId: 'GOOGLE_PLAY_1000',
    quantity: 1 + (i % 3),
  };
}
