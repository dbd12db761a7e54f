/**
 * The sandbox's answers to checks: a committed top-up or gift-card order rendered as the provider's
 * check answer as of a time. The status is computed on read from the commit time, the due outcome
 * change (outcome-changes.ts), the scripted outcomes (simulation.ts) and the clock; what a refund
 * left debited comes from the ledger (ledger.ts).
 */
import {
  sandboxTestTypes,
  type GiftCardOrderCheck,
  type InternetCheck,
  type MobileCheck,
  type PlaceOrderBody,
  type SuggestedOffer,
} from '../provider';
import type { ProviderStatus } from '../../contract/provider';
import type { SandboxOffer } from './catalog';
import type { OutcomeChange, OutcomeTarget } from './outcome-changes';
import { roundDinars } from './ledger';
import type { Created, GiftCardOrder, InternetTopup, MobileTopup } from './records';
import {
  sandboxRefundMessages,
  scriptedMobileOutcome,
  settleAfterMs,
  timelineStatus,
  type CodeMaker,
  type Timeline,
  type TimelineFamily,
} from './simulation';

/** What an answer reads of the store. */
export interface AnswerContext {
  /** Multiplies the spec's 5 s / 15 s delays. */
  timeScale: number;
  codes: CodeMaker;
  offer: SandboxOffer;
  /** The outcome change due for the order as of `asOf`, if any. */
  changed(target: OutcomeTarget, asOf: number): OutcomeChange | undefined;
  /** What the ledger refunded of the order as of `asOf`. */
  refundedAsOf(objid: string, asOf: number): number;
}

export function mobileAnswer(ctx: AnswerContext, topup: Created<MobileTopup>, asOf: number): MobileCheck {
  const { id, createdAt, body, debit, timeline } = topup;
  const changed = ctx.changed({ ref: body.ref }, asOf);
  const scripted = topup.operatorDown
    ? { status: 'REFUNDED' as const, refund_message: sandboxRefundMessages.operatorDown }
    : scriptedMobileOutcome(body.MSSIDN);
  const outcome = changed
    ? {
        status: changed.status as ProviderStatus,
        ...(changed.status === 'REFUNDED' && {
          refund_message: changed.refund_message ?? sandboxRefundMessages.reversed,
        }),
      }
    : (scripted ?? { status: status(ctx, createdAt, asOf, 'mobile', timeline) });
  return {
    _id: id,
    ref: body.ref,
    status: outcome.status,
    plan_code: body.plan_code,
    MSSIDN: body.MSSIDN,
    topup_amount: body.amount,
    balance_amount: roundDinars(debit - ctx.refundedAsOf(id, asOf)),
    created_at: new Date(createdAt).toISOString(),
    ...('refund_message' in outcome && outcome.refund_message && { refund_message: outcome.refund_message }),
    ...('suggested_offers' in outcome &&
      outcome.suggested_offers && { suggested_offers: outcome.suggested_offers }),
    ...(outcome.status === 'FULFILLED' &&
      isMenuPlan(body.plan_code) && { suggested_offers: menuOffers(ctx.offer, body.plan_code) }),
  };
}

/**
 * What a GETMENU_<Operator> plan returns (documented: "a number's available offers as
 * suggested_offers"): here, the operator's enabled plans other than the menu itself, a fixed
 * plan with its amount.
 */
function menuOffers(offer: SandboxOffer, menuCode: string): SuggestedOffer[] {
  const menu = offer.findPlan(menuCode);
  const { dynamicPlans, fixedPlans } = offer.plans();
  const offered = (p: { isEnabled: boolean; operator: string; code: string }) =>
    p.isEnabled && p.operator === menu?.plan.operator && !isMenuPlan(p.code);
  return [
    ...fixedPlans.filter(offered).map((p) => ({ typename: p.name, plan_code: p.code, amount: p.amount })),
    ...dynamicPlans.filter(offered).map((p) => ({ typename: p.name, plan_code: p.code })),
  ];
}

export function internetAnswer(
  ctx: AnswerContext,
  topup: Created<InternetTopup>,
  asOf: number,
): InternetCheck {
  const { id, createdAt, body, timeline } = topup;
  const changed = ctx.changed({ ref: body.ref }, asOf);
  const current = changed?.status ?? status(ctx, createdAt, asOf, 'internet', timeline);
  return {
    _id: id,
    ref: body.ref,
    status: current,
    type: body.type,
    number: body.number,
    topup_amount: body.value,
    created_at: new Date(createdAt).toISOString(),
    ...(current === 'FULFILLED' && {
      card_code: ctx.codes.digits(`${id}:card`, 16),
      ...(!changed?.without?.includes('num_trans') && { num_trans: ctx.codes.digits(`${id}:trans`, 12) }),
      date_traitement: new Date(createdAt + settleAfterMs(ctx.timeScale, timeline)).toISOString(),
    }),
    ...(current === 'REFUNDED' && {
      refund_message: changed?.refund_message ?? sandboxRefundMessages.reversed,
    }),
  };
}

export function giftCardAnswer(ctx: AnswerContext, order: GiftCardOrder, asOf: number): GiftCardOrderCheck {
  const { id, createdAt, body, pricePerCard, timeline } = order;
  const changed = ctx.changed({ orderId: id }, asOf);
  const settled = asOf - createdAt >= settleAfterMs(ctx.timeScale, timeline);
  const scripted = settled ? scriptedGiftCardOutcome(body) : undefined;
  const current = changed?.status ?? scripted?.status ?? status(ctx, createdAt, asOf, 'giftCard', timeline);
  const fulfilled =
    current === 'FULFILLED'
      ? body.quantity
      : current === 'PARTIALLY_FILLED'
        ? (scripted?.fulfilled ?? Math.floor(body.quantity / 2))
        : 0;
  return {
    _id: id,
    status: current,
    quantity: body.quantity,
    fulfilled_quantity: fulfilled,
    fulfilled_amount: roundDinars(fulfilled * pricePerCard),
    price_per_card: pricePerCard,
    ...(fulfilled > 0 && {
      cards: Array.from({ length: fulfilled }, (_, i) => ({
        value: ctx.codes.digits(`${id}:card:${i}`, 16),
        serial: `SN${ctx.codes.digits(`${id}:serial:${i}`, 12)}`,
      })),
    }),
    product: body.productId,
    type: body.typeId,
    time: new Date(createdAt).toISOString(),
  };
}

function status(
  ctx: AnswerContext,
  createdAt: number,
  asOf: number,
  family: TimelineFamily,
  timeline?: Timeline,
): ProviderStatus {
  return timelineStatus(asOf - createdAt, ctx.timeScale, family, timeline);
}

/** Documented: `GETMENU_<Operator>` plans return the number's offers. */
function isMenuPlan(code: string): boolean {
  return code.startsWith('GETMENU_');
}

/** The documented sandbox types: TEST_REFUND refunded, TEST_PARTIAL half fulfilled. */
export function scriptedGiftCardOutcome(
  body: PlaceOrderBody,
): { status: 'REFUNDED' | 'PARTIALLY_FILLED'; fulfilled: number } | undefined {
  if (body.typeId === sandboxTestTypes.refund) return { status: 'REFUNDED', fulfilled: 0 };
  if (body.typeId !== sandboxTestTypes.partial) return undefined;
  const fulfilled = Math.floor(body.quantity / 2);
  // Half of one card is none: documented PARTIALLY_FILLED needs 0 < fulfilled < quantity.
  return fulfilled > 0 ? { status: 'PARTIALLY_FILLED', fulfilled } : { status: 'REFUNDED', fulfilled: 0 };
}
