/** /v1/gift-cards: the provider's catalog, through the cache; for clients that place orders. */
import type { Router } from 'express';
import { requireScope } from '../http';
import type { CatalogCache } from './catalog';
import { validateRequest } from '../http';
import { trackedRouter } from '../http';

export function giftCardsRouter(catalog: CatalogCache): Router {
  const router = trackedRouter();
  router.get('/v1/gift-cards/catalog', requireScope('orders:write'), async (req, res) => {
    validateRequest({}, { body: undefined, path: req.params, query: req.query });
    res.json(await catalog.get());
  });
  return router;
}
