/**
 * The provider's gift-card catalog, cached for CATALOG_CACHE_TTL_MS: it changes rarely and every
 * back-office page that shows products would otherwise call the provider.
 */
import type { Catalog } from '../provider/wire';
import { ApiError } from './errors';

export interface CatalogCache {
  get(): Promise<Catalog>;
}

export function cachedCatalog(load: () => Promise<Catalog>, ttlMs: number, now: () => number): CatalogCache {
  let cached: { value: Catalog; expiresAt: number } | undefined;
  // Concurrent misses share one provider call instead of stampeding it.
  let inFlight: Promise<Catalog> | undefined;

  return {
    get() {
      if (cached && now() < cached.expiresAt) return Promise.resolve(cached.value);
      inFlight ??= load()
        .then((value) => {
          cached = { value, expiresAt: now() + ttlMs };
          return value;
        })
        // Whatever failed, it was the provider call: 502, with the cause kept for the log only.
        .catch((err: unknown) => {
          throw new ApiError(
            'provider-unavailable',
            'The provider did not return its catalog; retry later.',
            {
              cause: err,
            },
          );
        })
        // Failures are not cached: the next request tries the provider again.
        .finally(() => {
          inFlight = undefined;
        });
      return inFlight;
    },
  };
}
