/**
 * The order's view as its workflow keeps it: the single source for the TypeScript types the
 * workflows use (contract/order.ts re-exports them, `import type`: no zod in the workflow bundle)
 * and for the API's OrderView (src/http/schemas.ts adds what the API knows of the order besides:
 * its workflow, its masked request, its Temporal status). A `.meta` id names the schema's
 * component in the OpenAPI document.
 */
import { z } from 'zod';
import { OrderRequest, OrderStatus, OrderType, ReviewDecisionPayload } from './schemas';
import { ProviderStatus } from './provider';

export const IsoTime = z.iso.datetime({ offset: true });

export const TimelineEntry = z
  .object({
    at: IsoTime,
    status: OrderStatus,
    event: z.string().meta({ description: 'Short, human-readable; never a card code or a phone number.' }),
  })
  .meta({ id: 'TimelineEntry' });
export type TimelineEntry = z.infer<typeof TimelineEntry>;

export const OrderDebit = z
  .object({
    amount: z.number().meta({ description: 'DZD the provider debited (0 when it refunded it all).' }),
    source: z.enum(['balance_amount', 'fulfilled_amount', 'price_per_card']).meta({
      description:
        'The field of the provider’s answer it comes from (`price_per_card`: the price × the cards delivered).',
    }),
    pricePerCard: z.number().optional().meta({ description: 'Gift cards: the price per card.' }),
  })
  .meta({ description: 'What the provider debited for the order, when its answer says.' });
/** What the provider debited for an order (DZD; 0 when it refunded all of it) and where it says so. */
export type OrderDebit = z.infer<typeof OrderDebit>;

const PartialFill = z
  .object({
    quantity: z.number().int().meta({ description: 'Cards ordered.' }),
    fulfilledQuantity: z.number().int().meta({ description: 'Cards delivered (in `cards`).' }),
    refundedQuantity: z.number().int().meta({ description: 'Cards the provider refunded.' }),
    fulfilledAmount: z.number().optional().meta({ description: 'DZD debited for the delivered cards.' }),
    refundedAmount: z.number().optional().meta({ description: 'DZD refunded for the rest.' }),
  })
  .meta({
    description:
      'PARTIALLY_FULFILLED gift cards: the provider delivered part of the order and refunded the rest.',
  });

export const OrderResult = z
  .object({
    msisdn: z
      .string()
      .optional()
      .meta({ description: 'Mobile: the number credited; "[masked]" unless yours.' }),
    amount: z.number().optional(),
    cardCode: z.string().optional().meta({
      description:
        'Internet top-ups: the recharge code; "[masked]" for a reader other than the order’s owner.',
    }),
    transactionNumber: z.string().optional(),
    cards: z
      .array(z.object({ code: z.string(), serial: z.string() }))
      .optional()
      .meta({
        description:
          'Gift cards: one entry per card; codes read "[masked]" for a reader other than the order’s owner.',
      }),
    refundMessage: z
      .string()
      .optional()
      .meta({
        description:
          'REFUNDED: the provider’s reason, Arabic text meant for your customer (its `refund_message`); ' +
          'to a reader other than the order’s owner, its runs of six or more digits read "[masked]".',
      }),
    suggestedOffers: z
      .array(
        z.object({ planCode: z.string(), amount: z.number().optional(), typename: z.string().optional() }),
      )
      .optional()
      .meta({
        description:
          'The provider’s `suggested_offers`: on a REFUNDED plan mismatch, plans to send instead; on a ' +
          '`GETMENU_<Operator>` plan, the number’s available offers.',
      }),
    partial: PartialFill.optional(),
    debit: OrderDebit.optional(),
  })
  .meta({ id: 'OrderResult' });
export type OrderResult = z.infer<typeof OrderResult>;

const Settled = z.enum(['FULFILLED', 'REFUNDED']);

export const ProviderAnswer = z
  .object({
    status: ProviderStatus.optional().meta({ description: 'The provider’s status, when it knew the order.' }),
    answer: z.string().meta({
      description:
        'What the provider answered, in words: `provider status HANDLING`, `the provider does not know the order`, a failed check.',
    }),
  })
  .meta({ id: 'ProviderAnswer', description: 'What the provider said when it was asked.' });
export type ProviderAnswer = z.infer<typeof ProviderAnswer>;

export const ReviewResolution = ReviewDecisionPayload.safeExtend({
  at: IsoTime.meta({ description: 'When the workflow applied the decision.' }),
  provider: ProviderAnswer.optional().meta({
    description: 'What the provider said when the decision was checked.',
  }),
  forcedPast: z.string().optional().meta({
    description: 'Set when `force` applied a decision the check would have refused: why it would have.',
  }),
}).meta({ id: 'ReviewResolution', description: 'The operator decision that settled the order.' });
export type ReviewResolution = z.infer<typeof ReviewResolution>;

export const OrderHold = z
  .object({
    reason: z.enum(['balance', 'operator']).meta({
      description:
        '`balance`: the provider account’s balance does not cover the order; `operator`: the provider reports the order’s operator down.',
    }),
    operator: z.string().optional().meta({ description: '`operator`: the operator /v3/ping reports down.' }),
    required: z.number().optional().meta({ description: 'What the order needs, DZD, as the provider said.' }),
    available: z.number().optional().meta({ description: 'What the account held then, DZD.' }),
    since: IsoTime.meta({ description: 'When the order was first held.' }),
    until: IsoTime.meta({ description: 'Still held then, the order ends FAILED (`NOT_SENT`).' }),
    resumedAt: IsoTime.optional().meta({ description: 'When it was last let go to be sent.' }),
  })
  .meta({
    description:
      'HELD (and after): the order waited before it was sent because the account could not take it. Nothing is sent while held.',
  });
export type OrderHold = z.infer<typeof OrderHold>;

/** The view the order's workflow keeps and answers its status query with (contract/order.ts `OrderView`). */
export const WorkflowOrderView = z.object({
  ref: z.string(),
  client: z.string().optional().meta({
    description:
      'The client that submitted the order and owns it (absent in orders started before clients existed).',
  }),
  type: OrderType,
  status: OrderStatus,
  providerStatus: ProviderStatus.optional(),
  request: OrderRequest,
  providerReference: z
    .string()
    .optional()
    .meta({ description: 'The provider’s identifier: the topupId of a top-up, the orderId of a gift card.' }),
  result: OrderResult.optional(),
  failure: z.object({ code: z.string(), message: z.string() }).optional().meta({
    description:
      'FAILED: why. `NOT_SENT`: the order was HELD (see `hold`) until its maximum hold and never sent; nothing was debited.',
  }),
  hold: OrderHold.optional(),
  review: z
    .object({
      reason: z.string(),
      evidence: z.string().optional().meta({
        description: 'What was known when review was asked for (the provider’s answer, the error).',
      }),
      refundMessage: z.string().optional().meta({
        description:
          'UNKNOWN_ERROR: the provider’s `refund_message` as it gave it (Arabic text meant for the end user).',
      }),
      since: IsoTime,
      resolution: ReviewResolution.optional(),
    })
    .optional(),
  watch: z
    .object({
      decision: Settled,
      until: IsoTime,
      lastCheck: ProviderAnswer.extend({ at: IsoTime }).optional(),
      ended: z
        .object({ at: IsoTime, outcome: z.enum(['confirmed', 'quiet', 'disputed']) })
        .optional()
        .meta({
          description:
            'How it ended: the provider confirmed the decision, the window passed quietly, or it disagreed.',
        }),
    })
    .optional()
    .meta({
      description:
        'After an operator decision the provider had not confirmed: the provider is checked until `until` ' +
        '(the workflow stays open meanwhile); a contradicting answer makes the order DISPUTED.',
    }),
  dispute: z
    .object({
      decision: Settled,
      providerStatus: z.enum(['FULFILLED', 'REFUNDED', 'PARTIALLY_FILLED']),
      reportedAt: IsoTime,
      reconciliation: z.string().optional().meta({
        description: 'Found by the nightly reconciliation of this day (YYYY-MM-DD), not by the watch.',
      }),
    })
    .optional()
    .meta({
      description:
        'DISPUTED: the provider’s later answer against the operator decision, or against the order’s final ' +
        'status when the nightly reconciliation found it (`decision`: FULFILLED for a fulfilled order, REFUNDED for a refunded or failed one).',
    }),
  acceptedAt: IsoTime,
  updatedAt: IsoTime,
  completedAt: IsoTime.optional(),
  timeline: z.array(TimelineEntry),
});
export type WorkflowOrderView = z.infer<typeof WorkflowOrderView>;
