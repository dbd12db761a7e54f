/** /v1/gift-cards: the provider's catalog, through the cache; for clients that place orders. */
import { Router } from 'express';
import { requireScope } from '../auth';
import type { CatalogCache } from '../catalog';

export function giftCardsRouter(catalog: CatalogCache): Router {
  const router = Router();
  router.get('/v1/gift-cards/catalog', requireScope('orders:write'), async (_req, res) => {
    res.json(await catalog.get());
  });
  return router;
}
