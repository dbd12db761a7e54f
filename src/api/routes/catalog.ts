/** /v1/gift-cards: the provider's catalog, through the cache. */
import { Router } from 'express';
import type { CatalogCache } from '../catalog';

export function giftCardsRouter(catalog: CatalogCache): Router {
  const router = Router();
  router.get('/v1/gift-cards/catalog', async (_req, res) => {
    res.json(await catalog.get());
  });
  return router;
}
