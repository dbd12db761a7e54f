/**
 * Webhooks, for the client that owns them: its endpoints (no secrets), an order's deliveries and a
 * redelivery. Scopes webhooks:read and webhooks:write, checked before anything is looked up.
 */
import { type Router, type Request } from 'express';
import { callerOf, requireScope } from '../http';
import { RedeliverParams, RedeliverQuery, RefParams } from '../http';
import { validateRequest } from '../http';
import type { WebhookService } from './webhook.service';
import { trackedRouter } from '../http';

const parts = (req: Request) => ({ body: req.body as unknown, path: req.params, query: req.query });

export function webhooksRouter(webhooks: WebhookService): Router {
  const router = trackedRouter();

  router.get('/v1/webhooks', requireScope('webhooks:read'), (req, res) => {
    validateRequest({}, parts(req));
    res.json({ endpoints: webhooks.endpoints(callerOf(res)) });
  });

  router.get('/v1/orders/:ref/webhooks', requireScope('webhooks:read'), async (req, res) => {
    const { path } = validateRequest({ path: RefParams }, parts(req));
    res.json(await webhooks.deliveries(callerOf(res), path.ref));
  });

  router.post(
    '/v1/orders/:ref/webhooks/:eventId/redeliver',
    requireScope('webhooks:write'),
    async (req, res) => {
      const { path, query } = validateRequest({ path: RedeliverParams, query: RedeliverQuery }, parts(req));
      res
        .status(202)
        .json(await webhooks.redeliver(callerOf(res), path.ref, path.eventId, query.endpoint, req.log));
    },
  );

  return router;
}
