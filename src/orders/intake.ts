/**
 * Intake refuses what the provider would refuse, before a workflow starts (issue 25): a plan the
 * provider does not list or has disabled, an amount outside a dynamic plan's bounds (or any amount
 * for a fixed plan, which has its own), an internet value the provider does not sell for that line
 * type or has run out of, a gift-card product or type that is unknown, disabled or short of stock.
 * The answer is a 422 naming the field; nothing is started.
 *
 * What the provider lists is read through its documented routes and cached (the docs: plans
 * daily, the catalog ≥ 24 h; here INTAKE_CACHE_TTL_MS, shorter so a disabled plan or an empty stock
 * is seen soon). When the provider cannot be asked, intake lets the order through: the provider's
 * own refusal (a FAILED order, nothing sent) is the worse answer, but an outage of its catalog
 * routes must not stop every order. The formats (number patterns) are the schemas' (contract/schemas.ts).
 */
import type { Logger } from 'pino';
import type { ProviderClient } from '../provider';
import type { InternetProducts, MobilePlans, ProductDetails } from '../provider';
import type { OrderRequest } from '../../contract/schemas';
import { cached, type Cache } from './catalog';
import { ApiError, type FieldError } from '../http';
import type { InternetLineType } from '../../contract/provider';

export type IntakeProvider = Partial<
  Pick<
    ProviderClient,
    'getMobilePlans' | 'getInternetProducts' | 'checkGiftCardProduct' | 'getGiftCardCatalog'
  >
>;

export interface IntakeCheck {
  /** Throws a 422 ApiError naming the field the provider would refuse. */
  check(request: OrderRequest): Promise<void>;
}

export function createIntakeCheck({
  provider,
  ttlMs,
  now,
  logger,
}: {
  provider: IntakeProvider;
  ttlMs: number;
  now: () => number;
  logger?: Logger;
}): IntakeCheck {
  const keep = <T>(load: () => Promise<T>): Cache<T> => cached(load, ttlMs, now, (err) => err as Error);
  const plans = provider.getMobilePlans && keep(() => provider.getMobilePlans!());
  const products = new Map<InternetLineType, Cache<InternetProducts>>();
  const productDetails = new Map<string, Cache<ProductDetails | undefined>>();
  const catalog = provider.getGiftCardCatalog && keep(() => provider.getGiftCardCatalog!());

  /** The provider's answer, or undefined when it cannot be asked (the order goes through). */
  async function ask<T>(what: string, read: (() => Promise<T>) | undefined): Promise<T | undefined> {
    if (!read) return undefined;
    try {
      return await read();
    } catch (err) {
      logger?.warn(
        { err, what },
        'intake: the provider could not be asked; the order is not checked against it',
      );
      return undefined;
    }
  }

  const refuse = (field: string, message: string): never => {
    const errors: FieldError[] = [{ field, message }];
    throw new ApiError('order-unacceptable', `The provider would refuse this order: ${field}: ${message}`, {
      errors,
    });
  };

  async function checkMobile(request: Extract<OrderRequest, { type: 'mobile_topup' }>): Promise<void> {
    const listed: MobilePlans | undefined = await ask('mobile plans', plans && (() => plans.get()));
    if (!listed) return;
    const dynamic = listed.dynamicPlans.find((p) => p.code === request.planCode);
    const fixed = listed.fixedPlans.find((p) => p.code === request.planCode);
    const plan = dynamic ?? fixed;
    if (!plan) return refuse('planCode', `the provider has no plan ${request.planCode}`);
    if (!plan.isEnabled)
      return refuse('planCode', `the provider has disabled plan ${request.planCode} for now`);
    if (fixed) {
      if (request.amount !== undefined) {
        refuse('amount', `plan ${request.planCode} has a fixed amount (${fixed.amount}); send no amount`);
      }
      return;
    }
    const { min_amount: min, max_amount: max } = dynamic!;
    if (request.amount === undefined)
      return refuse('amount', `plan ${request.planCode} needs an amount (${min}–${max})`);
    if (request.amount < min || request.amount > max) {
      refuse('amount', `plan ${request.planCode} takes ${min}–${max}`);
    }
  }

  async function checkInternet(request: Extract<OrderRequest, { type: 'internet_topup' }>): Promise<void> {
    let cache = products.get(request.lineType);
    if (!cache && provider.getInternetProducts) {
      cache = keep(() => provider.getInternetProducts!(request.lineType));
      products.set(request.lineType, cache);
    }
    const listed = await ask('internet products', cache && (() => cache.get()));
    if (!listed) return;
    const product = listed.products.find((p) => p.value === request.value);
    if (!product) {
      const values = listed.products.map((p) => p.value).join(', ');
      return refuse('value', `the provider sells ${request.lineType} cards of ${values}`);
    }
    if (!product.available) refuse('value', `${request.lineType} cards of ${request.value} are out of stock`);
  }

  async function checkGiftCard(request: Extract<OrderRequest, { type: 'gift_card' }>): Promise<void> {
    // Only a provider that tells a product's types (checkProduct) is asked at all.
    if (!provider.checkGiftCardProduct) return;
    const listed = await ask('gift-card catalog', catalog && (() => catalog.get()));
    if (listed) {
      const product = listed.categories.flatMap((c) => c.products).find((p) => p.id === request.productId);
      if (!product) return refuse('productId', `the provider has no product ${request.productId}`);
      if (!product.enabled)
        return refuse('productId', `the provider has disabled product ${request.productId}`);
    }
    let cache = productDetails.get(request.productId);
    if (!cache && provider.checkGiftCardProduct) {
      cache = keep(() => provider.checkGiftCardProduct!(request.productId));
      productDetails.set(request.productId, cache);
    }
    const details = await ask('gift-card product', cache && (() => cache.get()));
    if (!details) return;
    const type = details.types.find((t) => t.id === request.typeId);
    if (!type) return refuse('typeId', `product ${request.productId} has no type ${request.typeId}`);
    if (type.quantity < request.quantity) {
      refuse('typeId', type.quantity === 0 ? 'out of stock' : `only ${type.quantity} in stock`);
    }
  }

  return {
    async check(request) {
      switch (request.type) {
        case 'mobile_topup':
          return checkMobile(request);
        case 'internet_topup':
          return checkInternet(request);
        case 'gift_card':
          return checkGiftCard(request);
      }
    },
  };
}
