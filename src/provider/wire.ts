/**
 * The provider's /v3 wire formats, written once: what our spec (../shared/spec/provider-api-v3.md)
 * shows, completed by what the provider documents of itself (../shared/spec/provider-v3-documented.md,
 * "the fact sheet"). The client parses answers with these schemas and the sandbox validates its
 * requests and its own answers with them (test/provider/contract.test.ts), so neither can drift
 * from the documented provider.
 *
 * Answers are read leniently: every documented form is accepted (the ⚠ variants of the fact
 * sheet), fields the docs mark optional are optional, and a status nobody documented is kept as
 * the string it is, so the lifecycle can send it to review instead of failing to parse it.
 */
import { z } from 'zod';
import {
  ProviderStatus,
  InternetLineType,
  limits,
  PlanCode,
  type OperatorName,
  operatorNames,
} from '../../contract/provider';
export { operatorNames, OperatorName } from '../../contract/provider';

export const API_PREFIX = '/v3';

/** Refs: letters, digits, `-`, `_`, `.`; so they are safe in a URL path and a workflow ID. */
export const Ref = z
  .string()
  .min(1)
  .max(limits.refMaxLength)
  .regex(/^[A-Za-z0-9._-]+$/, 'ref may contain only letters, digits, ".", "_" and "-"');

/** Any local-looking number: the sandbox's scripted numbers (06000000xx) are accepted with a sandbox key. */
export const LocalNumber = z.string().regex(/^0\d{9}$/, 'expected a local number: 0 followed by 9 digits');
export const LineNumber = z
  .string()
  .regex(
    /^(0[0-9]{8}|213[0-9]{9})$/,
    'expected an ADSL number (0 and 8 digits) or a 4G number (213 and 9 digits)',
  );
const Amount = z.number().positive().max(limits.maxAmount);

// ---- envelope and errors (response-format, error-handling) ----

export const ErrorBody = z.looseObject({
  code: z.string(),
  message: z.string(),
  details: z.unknown().optional(),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

/** `meta` and `requestId` are missing from many documented examples: optional. */
export const Meta = z.looseObject({ timestamp: z.string().optional(), pagination: z.unknown().optional() });

export function envelope<T extends z.ZodType>(data: T) {
  return z.looseObject({
    success: z.literal(true),
    data,
    meta: Meta.optional(),
    requestId: z.string().optional(),
  });
}
export const FailureEnvelope = z.looseObject({
  success: z.literal(false),
  error: ErrorBody,
  requestId: z.string().optional(),
});

/**
 * Error codes. The documented ones first (fact sheet, "Envelope and errors"); the others are the
 * sandbox's own for answers whose code the docs do not show.
 */
export const errorCodes = {
  validation: 'ERR_VALIDATION',
  phone: 'ERR_PHONE',
  missingKey: 'MISSING_ACCESS_TOKEN',
  invalidKey: 'INVALID_ACCESS_TOKEN',
  ipBlocked: 'IP_BLOCKED',
  insufficientBalance: 'INSUFFICIENT_BALANCE',
  duplicatedRef: 'DUPLICATED_REF',
  notFound: 'NOT_FOUND',
  // Not documented (our choice):
  keyDisabled: 'KEY_DISABLED',
  /** The docs show the whitelist's 403 without a code; the sandbox's own, read by status alone. */
  ipNotAllowed: 'IP_NOT_ALLOWED',
  /** The docs do not say what a READ-ONLY key's send answers; the sandbox's 403, read by status. */
  readOnlyKey: 'READ_ONLY_KEY',
  forbidden: 'FORBIDDEN',
  outOfStock: 'OUT_OF_STOCK',
  unsupportedMediaType: 'UNSUPPORTED_MEDIA_TYPE',
  rateLimited: 'RATE_LIMITED',
  internal: 'INTERNAL_ERROR',
} as const;

/** Documented aliases: `ERR_AUTH` for a bad key, `NO_BALANCE` for a short account. */
export const errorCodeAliases: Readonly<Record<string, string>> = {
  ERR_AUTH: errorCodes.invalidKey,
  NO_BALANCE: errorCodes.insufficientBalance,
};

// ---- lists (response-format: data.items + data.pagination; ⚠ meta.pagination; ⚠ data.topups) ----

export const Pagination = z.looseObject({
  page: z.number(),
  pageSize: z.number(),
  totalPages: z.number(),
  totalResults: z.number(),
});
export type Pagination = z.infer<typeof Pagination>;
export const listLimits = { defaultPageSize: 20, maxPageSize: 100 } as const;

/** A page of rows in any documented form, read as `{items, pagination?}`. */
export function listPage<T extends z.ZodType>(row: T) {
  return z.looseObject({
    items: z.array(row).optional(),
    topups: z.array(row).optional(),
    pagination: Pagination.optional(),
  });
}

// ---- account and health ----

export const ApiKeyType = z.enum(['SANDBOX', 'PRODUCTION']);
export type ApiKeyType = z.infer<typeof ApiKeyType>;
export const KeyInfo = z.looseObject({
  username: z.string(),
  apiKey: z.looseObject({
    key: z.string().optional(),
    type: ApiKeyType,
    scope: z.string(),
    isEnabled: z.boolean(),
    allowedips: z.array(z.string()).optional(),
  }),
});
export type KeyInfo = z.infer<typeof KeyInfo>;
/** The documented scopes: a READ-ONLY key may read, never send. */
export const keyScopes = { readWrite: 'READ-WRITE', readOnly: 'READ-ONLY' } as const;
export const KeyScope = z.enum([keyScopes.readWrite, keyScopes.readOnly]);
export type KeyScope = z.infer<typeof KeyScope>;

export const OperatorState = z.enum(['up', 'down']);

/**
 * The operator whose /v3/ping state a plan depends on: Mobilis' fixed plans (neither PREPAID_ nor
 * GROS_) have a state of their own, `mobilisFixedPlans`.
 */
export function operatorOfPlan(plan: { code: string; operator: string }): OperatorName | undefined {
  if (plan.operator === 'mobilis' && !plan.code.startsWith('PREPAID_') && !plan.code.startsWith('GROS_'))
    return 'mobilisFixedPlans';
  return operatorNames.find((name) => name === plan.operator);
}
export const Ping = z.looseObject({
  api: z.string(),
  operators: z.record(z.string(), z.string()),
});
export type Ping = z.infer<typeof Ping>;

export const Balance = z.looseObject({ balance: z.number(), currency: z.string().optional() });
export type Balance = z.infer<typeof Balance>;

export const Transaction = z.looseObject({
  _id: z.string(),
  type: z.string(),
  operation: z.string().optional(),
  amount: z.number(),
  oldBalance: z.number(),
  newBalance: z.number(),
  objid: z.string().optional(),
  note: z.string().optional(),
  time: z.string(),
});
export type Transaction = z.infer<typeof Transaction>;
export const TransactionPage = listPage(Transaction);

// ---- mobile ----

const PlanBase = {
  code: z.string(),
  name: z.string(),
  operator: z.string(),
  /** A wholesale multiplier (0.98 = 98 % of face value); never shown to end users. */
  cost: z.number().optional(),
  isEnabled: z.boolean(),
};
export const DynamicPlan = z.looseObject({ ...PlanBase, min_amount: z.number(), max_amount: z.number() });
export type DynamicPlan = z.infer<typeof DynamicPlan>;
export const FixedPlan = z.looseObject({ ...PlanBase, amount: z.number() });
export type FixedPlan = z.infer<typeof FixedPlan>;
export const MobilePlans = z.looseObject({
  dynamicPlans: z.array(DynamicPlan),
  fixedPlans: z.array(FixedPlan),
});
export type MobilePlans = z.infer<typeof MobilePlans>;

/** The documented body: `amount` only for dynamic plans, `ref` optional (the provider makes one up). */
export const MobileSendBody = z.strictObject({
  plan_code: PlanCode,
  MSSIDN: LocalNumber,
  amount: Amount.optional(),
  ref: Ref.optional(),
});
export type MobileSendBody = z.infer<typeof MobileSendBody>;

export const SendResult = z.looseObject({ topupId: z.string(), topupRef: z.string() });
export type SendResult = z.infer<typeof SendResult>;

export const SuggestedOffer = z.looseObject({
  typename: z.string().optional(),
  plan_code: z.string(),
  amount: z.number().optional(),
});
export type SuggestedOffer = z.infer<typeof SuggestedOffer>;

/**
 * check-id and check-ref answer alike: the ids are `_id` / `ref` (not topupId / topupRef).
 * Only the status is required: a field missing from an answer is the lifecycle's to judge.
 */
export const MobileCheck = z.looseObject({
  _id: z.string().optional(),
  ref: z.string().optional(),
  status: ProviderStatus,
  plan_code: z.string().optional(),
  MSSIDN: z.string().optional(),
  topup_amount: z.number().optional(),
  /** What was debited; 0 after a refund. */
  balance_amount: z.number().optional(),
  created_at: z.string().optional(),
  /** Arabic text meant for the end user, on REFUNDED and UNKNOWN_ERROR. */
  refund_message: z.string().optional(),
  /** Offers to send instead, on a plan mismatch (and for GETMENU_ plans). */
  suggested_offers: z.array(SuggestedOffer).optional(),
  follow_orderid: z.string().optional(),
  retry_orderid: z.string().optional(),
});
export type MobileCheck = z.infer<typeof MobileCheck>;
export const MobileTopupPage = listPage(MobileCheck);

// ---- internet ----

export const InternetProduct = z.looseObject({
  value: z.number(),
  cost: z.number(),
  available: z.boolean(),
});
export type InternetProduct = z.infer<typeof InternetProduct>;
/** `{type?, products}`, or (⚠ Arabic guide) a bare array of products. */
export const InternetProducts = z.union([
  z.looseObject({ type: z.string().optional(), products: z.array(InternetProduct) }),
  z.array(InternetProduct).transform((products) => ({ products })),
]);
export type InternetProducts = z.infer<typeof InternetProducts>;

/** ⚠ answers `type: "4GLTE"` for a `4G` request. */
export const NumberCheck = z.looseObject({
  ncli: z.string(),
  offre: z.string().optional(),
  type: z.string(),
});
export type NumberCheck = z.infer<typeof NumberCheck>;

export const InternetSendBody = z.strictObject({
  type: InternetLineType,
  number: LineNumber,
  value: Amount,
  ref: Ref.optional(),
});
export type InternetSendBody = z.infer<typeof InternetSendBody>;

export const InternetCheck = z.looseObject({
  _id: z.string().optional(),
  ref: z.string().optional(),
  status: ProviderStatus,
  type: z.string().optional(),
  number: z.string().optional(),
  topup_amount: z.number().optional(),
  card_code: z.string().optional(),
  /** Algérie Télécom's transaction number. */
  num_trans: z.string().optional(),
  date_traitement: z.string().optional(),
  created_at: z.string().optional(),
  refund_message: z.string().optional(),
});
export type InternetCheck = z.infer<typeof InternetCheck>;
export const InternetTopupPage = listPage(InternetCheck);

// ---- gift cards ----

export const CatalogProduct = z
  .looseObject({
    id: z.string(),
    title: z.string().optional(),
    /** ⚠ the guide says `name`. */
    name: z.string().optional(),
    enabled: z.boolean(),
    region: z.string().optional(),
  })
  .transform(({ name, title, ...rest }) => ({ ...rest, title: title ?? name ?? rest.id }));
export type CatalogProduct = z.infer<typeof CatalogProduct>;
export const CatalogCategory = z
  .looseObject({
    title: z.string().optional(),
    /** ⚠ the guide says `name`. */
    name: z.string().optional(),
    products: z.array(CatalogProduct),
  })
  .transform(({ name, title, ...rest }) => ({ ...rest, title: title ?? name ?? '' }));
export type CatalogCategory = z.infer<typeof CatalogCategory>;
/** `totalCategories` / `totalProducts` sit beside `data` (⚠ or in `meta`): not needed, not read. */
export const Catalog = z.looseObject({ categories: z.array(CatalogCategory) });
export type Catalog = z.infer<typeof Catalog>;

export const ProductType = z
  .looseObject({
    id: z.string().optional(),
    /** ⚠ the Arabic guide shows `_id`. */
    _id: z.string().optional(),
    name: z.string(),
    /** The account's price per card, DZD. */
    price: z.number(),
    /** Stock; 0 = out of stock. */
    quantity: z.number(),
  })
  .refine((type) => type.id !== undefined || type._id !== undefined, 'a type needs an id')
  .transform(({ _id, id, ...rest }) => ({ ...rest, id: (id ?? _id) as string }));
export type ProductType = z.infer<typeof ProductType>;
export const ProductDetails = z
  .looseObject({
    productId: z.string().optional(),
    _id: z.string().optional(),
    productTitle: z.string().optional(),
    types: z.array(ProductType),
  })
  .transform(({ _id, productId, ...rest }) => ({ ...rest, productId: productId ?? _id }));
export type ProductDetails = z.infer<typeof ProductDetails>;

/** No `ref`: a placement cannot be looked up by anything of ours. */
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
  _id: z.string().optional(),
  status: ProviderStatus,
  quantity: z.number().optional(),
  fulfilled_quantity: z.number().optional(),
  fulfilled_amount: z.number().optional(),
  price_per_card: z.number().optional(),
  cards: z.array(GiftCard).optional(),
  product: z.unknown().optional(),
  type: z.unknown().optional(),
  time: z.string().optional(),
});
export type GiftCardOrderCheck = z.infer<typeof GiftCardOrderCheck>;
export const GiftCardOrderPage = listPage(GiftCardOrderCheck);

/** Mobile numbers with a scripted sandbox outcome (spec section 3; the docs show the first two). */
export const sandboxSpecialNumbers = {
  refunded: '0600000001',
  planMismatch: '0600000002',
  unknownError: '0600000003',
} as const;

/**
 * Our header on a gift-card placement: the order's ref. The provider documents no such field and
 * ignores unknown headers; placeOrder takes no ref of ours, so this is informational only (the
 * sandbox keeps it, so a test can tell which order a placement was). Never a secret or personal data.
 */
export const CLIENT_REFERENCE_HEADER = 'x-client-reference';

/** Gift-card types with a scripted sandbox outcome (fact sheet, gift cards). */
export const sandboxTestTypes = { refund: 'TEST_REFUND', partial: 'TEST_PARTIAL' } as const;
