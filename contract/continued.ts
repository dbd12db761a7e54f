/**
 * The order's continue-as-new input as a data contract between worker versions.
 *
 * Orders run pinned to a worker version, and one waiting long moves to the current version by
 * continuing as new (src/orders/lifecycle/continue-as-new.workflow.ts): the run that writes this input is the
 * old version's code and the run that reads it is the new one's. So a new version must read every
 * input the versions before it write. This schema is what the current version reads; the inputs
 * recorded by earlier versions (test/fixtures/continued-inputs/) must parse under it
 * (test/contract/continued.test.ts). Make a field required, rename one or narrow a value, and those
 * fixtures fail: give the field a default in the workflow instead, or keep reading the old shape.
 *
 * Validation only, for tests and tools: workflows take the TypeScript types (no zod at run time).
 */
import { z } from 'zod';
import { OrderRequest, OrderStatus, OrderType, ReviewDecisionPayload } from './schemas';

const isoTime = z.string().min(1);
const providerStatus = z.string().min(1);
const providerAnswer = z.object({ status: providerStatus.optional(), answer: z.string() });

const timings = z
  .object({
    firstCheckMs: z.number(),
    handlingCheckMs: z.number(),
    maxIntervalMs: z.number(),
    deadlineMs: z.number(),
    activityTimeoutMs: z.number(),
    reviewRecheckMs: z.number(),
    reviewWatchMs: z.number(),
    reviewWatchFirstCheckMs: z.number(),
    settleMs: z.number(),
    maxHoldMs: z.number(),
    queuedRecheckMs: z.number(),
    queuedDeadlineMs: z.number(),
  })
  .partial();

const view = z.object({
  ref: z.string(),
  type: OrderType,
  client: z.string().optional(),
  status: OrderStatus,
  providerStatus: providerStatus.optional(),
  request: OrderRequest,
  providerReference: z.string().optional(),
  result: z
    .object({
      msisdn: z.string().optional(),
      amount: z.number().optional(),
      cardCode: z.string().optional(),
      transactionNumber: z.string().optional(),
      cards: z.array(z.object({ code: z.string(), serial: z.string() })).optional(),
      refundMessage: z.string().optional(),
      suggestedOffers: z
        .array(
          z.object({ planCode: z.string(), amount: z.number().optional(), typename: z.string().optional() }),
        )
        .optional(),
      partial: z
        .object({
          quantity: z.number(),
          fulfilledQuantity: z.number(),
          refundedQuantity: z.number(),
          fulfilledAmount: z.number().optional(),
          refundedAmount: z.number().optional(),
        })
        .optional(),
      debit: z
        .object({
          amount: z.number(),
          source: z.enum(['balance_amount', 'fulfilled_amount', 'price_per_card']),
          pricePerCard: z.number().optional(),
        })
        .optional(),
    })
    .optional(),
  failure: z.object({ code: z.string(), message: z.string() }).optional(),
  hold: z
    .object({
      reason: z.enum(['balance', 'operator']),
      operator: z.string().optional(),
      required: z.number().optional(),
      available: z.number().optional(),
      since: isoTime,
      until: isoTime,
      resumedAt: isoTime.optional(),
    })
    .optional(),
  review: z
    .object({
      reason: z.string(),
      evidence: z.string().optional(),
      refundMessage: z.string().optional(),
      since: isoTime,
      resolution: ReviewDecisionPayload.and(
        z.object({ at: isoTime, provider: providerAnswer.optional(), forcedPast: z.string().optional() }),
      ).optional(),
    })
    .optional(),
  watch: z
    .object({
      decision: z.enum(['FULFILLED', 'REFUNDED']),
      until: isoTime,
      lastCheck: providerAnswer.extend({ at: isoTime }).optional(),
      ended: z.object({ at: isoTime, outcome: z.enum(['confirmed', 'quiet', 'disputed']) }).optional(),
    })
    .optional(),
  dispute: z
    .object({
      decision: z.enum(['FULFILLED', 'REFUNDED']),
      providerStatus: z.enum(['FULFILLED', 'REFUNDED', 'PARTIALLY_FILLED']),
      reportedAt: isoTime,
      reconciliation: z.string().optional(),
    })
    .optional(),
  acceptedAt: isoTime,
  updatedAt: isoTime,
  completedAt: isoTime.optional(),
  timeline: z.array(z.object({ at: isoTime, status: OrderStatus, event: z.string() })).min(1),
});

/** `OrderInput.continued`: the state one run hands the next. */
export const OrderContinuationSchema = z.object({
  view,
  deadlineAt: z.number(),
  nextCheckMs: z.number(),
  eventSequence: z.number().int().nonnegative().optional(),
  webhookDurable: z.union([z.array(z.string()), z.literal('all')]).optional(),
  watch: z
    .object({
      decision: z.enum(['FULFILLED', 'REFUNDED']),
      baseline: providerStatus.optional(),
      untilMs: z.number(),
      nextCheckMs: z.number(),
    })
    .optional(),
  recordsWindow: z.object({ from: z.number(), to: z.number(), settleMs: z.number() }).optional(),
});

/** The whole first argument of a continued run (`resumed` and `reconciled` are dropped by then). */
export const ContinuedOrderInputSchema = z.object({
  request: OrderRequest,
  acceptedAt: isoTime,
  clientId: z.string().optional(),
  providerRef: z.string().optional(),
  timings: timings.optional(),
  webhooks: z.boolean().optional(),
  historyEventLimit: z.number().optional(),
  continued: OrderContinuationSchema,
});
