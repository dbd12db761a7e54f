/**
 * /v1/orders: thin handlers — check the scope, validate, call the OrderService, answer. Errors go to
 * the central handler. Full paths (no mounted prefix), so `req.route.path` names the route in the
 * log line. The scope is checked before a body is read: a refused caller learns nothing from it.
 */
import { type Router, type Request, type RequestHandler, type Response } from 'express';
import type { Caller } from '../clients';
import { OrderRequest, ReviewRequest } from '../../contract/schemas';
import { REVEAL_SCOPE } from '../audit';
import { assertScope, callerOf, requireScope } from '../http';
import { batchEnvelope, submitBatch } from './batch';
import { orderLocation, type OrderService } from './order.service';
import { AuditQuery, ListOrdersQuery, OrderAddressQuery, OrderViewQuery, RefParams } from '../http';
import { validateRequest } from '../http';
import type { WebhookService } from '../webhooks';
import { signalOf, trackedRouter } from '../http';

const parts = (req: Request) => ({ body: req.body as unknown, path: req.params, query: req.query });

export interface OrdersRouterOptions {
  /** Counts `count` orders against the caller's limits, or throws a 429 (limits.ts); once the body is valid. */
  chargeOrders: (caller: Caller, count: number, res: Response) => Promise<void>;
  /** Content-type check and JSON parser, run after the scope check (batchJsonBody: with the batch's body limit). */
  jsonBody: RequestHandler[];
  batchJsonBody: RequestHandler[];
  batch: { maxOrders: number; concurrency: number; timeoutMs: number };
}

export function ordersRouter(
  orders: OrderService,
  webhooks: WebhookService,
  options: OrdersRouterOptions,
): Router {
  const router = trackedRouter();
  const { jsonBody, batchJsonBody } = options;
  const BatchRequest = batchEnvelope(options.batch.maxOrders);

  router.post('/v1/orders', requireScope('orders:write'), ...jsonBody, async (req, res) => {
    const { body } = validateRequest({ body: OrderRequest }, parts(req));
    await options.chargeOrders(callerOf(res), 1, res);
    // A caller gone while its order waits for a start slot: not started (start-gate.ts).
    const { created, view } = await orders.submit(callerOf(res), body, req.log, 'single', {
      signal: signalOf(res),
    });
    if (created) res.status(201).location(orderLocation(view.ref));
    res.json(view);
  });

  router.post('/v1/orders/batch', requireScope('orders:write'), ...batchJsonBody, async (req, res) => {
    const { body } = validateRequest({ body: BatchRequest }, parts(req));
    await options.chargeOrders(callerOf(res), body.orders.length, res);
    const results = await submitBatch(orders, callerOf(res), body.orders, {
      concurrency: options.batch.concurrency,
      timeoutMs: options.batch.timeoutMs,
      requestId: typeof req.id === 'string' ? req.id : undefined,
      log: req.log,
      signal: signalOf(res),
    });
    res.json({ results });
  });

  router.get('/v1/orders', requireScope('orders:read'), async (req, res) => {
    const { query } = validateRequest({ query: ListOrdersQuery }, parts(req));
    res.json(await orders.list(callerOf(res), query));
  });

  // Another client's order reads masked (src/audit/mask.ts); reveal=true needs audit:reveal, checked
  // before the order is looked up (a 403 says nothing about orders), and is recorded.
  router.get('/v1/orders/:ref', requireScope('orders:read'), async (req, res) => {
    const { path, query } = validateRequest({ path: RefParams, query: OrderViewQuery }, parts(req));
    const caller = callerOf(res);
    if (query.reveal) assertScope(caller, REVEAL_SCOPE, 'reveal=true');
    const reveal = query.reveal ? ('view' as const) : undefined;
    const address = { client: query.client ?? caller.id, ref: path.ref };
    if (!webhooks.showsDeliveries(caller, address.client)) {
      res.json(await orders.view(caller, address, 'read', req.log, reveal));
      return;
    }
    // Both at once; the deliveries are shown only with the view (a 404 stays a 404), and their
    // absence (no webhook worker answering, say) never keeps the order from its owner.
    const [view, deliveries] = await Promise.all([
      orders.view(caller, address, 'read', req.log, reveal),
      webhooks.summary(orders.workflowIdOf(address)).catch((err: unknown) => {
        req.log.warn({ err }, 'order view: webhook deliveries not read');
        return undefined;
      }),
    ]);
    res.json(deliveries ? { ...view, webhooks: deliveries } : view);
  });

  // audit:read reaches every client's orders; the owner without it gets 403 like anyone else
  // (docs/operators.md "Audit export": the story names operators and Temporal identities).
  // reveal=true needs audit:reveal as well: card codes are money (src/audit/reveal.ts), and the
  // story is masked by the same rule as the view (src/audit/mask.ts).
  router.get('/v1/orders/:ref/audit', requireScope('audit:read'), async (req, res) => {
    const { path, query } = validateRequest({ path: RefParams, query: AuditQuery }, parts(req));
    const caller = callerOf(res);
    if (query.reveal) assertScope(caller, REVEAL_SCOPE, 'reveal=true');
    const address = { client: query.client ?? caller.id, ref: path.ref };
    res.json(await orders.audit(address, { reveal: query.reveal, by: caller, log: req.log }));
  });

  router.post('/v1/orders/:ref/review', requireScope('reviews:write'), ...jsonBody, async (req, res) => {
    const { path, query, body } = validateRequest(
      { path: RefParams, query: OrderAddressQuery, body: ReviewRequest },
      parts(req),
    );
    const caller = callerOf(res);
    const address = { client: query.client ?? caller.id, ref: path.ref };
    const { pending, view } = await orders.review(caller, address, body, req.log);
    res.status(pending ? 202 : 200).json(view);
  });

  return router;
}
