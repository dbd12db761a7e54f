/**
 * The order request and review decision schemas: the single source for the intake API's
 * validation, the TypeScript types the workflows use (`import type`) and the OpenAPI document.
 */
import { z } from 'zod';
import { providerOrderIdPattern, reviewDecisions, reviewTextMaxLength } from './review-decision';
import { InternetLineType, lineNumberPatterns, limits, mobileNumberPattern, PlanCode } from './provider';

export const orderTypes = ['mobile_topup', 'internet_topup', 'gift_card'] as const;
export const OrderType = z.enum(orderTypes);
export type OrderType = z.infer<typeof OrderType>;

export const orderStatuses = [
  'ACCEPTED',
  'HELD',
  'SUBMITTED',
  'PROCESSING',
  'QUEUED',
  'FULFILLED',
  'PARTIALLY_FULFILLED',
  'REFUNDED',
  'FAILED',
  'CANCELLED',
  'NEEDS_REVIEW',
  'DISPUTED',
] as const;
export const OrderStatus = z.enum(orderStatuses);
export type OrderStatus = z.infer<typeof OrderStatus>;

/** DZD amounts are whole dinars here: the provider shows no sub-unit. */
const Dinars = z.number().int().positive().max(limits.maxAmount);

/**
 * The client's order reference: the idempotency key, part of the workflow ID and of the order's URL.
 * A subset of the provider's Ref that must also start with a letter or digit, so `.` and `..`
 * (path segments a URL resolver collapses) and option-like `-x` are refused. One pattern, so the
 * OpenAPI document states the whole rule.
 */
export const OrderRef = z
  .string()
  .min(1)
  .max(limits.refMaxLength)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
    'ref: letters, digits, ".", "_" and "-", starting with a letter or digit',
  )
  .meta({
    description: 'Your unique reference for the order; submitting it again is idempotent.',
    example: 'ORD-2025-000123',
  });

/** The provider's documented MSSIDN rule; the sandbox's scripted numbers (06000000xx) fit it too. */
const MobileNumber = z
  .string()
  .regex(mobileNumberPattern, 'expected a mobile number: 0, then 5, 6 or 7, then 8 digits')
  .meta({ example: '0551234567' });

export const MobileTopupRequest = z
  .strictObject({
    type: z.literal('mobile_topup'),
    ref: OrderRef,
    planCode: PlanCode.meta({
      description: 'A plan code from the provider’s plans (e.g. PREPAID_DJEZZY, PIXX_500).',
    }),
    msisdn: MobileNumber,
    amount: Dinars.optional().meta({
      description:
        'Required for a dynamic plan, within its bounds; absent for a fixed plan (it has its own).',
    }),
  })
  .meta({
    id: 'MobileTopupRequest',
    description:
      'A mobile top-up: credit `amount` dinars (or a fixed plan’s own amount) on `msisdn` under `planCode`. ' +
      'A plan the provider does not list or has disabled, or an amount outside its bounds, is refused with 422.',
    examples: [
      {
        type: 'mobile_topup',
        ref: 'ORD-2025-000123',
        planCode: 'PREPAID_DJEZZY',
        msisdn: '0551234567',
        amount: 500,
      },
    ],
  });
export type MobileTopupRequest = z.infer<typeof MobileTopupRequest>;

export const InternetTopupRequest = z
  .strictObject({
    type: z.literal('internet_topup'),
    ref: OrderRef,
    lineType: InternetLineType,
    number: z
      .string()
      .regex(
        /^(0[0-9]{8}|213[0-9]{9})$/,
        'expected an ADSL number (0 and 8 digits) or a 4G number (213 and 9 digits)',
      ),
    value: Dinars,
  })
  .superRefine((request, context) => {
    const pattern = lineNumberPatterns[request.lineType] as RegExp | undefined;
    // An unknown line type or a malformed number is reported by its own field's rule.
    if (pattern && typeof request.number === 'string' && !pattern.test(request.number)) {
      context.addIssue({
        code: 'custom',
        path: ['number'],
        message:
          request.lineType === 'ADSL'
            ? 'an ADSL number is 0 and 8 digits (e.g. 021123456)'
            : 'a 4G number is 213 and 9 digits (e.g. 213472731602)',
      });
    }
  })
  .meta({
    id: 'InternetTopupRequest',
    description:
      'An internet-line top-up (ADSL or 4G) of `value` dinars on line `number`: ADSL `0` + 8 digits, 4G `213` + 9 ' +
      'digits. A value the provider does not sell for that line type, or has run out of, is refused with 422.',
    examples: [
      { type: 'internet_topup', ref: 'ORD-2025-000124', lineType: 'ADSL', number: '021123456', value: 1000 },
    ],
  });
export type InternetTopupRequest = z.infer<typeof InternetTopupRequest>;

export const GiftCardRequest = z
  .strictObject({
    type: z.literal('gift_card'),
    ref: OrderRef,
    productId: z.string().min(1).max(64),
    typeId: z.string().min(1).max(64),
    quantity: z.number().int().positive().max(limits.maxQuantity),
  })
  .meta({
    id: 'GiftCardRequest',
    description: '`quantity` gift cards of one product type from the catalog (GET /v1/gift-cards/catalog).',
    examples: [
      {
        type: 'gift_card',
        ref: 'ORD-2025-000125',
        productId: 'GOOGLE_PLAY',
        typeId: 'GOOGLE_PLAY_1000',
        quantity: 2,
      },
    ],
  });
export type GiftCardRequest = z.infer<typeof GiftCardRequest>;

export const OrderRequest = z
  .discriminatedUnion('type', [MobileTopupRequest, InternetTopupRequest, GiftCardRequest])
  .meta({ id: 'OrderRequest', description: 'An order, discriminated by `type`.' });
export type OrderRequest = z.infer<typeof OrderRequest>;

/** Blank is refused with its own message (and the pattern shows in the OpenAPI document). */
const OperatorText = (max: number) => z.string().max(max).regex(/\S/, 'must not be blank').trim();

/** The decision's fields an operator sends. */
const decisionFields = {
  decision: z.enum(reviewDecisions),
  operator: OperatorText(reviewTextMaxLength.operator).meta({
    description: 'Who decides, as shown in the timeline (a display name).',
  }),
  note: OperatorText(reviewTextMaxLength.note).meta({ description: 'Why: kept in the order’s history.' }),
  force: z
    .boolean()
    .optional()
    .meta({
      description:
        'Apply a FULFILLED or REFUNDED decision although the provider contradicts it or cannot confirm it; ' +
        'the history records that it was forced and what the provider said. Not with RECHECK.',
    }),
  orderId: z
    .string()
    .regex(providerOrderIdPattern, 'expected the provider’s order id: 1–64 letters, digits, ".", "_" or "-"')
    .optional()
    .meta({
      description:
        'Gift cards only: the provider’s order id for this order (e.g. after a placement whose answer was ' +
        'lost). The order is checked and, FULFILLED, its cards are delivered.',
      example: '5f1c0a9e8b7d6c5b4a392817',
    }),
};

/** RECHECK asks the provider again: there is nothing to force. */
function forceOnlyWithAnOutcome(value: { decision: string; force?: boolean }): boolean {
  return !(value.force === true && value.decision === 'RECHECK');
}
const forceRule = { path: ['force'], message: 'force applies to FULFILLED or REFUNDED, not RECHECK' };

/**
 * The review route's body. Who decides is the authenticated caller (sent on as `decidedBy`), not a
 * field: `operator` is only the display name stored beside it (the client's name when absent).
 */
export const ReviewRequest = z
  .strictObject({
    ...decisionFields,
    operator: decisionFields.operator
      .optional()
      .meta({ description: 'Display name of the person deciding; default: the client’s name.' }),
    force: decisionFields.force.meta({
      description:
        'Apply a FULFILLED or REFUNDED decision although the provider contradicts it or cannot confirm it; ' +
        'the history records that it was forced and what the provider said. Not with RECHECK. A client with ' +
        'the operator role only (403 naming `force` otherwise): the back office a refund pays does not force it.',
    }),
  })
  .refine(forceOnlyWithAnOutcome, forceRule)
  .meta({
    id: 'ReviewRequest',
    description:
      'An operator decision on an order in NEEDS_REVIEW or DISPUTED, checked against the provider before it ' +
      'applies; RECHECK asks the provider again.',
    examples: [{ decision: 'FULFILLED', operator: 'amina.b', note: 'Provider confirmed delivery by phone.' }],
  });
/** A decision as an operator sends it to the API. */
export type ReviewRequest = z.infer<typeof ReviewRequest>;

/**
 * What the workflows receive (the `resolveReview` signal, typed by operators in Temporal UI or the
 * CLI, or the `decideReview` update the API sends): the decision, with `decidedBy` (the
 * authenticated caller's id) when the API sends it. The workflows check it with
 * checkReviewDecision (no zod in the workflow bundle); a test keeps the two equal.
 */
export const ReviewDecisionPayload = z
  .strictObject({
    ...decisionFields,
    decidedBy: OperatorText(reviewTextMaxLength.decidedBy)
      .optional()
      .meta({ description: 'The API client that sent the decision (absent from Temporal UI and the CLI).' }),
  })
  .refine(forceOnlyWithAnOutcome, forceRule);
/** A decision as the workflows see it (decidedBy included). */
export type ReviewDecision = z.infer<typeof ReviewDecisionPayload>;
