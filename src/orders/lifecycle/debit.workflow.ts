/**
 * What the provider debited for a settled order, read from its check answer (the documented
 * fields: `balance_amount` on a top-up's check, `fulfilled_amount` and `price_per_card` on a gift
 * card's), and the memo a statement sums it from. Deterministic workflow code.
 */
import { upsertMemo, workflowInfo } from '@temporalio/workflow';
import {
  SETTLEMENT_MEMO,
  type OrderDebit,
  type OrderSettlement,
  type OrderView,
} from '../../../contract/order';
import type { GiftCardOrderCheck } from '../order.activities';

/** A top-up's check: `balance_amount` is what was debited (0 after a refund). */
export function topupDebit(check: object): OrderDebit | undefined {
  const debited = (check as { balance_amount?: unknown }).balance_amount;
  return typeof debited === 'number' ? { amount: debited, source: 'balance_amount' } : undefined;
}

/** A gift card's check: `fulfilled_amount`, else the price per card × the cards delivered. */
export function giftCardDebit(check: GiftCardOrderCheck, quantity: number): OrderDebit | undefined {
  const delivered =
    check.status === 'FULFILLED'
      ? quantity
      : check.status === 'PARTIALLY_FILLED'
        ? (check.fulfilled_quantity ?? check.cards?.length ?? 0)
        : 0;
  const price = check.price_per_card;
  const pricePerCard = price !== undefined ? { pricePerCard: price } : {};
  if (check.fulfilled_amount !== undefined) {
    return { amount: check.fulfilled_amount, source: 'fulfilled_amount', ...pricePerCard };
  }
  if (price === undefined) return undefined;
  return { amount: Math.round(price * delivered * 100) / 100, source: 'price_per_card', pricePerCard: price };
}

/**
 * A partial order's split, in the memo (statements sum it from visibility's listing, which
 * carries the memo and not the result): one memo update when it changes. Every other order's
 * debit goes in the DebitAmount search attribute with its final status (search-attributes.ts), so
 * a normal order spends no event on it.
 */
export function recordSettlement(view: OrderView): void {
  const partial = view.result?.partial;
  const settlement: OrderSettlement = partial
    ? { ...(view.result?.debit && { debit: view.result.debit }), partial }
    : {};
  const recorded = workflowInfo().memo?.[SETTLEMENT_MEMO];
  const unchanged = JSON.stringify(recorded ?? {}) === JSON.stringify(settlement);
  if (unchanged) return;
  upsertMemo({ [SETTLEMENT_MEMO]: settlement });
}
