/**
 * The provider's /v3 wire formats (spec: ../shared/spec/provider-api-v3.md), written once.
 *
 * The sandbox validates request bodies with these schemas and the client parses response data
 * with them, so the two cannot drift apart. Where the spec is silent the choice is recorded here
 * (and in docs/contributors.md, "Provider sandbox"): error shape, the REFUNDED `message` / `suggested_plans` fields, the
 * catalog shape, the 4G type identifier and the bounds on amounts, quantities and refs.
 */
import { z } from 'zod';

export const API_PREFIX = '/v3';

/** Statuses the spec shows (section 3). */
export const providerStatuses = ['PENDING', 'HANDLING', 'FULFILLED', 'REFUNDED', 'UNKNOWN_ERROR'] as const;
export const ProviderStatus = z.enum(providerStatuses);
export type ProviderStatus = z.infer<typeof ProviderStatus>;

/** Decision: 4G is spelled `4G` (the spec shows only ADSL). */
export const internetLineTypes = ['ADSL', '4G'] as const;
export const InternetLineType = z.enum(internetLineTypes);
export type InternetLineType = z.infer<typeof InternetLineType>;

/** Decision (spec section 8 shows no bounds): what the sandbox accepts. */
export const limits = {
  refMaxLength: 64,
  /** DZD; one top-up or card value never exceeds this. */
  maxAmount: 100_000,
  maxQuantity: 100,
} as const;

/** Refs: letters, digits, `-`, `_`, `.`; so they are safe in a URL path and a workflow ID. */
export const Ref = z
  .string()
  .min(1)
  .max(limits.refMaxLength)
  .regex(/^[A-Za-z0-9._-]+$/, 'ref may contain only letters, digits, ".", "_" and "-"');
/** A mobile number (MSSIDN): local format, `0` and 9 digits (`05xx xx xx xx`). */
export const LocalNumber = z.string().regex(/^0\d{9}$/, 'expected a local number: 0 followed by 9 digits');
/**
 * Decision (the spec gives no format for an internet line's `number`): a local line number, `0`
 * and 8 or 9 digits. Fixed lines (ADSL, fixed 4G) have 9 digits with the leading 0
 * (`0yy xx xx xx`, e.g. 021123456); lines on mobile-style numbers have 10. A real provider takes
 * both, so the sandbox must too.
 */
export const LineNumber = z
  .string()
  .regex(/^0\d{8,9}$/, 'expected a local line number: 0 followed by 8 or 9 digits');
export const PlanCode = z.string().regex(/^PREPAID_[A-Z0-9]+$/, 'expected PREPAID_<OPERATOR>');
const Amount = z.number().positive().max(limits.maxAmount);

// ---- envelope (spec 2.1) ----

export const ErrorBody = z.object({ code: z.string(), message: z.string() });
export type ErrorBody = z.infer<typeof ErrorBody>;

export const Meta = z.looseObject({ timestamp: z.string(), pagination: z.unknown().optional() });

export function envelope<T extends z.ZodType>(data: T) {
  return z.looseObject({ success: z.literal(true), data, meta: Meta, requestId: z.string() });
}
export const FailureEnvelope = z.looseObject({
  success: z.literal(false),
  error: ErrorBody,
  meta: Meta.optional(),
  requestId: z.string().optional(),
});

/** Error codes the sandbox answers with (spec section 7 shows none; our choice). */
export const errorCodes = {
  badRequest: 'VALIDATION_ERROR',
  unauthorized: 'UNAUTHORIZED',
  forbidden: 'FORBIDDEN',
  notFound: 'NOT_FOUND',
  duplicateRef: 'DUPLICATE_REF',
  unsupportedMediaType: 'UNSUPPORTED_MEDIA_TYPE',
  rateLimited: 'RATE_LIMITED',
  internal: 'INTERNAL_ERROR',
} as const;

// ---- 4.1 validate ----

export const ApiKeyType = z.enum(['SANDBOX', 'PRODUCTION']);
export type ApiKeyType = z.infer<typeof ApiKeyType>;
export const KeyInfo = z.looseObject({
  username: z.string(),
  apiKey: z.looseObject({ type: ApiKeyType, scope: z.string(), isEnabled: z.boolean() }),
});
export type KeyInfo = z.infer<typeof KeyInfo>;

// ---- 4.2 / 4.3 mobile ----

export const MobileSendBody = z.strictObject({
  plan_code: PlanCode,
  MSSIDN: LocalNumber,
  amount: Amount,
  ref: Ref,
});
export type MobileSendBody = z.infer<typeof MobileSendBody>;

export const SendResult = z.looseObject({ topupId: z.string(), topupRef: z.string() });
export type SendResult = z.infer<typeof SendResult>;

export const SuggestedPlan = z.looseObject({ plan_code: z.string(), amount: z.number() });
export type SuggestedPlan = z.infer<typeof SuggestedPlan>;

export const MobileCheck = z.looseObject({
  status: ProviderStatus,
  MSSIDN: z.string(),
  topup_amount: z.number(),
  /** Sandbox choice: set on REFUNDED. */
  message: z.string().optional(),
  /** Sandbox choice: set on a plan mismatch. */
  suggested_plans: z.array(SuggestedPlan).optional(),
});
export type MobileCheck = z.infer<typeof MobileCheck>;

// ---- 4.4 / 4.5 internet ----

export const InternetSendBody = z.strictObject({
  type: InternetLineType,
  number: LineNumber,
  value: Amount,
  ref: Ref,
});
export type InternetSendBody = z.infer<typeof InternetSendBody>;

export const InternetCheck = z.looseObject({
  status: ProviderStatus,
  card_code: z.string().optional(),
  num_trans: z.string().optional(),
  message: z.string().optional(),
});
export type InternetCheck = z.infer<typeof InternetCheck>;

// ---- 4.6 - 4.8 gift cards ----

export const CatalogType = z.looseObject({
  typeId: z.string(),
  name: z.string(),
  value: z.number(),
  currency: z.string(),
});
export const CatalogProduct = z.looseObject({
  productId: z.string(),
  name: z.string(),
  types: z.array(CatalogType),
});
export const Catalog = z.looseObject({ products: z.array(CatalogProduct) });
export type Catalog = z.infer<typeof Catalog>;

export const PlaceOrderBody = z.strictObject({
  productId: z.string().min(1).max(64),
  typeId: z.string().min(1).max(64),
  quantity: z.number().int().positive().max(limits.maxQuantity),
});
export type PlaceOrderBody = z.infer<typeof PlaceOrderBody>;

export const PlaceOrderResult = z.looseObject({ orderId: z.string() });
export type PlaceOrderResult = z.infer<typeof PlaceOrderResult>;

export const GiftCard = z.looseObject({ value: z.string(), serial: z.string() });
export type GiftCard = z.infer<typeof GiftCard>;
export const GiftCardOrderCheck = z.looseObject({
  status: ProviderStatus,
  cards: z.array(GiftCard).optional(),
  message: z.string().optional(),
});
export type GiftCardOrderCheck = z.infer<typeof GiftCardOrderCheck>;

/** Mobile numbers with a scripted sandbox outcome (spec section 3). */
export const sandboxSpecialNumbers = {
  refunded: '0600000001',
  planMismatch: '0600000002',
  unknownError: '0600000003',
} as const;
