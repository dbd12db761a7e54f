/**
 * An order's figures for statements (src/statements/statement.service.ts): what it is worth, from its request,
 * kept in the workflow's memo at start (memo key `figures`) so a statement reads them from one
 * visibility listing instead of each order's history. No phone or line number: only the money
 * and the product.
 */
import type { OrderRequest } from '../../contract/schemas';

export const FIGURES_MEMO = 'figures';

export type OrderFigures =
  /** Mobile: the dinars asked for (none for a fixed plan, whose amount is the plan's own). */
  | { amount?: number; planCode: string }
  /** Internet: the product's value in dinars. */
  | { value: number }
  /** Gift cards: which product and type, how many cards. */
  | { productId: string; typeId: string; quantity: number };

export function orderFigures(request: OrderRequest): OrderFigures {
  switch (request.type) {
    case 'mobile_topup':
      return {
        ...(request.amount !== undefined ? { amount: request.amount } : {}),
        planCode: request.planCode,
      };
    case 'internet_topup':
      return { value: request.value };
    case 'gift_card':
      return { productId: request.productId, typeId: request.typeId, quantity: request.quantity };
  }
}
