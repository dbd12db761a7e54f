/**
 * /v1/reviews/bulk: one decision for many orders in review (bulk-review.ts). The scope is the
 * single review route's, checked before the body is read.
 */
import { type Router, type Request, type RequestHandler } from 'express';
import { callerOf, requireScope } from '../http';
import { BulkReviewRequest, type BulkReviewService } from './bulk-review.service';
import { validateRequest } from '../http';
import { signalOf, trackedRouter } from '../http';

const parts = (req: Request) => ({ body: req.body as unknown, path: req.params, query: req.query });

export function reviewsRouter(bulk: BulkReviewService, jsonBody: RequestHandler[]): Router {
  const router = trackedRouter();

  router.post('/v1/reviews/bulk', requireScope('reviews:write'), ...jsonBody, async (req, res) => {
    const { body } = validateRequest({ body: BulkReviewRequest }, parts(req));
    const answer = await bulk.decide(callerOf(res), body, req.log, signalOf(res));
    res.status(answer.state === 'done' ? 200 : 202).json(answer);
  });

  return router;
}
