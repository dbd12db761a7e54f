/**
 * /v1/orders: thin handlers — validate, call the OrderService, answer. Errors go to the central handler.
 * Full paths (no mounted prefix), so `req.route.path` names the route in the log line.
 */
import { Router, type Request } from 'express';
import { OrderRequest, ReviewDecision } from '../../orders/schemas';
import { requireJsonBody } from '../content-type';
import type { OrderService } from '../orders';
import { ListOrdersQuery, RefParams } from '../schemas';
import { validateRequest } from '../validation';

export function orderLocation(ref: string): string {
  return `/v1/orders/${encodeURIComponent(ref)}`;
}

const parts = (req: Request) => ({ body: req.body as unknown, path: req.params, query: req.query });

export function ordersRouter(orders: OrderService): Router {
  const router = Router();

  router.post('/v1/orders', requireJsonBody, async (req, res) => {
    const { body } = validateRequest({ body: OrderRequest }, parts(req));
    const { created, view } = await orders.submit(body, req.log);
    if (created) res.status(201).location(orderLocation(view.ref));
    res.json(view);
  });

  router.get('/v1/orders', async (req, res) => {
    const { query } = validateRequest({ query: ListOrdersQuery }, parts(req));
    res.json(await orders.list(query));
  });

  router.get('/v1/orders/:ref', async (req, res) => {
    const { path } = validateRequest({ path: RefParams }, parts(req));
    res.json(await orders.view(path.ref, req.log));
  });

  router.post('/v1/orders/:ref/review', requireJsonBody, async (req, res) => {
    const { path, body } = validateRequest({ path: RefParams, body: ReviewDecision }, parts(req));
    // The authenticated caller's id goes in `decidedBy` once callers are named clients.
    const { pending, view } = await orders.review(path.ref, body, {}, req.log);
    res.status(pending ? 202 : 200).json(view);
  });

  return router;
}
