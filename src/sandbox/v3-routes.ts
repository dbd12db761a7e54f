/**
 * The /v3 operations of spec section 4. Each route is one row of a table: its fault-rule name,
 * the access it needs and a thin handler that validates with the wire.ts schemas and says what
 * acting on the request does. The order of middleware is the order a real gateway would act in:
 * faults (network and upstream trouble) first, then the key, then the body; then the action, which
 * a `late_commit` rule delays (the send commits whether or not the client is still there) and a
 * `lagging_reads` rule makes read the state as it was a while ago.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Router, type Request, type RequestHandler } from 'express';
import {
  API_PREFIX,
  InternetSendBody,
  MobileSendBody,
  PlaceOrderBody,
  Ref,
  type KeyInfo,
} from '../provider/wire';
import { authorize, keyType, type Access, type KeyRole } from './auth';
import { findProduct, sandboxCatalog } from './catalog';
import { parseOrThrow, validationError } from './errors';
import { type RouteName } from './faults';
import { jsonBody, localsOf, type Responder } from './http';
import { type ReadView, type SandboxState } from './state';

/** The account every sandbox key belongs to (spec 2.2 shows a phone number in international form). */
const SANDBOX_USERNAME = '+213550000000';

interface Endpoint {
  method: 'get' | 'post';
  path: string;
  route: RouteName;
  access: Access;
  /** Validates the request (a 4xx is thrown here, at once) and returns what acting on it does. */
  accept(req: Request, role: KeyRole): (view: ReadView) => unknown;
}

export function v3Router(
  state: SandboxState,
  identify: (token: string | undefined) => KeyRole,
  responder: Responder,
): Router {
  const refParam = (req: Request) => parseOrThrow(Ref, req.params.ref, 'ref');
  // A `:name` segment is always one string (arrays are for wildcards, which these routes have none of).
  const orderIdParam = (req: Request) => String(req.params.orderId);

  const endpoints: Endpoint[] = [
    {
      method: 'get',
      path: '/validate',
      route: 'validate',
      access: 'validate',
      accept: (_req, role) => (): KeyInfo => ({
        username: SANDBOX_USERNAME,
        apiKey: { type: keyType(role), scope: 'READ-WRITE', isEnabled: role !== 'disabled' },
      }),
    },
    {
      method: 'post',
      path: '/mobile/send',
      route: 'mobile.send',
      access: 'write',
      accept: (req, role) => {
        const body = parseOrThrow(MobileSendBody, req.body);
        return () => state.sendMobile(role, body);
      },
    },
    {
      method: 'get',
      path: '/mobile/check-ref/:ref',
      route: 'mobile.check',
      access: 'read',
      accept: (req, role) => {
        const ref = refParam(req);
        return (view) => state.checkMobile(role, ref, view);
      },
    },
    {
      method: 'post',
      path: '/internet/send',
      route: 'internet.send',
      access: 'write',
      accept: (req, role) => {
        const body = parseOrThrow(InternetSendBody, req.body);
        return () => state.sendInternet(role, body);
      },
    },
    {
      method: 'get',
      path: '/internet/check-ref/:ref',
      route: 'internet.check',
      access: 'read',
      accept: (req, role) => {
        const ref = refParam(req);
        return (view) => state.checkInternet(role, ref, view);
      },
    },
    {
      method: 'get',
      path: '/gift-cards/catalog',
      route: 'giftcards.catalog',
      access: 'read',
      accept: () => () => sandboxCatalog,
    },
    {
      method: 'post',
      path: '/gift-cards/placeOrder',
      route: 'giftcards.placeOrder',
      access: 'write',
      accept: (req, role) => {
        const body = parseOrThrow(PlaceOrderBody, req.body);
        const product = findProduct(body.productId);
        if (!product) throw validationError(`productId: no product "${body.productId}" in the catalog`);
        if (!product.types.some((type) => type.typeId === body.typeId)) {
          throw validationError(`typeId: product "${body.productId}" has no type "${body.typeId}"`);
        }
        return () => state.placeGiftCardOrder(role, body);
      },
    },
    {
      method: 'get',
      path: '/gift-cards/checkOrder/:orderId',
      route: 'giftcards.checkOrder',
      access: 'read',
      accept: (req, role) => {
        const orderId = orderIdParam(req);
        return (view) => state.checkGiftCardOrder(role, orderId, view);
      },
    },
  ];

  const authenticate =
    (access: Access): RequestHandler =>
    (req, res, next) => {
      const role = identify(req.get('X-Access-Token'));
      authorize(role, access);
      localsOf(res).role = role;
      next();
    };

  const router = Router();
  for (const endpoint of endpoints) {
    router[endpoint.method](
      `${API_PREFIX}${endpoint.path}`,
      responder.trackRequest(state, endpoint.route),
      responder.injectFaults(state.faults, endpoint.route),
      authenticate(endpoint.access),
      ...(endpoint.method === 'post' ? jsonBody : []),
      async (req, res) => {
        // authenticate() ran before this handler, so the role is set.
        const { role, commitDelayMs, readLagMs } = localsOf(res);
        const act = endpoint.accept(req, role as KeyRole);
        // Not tied to the connection: a late commit happens even when the client has gone.
        // Unref'd, so a pending commit does not keep a closing test process alive.
        if (commitDelayMs) await sleep(commitDelayMs, undefined, { ref: false });
        responder.success(res, act({ lagMs: readLagMs }));
      },
    );
  }
  return router;
}
