/**
 * What the sandbox sells, in the documented shapes (fact sheet: list-plans, list-products,
 * get-catalog, check-product): mobile plans, internet card values and the gift-card catalog with
 * each type's price and stock. Several products with several types each, so clients exercise real
 * look-ups; `GOOGLE_PLAY` / `GOOGLE_PLAY_1000` is relied on by other suites. Every product also
 * lists the documented sandbox types TEST_REFUND and TEST_PARTIAL.
 *
 * Prices, stock, a plan's or product's enabled flag and an internet value's availability can be
 * changed through the admin surface (admin-routes.ts), like a provider whose offer changes.
 */
import {
  sandboxTestTypes,
  type DynamicPlan,
  type FixedPlan,
  type InternetProduct,
  type MobilePlans,
} from '../provider';
import type { InternetLineType } from '../../contract/provider';

export const sandboxDynamicPlans: readonly DynamicPlan[] = [
  plan('PREPAID_DJEZZY', 'Djezzy prepaid', 'djezzy', 100, 10_000),
  plan('PREPAID_MOBILIS', 'Mobilis prepaid', 'mobilis', 40, 3_999),
  plan('PREPAID_OOREDOO', 'Ooredoo prepaid', 'ooredoo', 50, 5_000),
  plan('GROS_MOBILIS', 'Mobilis wholesale', 'mobilis', 5_000, 300_000),
  plan('GETMENU_Mobilis', 'Mobilis offers of a number', 'mobilis', 50, 5_000),
];
export const sandboxFixedPlans: readonly FixedPlan[] = [
  fixed('PIXX_500', 'Pixx 500', 'mobilis', 500),
  fixed('MIX500_MOBILIS', 'Mix 500', 'mobilis', 500),
  fixed('FACTURE_DJEZZY', 'Djezzy bill', 'djezzy', 500),
];

function plan(code: string, name: string, operator: string, min: number, max: number): DynamicPlan {
  return { code, name, operator, cost: 0.98, isEnabled: true, min_amount: min, max_amount: max };
}
function fixed(code: string, name: string, operator: string, amount: number): FixedPlan {
  return { code, name, operator, cost: 0.98, isEnabled: true, amount };
}

const internetValues: Record<InternetLineType, number[]> = {
  ADSL: [500, 1000, 2000, 3000],
  '4G': [500, 1000, 1500, 2000, 2500, 3500],
};

interface GiftType {
  id: string;
  name: string;
  price: number;
  quantity: number;
}
interface GiftProduct {
  id: string;
  title: string;
  enabled: boolean;
  region?: string;
  types: GiftType[];
}
interface GiftCategory {
  title: string;
  products: GiftProduct[];
}

/** Plenty: a benchmark of thousands of orders must not run the stock out by itself. */
const DEFAULT_STOCK = 1_000_000;

function giftCatalog(): GiftCategory[] {
  const type = (id: string, name: string, price: number): GiftType => ({
    id,
    name,
    price,
    quantity: DEFAULT_STOCK,
  });
  const withTests = (types: GiftType[]) => [
    ...types,
    type(sandboxTestTypes.refund, 'Sandbox: refunded', 100),
    type(sandboxTestTypes.partial, 'Sandbox: half fulfilled', 100),
  ];
  return [
    {
      title: 'Stores',
      products: [
        {
          id: 'GOOGLE_PLAY',
          title: 'Google Play',
          enabled: true,
          region: 'DZ',
          types: withTests([
            type('GOOGLE_PLAY_500', 'Google Play 500 DZD', 520),
            type('GOOGLE_PLAY_1000', 'Google Play 1000 DZD', 1_030),
            type('GOOGLE_PLAY_2000', 'Google Play 2000 DZD', 2_050),
          ]),
        },
        {
          id: 'STEAM',
          title: 'Steam Wallet',
          enabled: true,
          types: withTests([
            type('STEAM_5_USD', 'Steam Wallet 5 USD', 1_400),
            type('STEAM_10_USD', 'Steam Wallet 10 USD', 2_750),
          ]),
        },
      ],
    },
    {
      title: 'Games',
      products: [
        {
          id: 'PLAYSTATION',
          title: 'PlayStation Store',
          enabled: true,
          region: 'US',
          types: withTests([
            type('PSN_10_USD', 'PlayStation Store 10 USD', 2_800),
            type('PSN_20_USD', 'PlayStation Store 20 USD', 5_500),
          ]),
        },
        {
          id: 'FREE_FIRE',
          title: 'Free Fire diamonds',
          enabled: true,
          types: withTests([
            type('FREE_FIRE_100', 'Free Fire 100 diamonds', 250),
            type('FREE_FIRE_520', 'Free Fire 520 diamonds', 1_200),
          ]),
        },
      ],
    },
  ];
}

/** A change an admin makes to the offer (PATCH /admin/...); kept in the state file. */
export type OfferChange =
  | { t: 'plan'; code: string; isEnabled: boolean }
  | { t: 'internetValue'; type: InternetLineType; value: number; available: boolean }
  | { t: 'product'; productId: string; enabled: boolean }
  | { t: 'giftType'; productId: string; typeId: string; price?: number; quantity?: number };

/** The sandbox's current offer: plans, internet values and the gift-card catalog with stock. */
export class SandboxOffer {
  #dynamic = sandboxDynamicPlans.map((p) => ({ ...p }));
  #fixed = sandboxFixedPlans.map((p) => ({ ...p }));
  #internet = new Map<InternetLineType, InternetProduct[]>(
    (Object.keys(internetValues) as InternetLineType[]).map((type) => [
      type,
      internetValues[type].map((value) => ({ value, cost: value, available: true })),
    ]),
  );
  #gift = giftCatalog();

  plans(): MobilePlans {
    return {
      dynamicPlans: this.#dynamic.map((p) => ({ ...p })),
      fixedPlans: this.#fixed.map((p) => ({ ...p })),
    };
  }

  findPlan(
    code: string,
  ): { kind: 'dynamic'; plan: DynamicPlan } | { kind: 'fixed'; plan: FixedPlan } | undefined {
    const dynamic = this.#dynamic.find((p) => p.code === code);
    if (dynamic) return { kind: 'dynamic', plan: dynamic };
    const fixedPlan = this.#fixed.find((p) => p.code === code);
    return fixedPlan ? { kind: 'fixed', plan: fixedPlan } : undefined;
  }

  internetProducts(type: InternetLineType): InternetProduct[] {
    return (this.#internet.get(type) ?? []).map((p) => ({ ...p }));
  }

  findInternetProduct(type: InternetLineType, value: number): InternetProduct | undefined {
    return this.#internet.get(type)?.find((p) => p.value === value);
  }

  catalog() {
    const categories = this.#gift.map((category) => ({
      title: category.title,
      products: category.products.map(({ id, title, enabled, region }) => ({
        id,
        title,
        enabled,
        ...(region && { region }),
      })),
    }));
    return {
      categories,
      totalCategories: categories.length,
      totalProducts: categories.reduce((n, c) => n + c.products.length, 0),
    };
  }

  findProduct(productId: string): GiftProduct | undefined {
    for (const category of this.#gift) {
      const product = category.products.find((p) => p.id === productId);
      if (product) return product;
    }
    return undefined;
  }

  productDetails(productId: string) {
    const product = this.findProduct(productId);
    if (!product) return undefined;
    return {
      productId: product.id,
      productTitle: product.title,
      types: product.types.map((t) => ({ ...t })),
    };
  }

  /** Applies a change; false when it names nothing the offer has. */
  apply(change: OfferChange): boolean {
    switch (change.t) {
      case 'plan': {
        const found = this.findPlan(change.code);
        if (found) found.plan.isEnabled = change.isEnabled;
        return found !== undefined;
      }
      case 'internetValue': {
        const product = this.#internet.get(change.type)?.find((p) => p.value === change.value);
        if (product) product.available = change.available;
        return product !== undefined;
      }
      case 'product': {
        const product = this.findProduct(change.productId);
        if (product) product.enabled = change.enabled;
        return product !== undefined;
      }
      case 'giftType': {
        const type = this.findProduct(change.productId)?.types.find((t) => t.id === change.typeId);
        if (!type) return false;
        if (change.price !== undefined) type.price = change.price;
        if (change.quantity !== undefined) type.quantity = change.quantity;
        return true;
      }
    }
  }

  /** Takes `quantity` cards of a type out of stock (a placement). */
  take(productId: string, typeId: string, quantity: number): void {
    const type = this.findProduct(productId)?.types.find((t) => t.id === typeId);
    if (type) type.quantity = Math.max(0, type.quantity - quantity);
  }
}
