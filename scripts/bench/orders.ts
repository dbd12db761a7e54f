/**
 * The orders the bench submits: normal ones of each type (none of the sandbox's scripted numbers),
 * round-robin over the mix, with refs unique to the run and phase so their workflows can be found.
 */
import { orderWorkflowId } from '../../contract/order';
import type { OrderRequest, OrderType } from '../../contract/schemas';

/** `bench-<run>-<phase>-`: every ref of a phase starts with it; workflow IDs with `order-` + it. */
export function refPrefix(runId: string, phase: string): string {
  return `bench-${runId}-${phase}-`;
}

/** `owner`: the API client that submitted the phase's orders, when not the default client. */
export function workflowIdPrefix(runId: string, phase: string, owner?: string): string {
  return orderWorkflowId(refPrefix(runId, phase), owner);
}

const digits8 = (i: number) => String(i % 100_000_000).padStart(8, '0');

export function benchOrder(type: OrderType, ref: string, i: number): OrderRequest {
  switch (type) {
    case 'mobile_topup':
      // 055xxxxxxx: never one of the sandbox's scripted 060000000x numbers.
      return { type, ref, planCode: 'PREPAID_MOBILIS', msisdn: `05${digits8(i)}`, amount: 500 };
    case 'internet_topup':
      // The documented line formats: ADSL 0 + 8 digits, 4G 213 + 9 digits.
      return i % 2
        ? { type, ref, lineType: 'ADSL', number: `0${digits8(i)}`, value: 1_000 }
        : { type, ref, lineType: '4G', number: `2130${digits8(i)}`, value: 1_000 };
    case 'gift_card':
      return { type, ref, productId: 'GOOGLE_PLAY', typeId: 'GOOGLE_PLAY_1000', quantity: 1 };
  }
}

/** The i-th order of a phase. */
export function orderAt(runId: string, phase: string, mix: readonly OrderType[], i: number): OrderRequest {
  return benchOrder(mix[i % mix.length]!, `${refPrefix(runId, phase)}${i}`, i);
}
