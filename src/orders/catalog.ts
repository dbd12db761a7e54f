/**
 * The provider's gift-card catalog as the back office reads it (`GET /v1/gift-cards/catalog`):
 * the provider's categories of products, each product with its types, their price and stock
 * (the provider answers those per product, `checkProduct`). Cached for CATALOG_CACHE_TTL_MS: it
 * changes rarely and every back-office page that shows products would otherwise call the provider
 * once per product.
 */
import { z } from 'zod';
import type { ProviderClient } from '../provider';
import { ApiError } from '../http';

export const GiftCardCatalogView = z
  .object({
    categories: z.array(
      z.object({
        title: z.string(),
        products: z.array(
          z.object({
            id: z.string().meta({ description: 'The `productId` a gift-card order names.' }),
            title: z.string(),
            enabled: z.boolean(),
            region: z.string().optional(),
            types: z.array(
              z.object({
                id: z.string().meta({ description: 'The `typeId` a gift-card order names.' }),
                name: z.string(),
                price: z.number().meta({ description: 'The price per card, DZD.' }),
                quantity: z.number().meta({ description: 'Cards in stock; 0 = out of stock.' }),
              }),
            ),
          }),
        ),
      }),
    ),
  })
  .meta({ id: 'GiftCardCatalog', description: 'The provider’s gift-card catalog, with price and stock.' });
export type GiftCardCatalogView = z.infer<typeof GiftCardCatalogView>;

export type CatalogProvider = Pick<ProviderClient, 'getGiftCardCatalog'> &
  Partial<Pick<ProviderClient, 'checkGiftCardProduct'>>;

/** The catalog with each product's types (none listed when the provider cannot tell them). */
export async function loadCatalogView(provider: CatalogProvider): Promise<GiftCardCatalogView> {
  const catalog = await provider.getGiftCardCatalog();
  const typesOf = async (productId: string) =>
    provider.checkGiftCardProduct ? (await provider.checkGiftCardProduct(productId)).types : [];
  return {
    categories: await Promise.all(
      catalog.categories.map(async (category) => ({
        title: category.title,
        products: await Promise.all(
          category.products.map(async ({ id, title, enabled, region }) => ({
            id,
            title,
            enabled,
            ...(region !== undefined && { region }),
            types: (await typesOf(id)).map(({ id: typeId, name, price, quantity }) => ({
              id: typeId,
              name,
              price,
              quantity,
            })),
          })),
        ),
      })),
    ),
  };
}

export interface Cache<T> {
  get(): Promise<T>;
}

/** One provider answer kept for `ttlMs`; concurrent misses share one call, failures are not kept. */
export function cached<T>(
  load: () => Promise<T>,
  ttlMs: number,
  now: () => number,
  failure: (err: unknown) => Error,
): Cache<T> {
  let kept: { value: T; expiresAt: number } | undefined;
  let inFlight: Promise<T> | undefined;
  return {
    get() {
      if (kept && now() < kept.expiresAt) return Promise.resolve(kept.value);
      inFlight ??= load()
        .then((value) => {
          kept = { value, expiresAt: now() + ttlMs };
          return value;
        })
        .catch((err: unknown) => {
          throw failure(err);
        })
        .finally(() => {
          inFlight = undefined;
        });
      return inFlight;
    },
  };
}

export type CatalogCache = Cache<GiftCardCatalogView>;

export function cachedCatalog(
  load: () => Promise<GiftCardCatalogView>,
  ttlMs: number,
  now: () => number,
): CatalogCache {
  // Whatever failed, it was a provider call: 502, with the cause kept for the log only.
  return cached(load, ttlMs, now, (err) => {
    return new ApiError('provider-unavailable', 'The provider did not return its catalog; retry later.', {
      cause: err,
    });
  });
}
