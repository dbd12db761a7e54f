/**
 * What a chaos run submits: a seeded mix of the three order types, the sandbox's special mobile
 * numbers, and deliberate repeats — the same body again (must answer 200, the same order), a
 * different body under the same ref (must answer 409) and two identical submissions at once
 * (one order). Each order carries the outcome the sandbox gives it when nothing goes wrong.
 */
import type { OrderRequest, OrderStatus } from '../../contract/schemas';
import { operatorOfPlan, sandboxSpecialNumbers, type OperatorName } from '../../src/provider/wire';
import { SandboxOffer, sandboxDynamicPlans } from '../../src/sandbox/catalog';
import type { Random } from './random';

export type Special = keyof typeof sandboxSpecialNumbers;

export interface Expectation {
  status: Extract<OrderStatus, 'FULFILLED' | 'REFUNDED' | 'NEEDS_REVIEW'>;
  /** Spec section 3's scripted outcomes, and what the view must show for them. */
  special?: Special;
}

export interface PlannedOrder {
  request: OrderRequest;
  expected: Expectation;
  /** When to submit it, from the start of its phase. */
  atMs: number;
  /** Submitted after the chaos (faults cleared, no kills): it must end exactly as expected. */
  control: boolean;
  /** Submit the same body again this long after it was accepted (expect 200). */
  repeatAfterMs?: number;
  /** Submit a different body under the same ref this long after it was accepted (expect 409). */
  conflictAfterMs?: number;
  /** Submit it twice at the same moment (expect one order: at most one 201, the other 200). */
  race: boolean;
}

const specials: readonly Special[] = ['refunded', 'planMismatch', 'unknownError'];
const plans = ['PREPAID_MOBILIS', 'PREPAID_DJEZZY', 'PREPAID_OOREDOO'] as const;
/** The operator /v3/ping reports for a mobile plan of the mix (the one the send gate asks about). */
export function operatorOfPlanCode(planCode: string): OperatorName | undefined {
  const plan = sandboxDynamicPlans.find((p) => p.code === planCode);
  return plan && operatorOfPlan(plan);
}
/** The sandbox's offer as it starts: internet values and gift-card products that exist. */
const offer = new SandboxOffer();
const giftProducts = offer.catalog().categories.flatMap((category) => category.products);

function digits(rng: Random, count: number): string {
  return Array.from({ length: count }, () => rng.int(0, 9)).join('');
}

function expectationOf(special: Special | undefined): Expectation {
  if (!special) return { status: 'FULFILLED' };
  return { status: special === 'unknownError' ? 'NEEDS_REVIEW' : 'REFUNDED', special };
}

function randomRequest(
  rng: Random,
  ref: string,
  type: OrderRequest['type'],
  special?: Special,
): OrderRequest {
  switch (type) {
    case 'mobile_topup':
      return {
        type,
        ref,
        planCode: rng.pick(plans),
        // Normal numbers start 05: they can never be one of the 06000000xx special numbers.
        msisdn: special ? sandboxSpecialNumbers[special] : `05${digits(rng, 8)}`,
        // Within every one of these plans' bounds (the smallest maximum is 3,999).
        amount: rng.int(1, 39) * 100,
      };
    case 'internet_topup': {
      const lineType = rng.pick(['ADSL', '4G'] as const);
      return {
        type,
        ref,
        lineType,
        // The documented forms: ADSL 0 and 8 digits, 4G 213 and 9 digits.
        number: lineType === 'ADSL' ? `02${digits(rng, 7)}` : `213${digits(rng, 9)}`,
        value: rng.pick(offer.internetProducts(lineType).map((product) => product.value)),
      };
    }
    case 'gift_card': {
      const product = rng.pick(giftProducts);
      // The sandbox's test types end REFUNDED or PARTIALLY_FILLED, not as expected here.
      const types = offer.productDetails(product.id)?.types.filter((t) => !t.id.startsWith('TEST_')) ?? [];
      return {
        type,
        ref,
        productId: product.id,
        typeId: rng.pick(types).id,
        quantity: rng.int(1, 3),
      };
    }
  }
}

/** The same ref with one field changed: a different order, which the API must refuse with 409. */
export function conflictingBody(request: OrderRequest): OrderRequest {
  switch (request.type) {
    case 'mobile_topup':
      return { ...request, amount: request.amount === 100 ? 200 : (request.amount ?? 300) - 100 };
    case 'internet_topup':
      return { ...request, value: request.value === 1_000 ? 500 : 1_000 }; // both offered for ADSL and 4G
    case 'gift_card':
      return { ...request, quantity: (request.quantity % 3) + 1 };
  }
}

/** `count` distinct indices below `n` (fewer when n is smaller). */
function someIndices(rng: Random, n: number, count: number): Set<number> {
  const chosen = new Set<number>();
  while (chosen.size < Math.min(n, count)) chosen.add(rng.int(0, n - 1));
  return chosen;
}

/**
 * `count` orders spread evenly over `spreadMs`. Each special number appears at least once,
 * about 2 % of orders each; repeats, conflicts and races hit about 10 %, 4 % and 3 % of orders
 * (at least 2, 1 and 1), so a short run exercises every case.
 */
export function planOrders(
  rng: Random,
  options: { count: number; spreadMs: number; refPrefix: string; control: boolean },
): PlannedOrder[] {
  const { count, spreadMs, refPrefix, control } = options;
  const forcedSpecials = [...someIndices(rng, count, specials.length)];
  const repeats = someIndices(rng, count, Math.max(2, Math.round(count * 0.1)));
  const conflicts = someIndices(rng, count, Math.max(1, Math.round(count * 0.04)));
  const races = someIndices(rng, count, Math.max(1, Math.round(count * 0.03)));

  return Array.from({ length: count }, (_, i): PlannedOrder => {
    const forced = forcedSpecials.indexOf(i);
    let special: Special | undefined = forced >= 0 ? specials[forced] : undefined;
    const type = special
      ? 'mobile_topup'
      : rng.pick(['mobile_topup', 'mobile_topup', 'internet_topup', 'gift_card'] as const);
    if (!special && type === 'mobile_topup' && rng.chance(0.04)) special = rng.pick(specials);
    const ref = `${refPrefix}-${String(i).padStart(5, '0')}`;
    return {
      request: randomRequest(rng, ref, type, special),
      expected: expectationOf(special),
      atMs: Math.round((i * spreadMs) / count),
      control,
      race: races.has(i),
      ...(repeats.has(i) ? { repeatAfterMs: rng.int(0, 3_000) } : {}),
      ...(conflicts.has(i) ? { conflictAfterMs: rng.int(0, 3_000) } : {}),
    };
  });
}
