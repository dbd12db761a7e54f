/**
 * The order request and review decision schemas: the single source for the intake API's
 * validation, the TypeScript types the workflows use (`import type`) and the OpenAPI document.
 */
import { z } from 'zod';
import { InternetLineType, LocalNumber, limits, PlanCode, Ref } from '../provider/wire';

export const orderTypes = ['mobile_topup', 'internet_topup', 'gift_card'] as const;
export const OrderType = z.enum(orderTypes);
export type OrderType = z.infer<typeof OrderType>;

export const orderStatuses = [
  'ACCEPTED',
  'SUBMITTED',
  'PROCESSING',
  'FULFILLED',
  'REFUNDED',
  'FAILED',
  'NEEDS_REVIEW',
] as const;
export const OrderStatus = z.enum(orderStatuses);
export type OrderStatus = z.infer<typeof OrderStatus>;

/** DZD amounts are whole dinars here: the provider shows no sub-unit. */
const Dinars = z.number().int().positive().max(limits.maxAmount);

export const MobileTopupRequest = z.strictObject({
  type: z.literal('mobile_topup'),
  ref: Ref,
  planCode: PlanCode,
  msisdn: LocalNumber,
  amount: Dinars,
});
export type MobileTopupRequest = z.infer<typeof MobileTopupRequest>;

export const InternetTopupRequest = z.strictObject({
  type: z.literal('internet_topup'),
  ref: Ref,
  lineType: InternetLineType,
  number: LocalNumber,
  value: Dinars,
});
export type InternetTopupRequest = z.infer<typeof InternetTopupRequest>;

export const GiftCardRequest = z.strictObject({
  type: z.literal('gift_card'),
  ref: Ref,
  productId: z.string().min(1).max(64),
  typeId: z.string().min(1).max(64),
  quantity: z.number().int().positive().max(limits.maxQuantity),
});
export type GiftCardRequest = z.infer<typeof GiftCardRequest>;

export const OrderRequest = z.discriminatedUnion('type', [
  MobileTopupRequest,
  InternetTopupRequest,
  GiftCardRequest,
]);
export type OrderRequest = z.infer<typeof OrderRequest>;

export const reviewDecisions = ['FULFILLED', 'REFUNDED', 'RECHECK'] as const;
export const ReviewDecision = z.strictObject({
  decision: z.enum(reviewDecisions),
  operator: z.string().trim().min(1).max(100),
  note: z.string().trim().min(1).max(1_000),
});
export type ReviewDecision = z.infer<typeof ReviewDecision>;
