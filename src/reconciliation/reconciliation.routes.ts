/** /v1/reconciliations/{date}: a day's reconciliation report (reconciliation.service.ts). */
import { type Router, type Request } from 'express';
import { requireScope } from '../http';
import { validateRequest } from '../http';
import { trackedRouter } from '../http';
import {
  ReconciliationParams,
  ReconciliationQuery,
  type ReconciliationService,
} from './reconciliation.service';

const parts = (req: Request) => ({ body: req.body as unknown, path: req.params, query: req.query });

export function reconciliationRouter(reconciliations: ReconciliationService): Router {
  const router = trackedRouter();

  // The ledger is the whole account's: only auditors read it (reconciliations.ts).
  router.get('/v1/reconciliations/:date', requireScope('audit:read'), async (req, res) => {
    const { path, query } = validateRequest(
      { path: ReconciliationParams, query: ReconciliationQuery },
      parts(req),
    );
    res.json(await reconciliations.read(path.date, query.run));
  });

  return router;
}
