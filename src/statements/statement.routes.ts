/**
 * The back office's books: /v1/orders/export (order-export.service.ts) and /v1/statements
 * (statement.service.ts); /v1/reconciliations/{date} is the reconciliation's
 * (src/reconciliation/reconciliation.routes.ts). Mounted before the orders router, whose
 * /v1/orders/:ref would otherwise take `export` for a ref.
 */
import { type Router, type Request } from 'express';
import { callerOf, requireScope } from '../http';
import { ApiError } from '../http';
import { CSV, ExportOrdersQuery, NDJSON, streamExport, type ExportCaches } from './order-export.service';
import type { OrderService } from '../orders';
import { StatementQuery, type StatementService } from './statement.service';
import { validateRequest } from '../http';
import { signalOf, trackedRouter } from '../http';

const parts = (req: Request) => ({ body: req.body as unknown, path: req.params, query: req.query });

export function financeRouter(
  orders: OrderService,
  statements: StatementService,
  /** What the same caller's exports share (order-export.ts). */
  exportCaches?: ExportCaches,
): Router {
  const router = trackedRouter();

  router.get('/v1/orders/export', requireScope('orders:read'), async (req, res) => {
    const { query } = validateRequest({ query: ExportOrdersQuery }, parts(req));
    const format = req.accepts([NDJSON, CSV]);
    if (format !== NDJSON && format !== CSV) {
      throw new ApiError('not-acceptable', `The export is served as ${NDJSON} or ${CSV}.`);
    }
    await streamExport(orders, callerOf(res), query, format, res, req.log, exportCaches);
  });

  router.get('/v1/statements', requireScope('orders:read'), async (req, res) => {
    const { query } = validateRequest({ query: StatementQuery }, parts(req));
    // Once the caller hung up, or the request's deadline answered 503 for it (app.ts), its listings
    // and kept days are work for nobody: they stop, and its slot is free again (request-work.ts).
    const gone = signalOf(res);
    try {
      res.json(await statements.statement(callerOf(res), query, gone));
    } catch (err) {
      // What failed then is a call cancelled for it: nothing to answer, nothing went wrong.
      if (!gone.aborted) throw err;
      req.log.info('statement stopped: the caller hung up or the request’s deadline passed');
    }
  });
  return router;
}
