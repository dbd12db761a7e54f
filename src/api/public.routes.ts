/** The unauthenticated routes: liveness, readiness and the OpenAPI document. */
import { Router, type Request, type RequestHandler } from 'express';
import { temporarilyUnavailable } from '../http';
import type { Readiness } from './health';
import type { AccountReport } from '../provider-account';
import type { DeploymentStatus } from './deployment-status';
import type { FairnessStatus } from './fairness-status';
import { validateRequest } from '../http';

/** No public route takes a parameter: an unknown one is a 400 here as on every /v1 route. */
const noParameters: RequestHandler = (req: Request, _res, next) => {
  validateRequest({}, { body: undefined, path: req.params, query: req.query });
  next();
};

export function publicRouter(deps: {
  readiness: () => Promise<Readiness>;
  account: () => Promise<AccountReport>;
  /** Whether Temporal honours task-queue fairness: said, never a reason to be unready (orders run either way). */
  fairness: () => Promise<FairnessStatus>;
  /** The workers' Worker Deployment: which build is current, ramping, draining. Said, never a reason to be unready. */
  deployment: () => Promise<DeploymentStatus>;
  shuttingDown: () => boolean;
  openApiDocument: () => object;
}): Router {
  const router = Router();

  // Liveness: the process answers. Dependencies are readiness's business, so a Temporal outage
  // does not get every instance restarted.
  router.get('/healthz', noParameters, (_req, res) => {
    res.json({ status: 'ok' });
  });

  router.get('/readyz', noParameters, async (req, res) => {
    if (deps.shuttingDown()) throw temporarilyUnavailable('Not ready: shutting down.');
    const [{ ready, checks, missing, problems }, account, { fairness, notice }, deployment] =
      await Promise.all([
        deps.readiness(),
        // Held orders, operators down and the provider's API in error do not make the API unready:
        // it still takes orders (they wait, or the provider's answers decide).
        deps.account().catch((): AccountReport => ({})),
        deps.fairness(),
        deps.deployment(),
      ]);
    if (!ready) {
      // Error messages go to the log only (/readyz is public); the answer names what is missing.
      req.log.warn({ checks, problems }, 'not ready');
      throw temporarilyUnavailable(`Not ready: ${missing.join('; ')}.`);
    }
    const { held, operators, api } = account;
    res.json({
      status: 'ready',
      checks,
      fairness,
      deployment,
      ...(notice ? { notices: [notice] } : {}),
      account: { ...(held && { held }), ...(operators && { operators }), ...(api && { api }) },
    });
  });

  router.get('/openapi.json', noParameters, (_req, res) => {
    res.json(deps.openApiDocument());
  });

  return router;
}
