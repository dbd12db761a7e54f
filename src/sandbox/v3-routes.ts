/**
 * The /v3 operations: the spec's section 4 and the routes the provider documents beside them
 * (fact sheet: ping, account, plans, check-id, lists, internet products and check-number,
 * checkProduct). Each route is one row of a table: its fault-rule name, the access it needs and a
 * thin handler that validates with the wire.ts schemas and says what acting on the request does.
 * The order of middleware is the order a real gateway would act in: faults (network and upstream
 * trouble) first, then the key, then the body; then the action, which a `late_commit` rule delays
 * (the send commits whether or not the client is still there) and a `lagging_reads` rule makes
 * read the state as it was a while ago.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Router, type Request, type RequestHandler } from 'express';
import { z } from 'zod';
import {
  API_PREFIX,
  CLIENT_REFERENCE_HEADER,
  InternetSendBody,
  keyScopes,
  listLimits,
  MobileSendBody,
  PlaceOrderBody,
  Ref,
  sandboxSpecialNumbers,
  type KeyInfo,
} from '../provider';
import { assertAllowedAddress, authorize, keyType, type Access, type KeyRole } from './auth';
import { notFound, outOfStock, parseOrThrow, phoneError, validationError } from './errors';
import { type RouteName } from './faults';
import { jsonBody, localsOf, type Responder } from './http';
import { newId } from './simulation';
import { SANDBOX_USERNAME, type ListQuery, type ReadView, type SandboxState } from './state';
import {
  InternetLineType,
  lineNumberPatterns,
  mobileNumberPattern,
  type InternetLineType as LineType,
} from '../../contract/provider';

/** What an action answers: the `data`, and fields documented beside it (the catalog's totals). */
interface Answer {
  data: unknown;
  beside?: object;
}

interface Endpoint {
  method: 'get' | 'post';
  path: string;
  route: RouteName;
  access: Access;
  /** Validates the request (a 4xx is thrown here, at once) and returns what acting on it does. */
  accept(req: Request, role: KeyRole): (view: ReadView) => unknown;
  /** Splits the action's result into `data` and what goes beside it; default: all of it is `data`. */
  answer?(result: unknown): Answer;
}

const specialNumbers: ReadonlySet<string> = new Set(Object.values(sandboxSpecialNumbers));

/** `page`, `pageSize` (1–100, default 20), and `from` / `to` (ISO 8601) only together. */
const ListQuerySchema = z
  .object({
    page: z.coerce.number().int().min(1).default(1),
    pageSize: z.coerce.number().int().min(1).max(listLimits.maxPageSize).default(listLimits.defaultPageSize),
    from: z.iso.datetime({ offset: true }).optional(),
    to: z.iso.datetime({ offset: true }).optional(),
  })
  .refine((q) => (q.from === undefined) === (q.to === undefined), {
    path: ['from'],
    message: 'from and to go together',
  });

function listQuery(req: Request): ListQuery {
  const q = parseOrThrow(ListQuerySchema, req.query, 'query');
  return {
    page: q.page,
    pageSize: q.pageSize,
    ...(q.from && { from: Date.parse(q.from) }),
    ...(q.to && { to: Date.parse(q.to) }),
  };
}

const LineTypeQuery = z.object({ type: InternetLineType });
const NumberQuery = z.object({ type: InternetLineType, number: z.string().min(1).max(32) });

export function v3Router(
  state: SandboxState,
  identify: (token: string | undefined, ip: string) => KeyRole,
  responder: Responder,
): Router {
  const refParam = (req: Request) => parseOrThrow(Ref, req.params.ref, 'ref');
  // A `:name` segment is always one string (arrays are for wildcards, which these routes have none of).
  const param = (req: Request, name: string) => String(req.params[name]);
  const generatedRef = () => `API-${SANDBOX_USERNAME.replace(/\D/g, '')}-${newId()}`;

  const checkLine = (type: LineType, number: string) => {
    if (!lineNumberPatterns[type].test(number)) {
      const reason = type === 'ADSL' ? 'expected 0 and 8 digits' : 'expected 213 and 9 digits';
      throw phoneError(number, type, reason);
    }
  };

  const endpoints: Endpoint[] = [
    {
      method: 'get',
      path: '/validate',
      route: 'validate',
      access: 'validate',
      accept: (_req, role) => (): KeyInfo => ({
        username: SANDBOX_USERNAME,
        apiKey: {
          type: keyType(role),
          scope: role === 'sandbox' ? state.settings().scope : keyScopes.readWrite,
          isEnabled: role !== 'disabled',
          allowedips: state.settings().allowedIps,
        },
      }),
    },
    {
      method: 'get',
      path: '/ping',
      route: 'ping',
      access: 'read',
      accept: () => () => ({ api: state.settings().api, operators: state.operators() }),
    },
    {
      method: 'get',
      path: '/account/balance',
      route: 'account.balance',
      access: 'read',
      accept: () => () => ({ balance: state.balance(), currency: 'DZD' }),
    },
    {
      method: 'get',
      path: '/account/transactions',
      route: 'account.transactions',
      access: 'read',
      accept: (req) => {
        const query = listQuery(req);
        return (view) => state.transactions(query, view);
      },
    },
    {
      method: 'get',
      path: '/mobile/plans',
      route: 'mobile.plans',
      access: 'read',
      accept: () => () => state.offer.plans(),
    },
    {
      method: 'post',
      path: '/mobile/send',
      route: 'mobile.send',
      access: 'write',
      accept: (req, role) => {
        const body = parseOrThrow(MobileSendBody, req.body);
        // The sandbox's scripted numbers (06…) pass with the sandbox key, as the docs' examples do.
        if (
          !mobileNumberPattern.test(body.MSSIDN) &&
          !(role === 'sandbox' && specialNumbers.has(body.MSSIDN))
        ) {
          throw validationError(
            `body/MSSIDN must match pattern "${mobileNumberPattern.source}"`,
            'body/MSSIDN',
            body.MSSIDN,
          );
        }
        const found = state.offer.findPlan(body.plan_code);
        if (!found)
          throw validationError(
            `body/plan_code: no plan '${body.plan_code}'`,
            'body/plan_code',
            body.plan_code,
          );
        if (!found.plan.isEnabled) {
          throw validationError(
            `body/plan_code: plan '${body.plan_code}' is disabled`,
            'body/plan_code',
            body.plan_code,
          );
        }
        let amount: number;
        if (found.kind === 'fixed') {
          // Documented: ignored for fixed plans.
          amount = found.plan.amount;
        } else {
          const { min_amount: min, max_amount: max } = found.plan;
          if (body.amount === undefined || body.amount < min || body.amount > max) {
            throw validationError(
              `body/amount must be between ${min} and ${max}`,
              'body/amount',
              body.amount,
            );
          }
          amount = body.amount;
        }
        const debit = amount * (found.plan.cost ?? 1);
        const topup = {
          plan_code: body.plan_code,
          MSSIDN: body.MSSIDN,
          amount,
          ref: body.ref ?? generatedRef(),
        };
        return () => state.sendMobile(role, topup, debit);
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
      method: 'get',
      path: '/mobile/check-id/:id',
      route: 'mobile.checkId',
      access: 'read',
      accept: (req, role) => {
        const id = param(req, 'id');
        return (view) => state.checkMobileById(role, id, view);
      },
    },
    {
      method: 'get',
      path: '/mobile/list',
      route: 'mobile.list',
      access: 'read',
      accept: (req, role) => {
        const query = listQuery(req);
        return (view) => state.listMobile(role, query, view);
      },
    },
    {
      method: 'get',
      path: '/internet/products',
      route: 'internet.products',
      access: 'read',
      accept: (req) => {
        const { type } = parseOrThrow(LineTypeQuery, req.query, 'query');
        return () => ({ type, products: state.offer.internetProducts(type) });
      },
    },
    {
      method: 'get',
      path: '/internet/check-number',
      route: 'internet.checkNumber',
      access: 'read',
      accept: (req) => {
        const { type, number } = parseOrThrow(NumberQuery, req.query, 'query');
        checkLine(type, number);
        // Documented ⚠: a 4G line answers type "4GLTE".
        return () => ({
          ncli: number,
          offre: type === '4G' ? '4G LTE' : 'IDOOM ADSL',
          type: type === '4G' ? '4GLTE' : type,
        });
      },
    },
    {
      method: 'post',
      path: '/internet/send',
      route: 'internet.send',
      access: 'write',
      accept: (req, role) => {
        const body = parseOrThrow(InternetSendBody, req.body);
        checkLine(body.type, body.number);
        const product = state.offer.findInternetProduct(body.type, body.value);
        if (!product)
          throw validationError(
            `body/value: no ${body.type} card of ${body.value}`,
            'body/value',
            body.value,
          );
        if (!product.available)
          throw outOfStock(`value: ${body.type} cards of ${body.value} are out of stock`);
        const topup = { ...body, ref: body.ref ?? generatedRef() };
        return () => state.sendInternet(role, topup, product.cost);
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
      path: '/internet/check-id/:id',
      route: 'internet.checkId',
      access: 'read',
      accept: (req, role) => {
        const id = param(req, 'id');
        return (view) => state.checkInternetById(role, id, view);
      },
    },
    {
      method: 'get',
      path: '/internet/list',
      route: 'internet.list',
      access: 'read',
      accept: (req, role) => {
        const query = listQuery(req);
        return (view) => state.listInternet(role, query, view);
      },
    },
    {
      method: 'get',
      path: '/gift-cards/catalog',
      route: 'giftcards.catalog',
      access: 'read',
      accept: () => () => state.offer.catalog(),
      answer: (result) => {
        const { categories, ...totals } = result as { categories: unknown };
        return { data: { categories }, beside: totals };
      },
    },
    {
      method: 'get',
      path: '/gift-cards/checkProduct/:productId',
      route: 'giftcards.checkProduct',
      access: 'read',
      accept: (req) => {
        const productId = param(req, 'productId');
        return () => {
          const details = state.offer.productDetails(productId);
          if (!details) throw notFound(`Product '${productId}' not found`);
          return details;
        };
      },
    },
    {
      method: 'post',
      path: '/gift-cards/placeOrder',
      route: 'giftcards.placeOrder',
      access: 'write',
      accept: (req, role) => {
        const body = parseOrThrow(PlaceOrderBody, req.body);
        const product = state.offer.findProduct(body.productId);
        if (!product) {
          throw validationError(
            `body/productId: no product '${body.productId}'`,
            'body/productId',
            body.productId,
          );
        }
        if (!product.enabled) throw outOfStock(`productId: product '${body.productId}' is disabled`);
        const type = product.types.find((t) => t.id === body.typeId);
        if (!type)
          throw validationError(
            `body/typeId: product '${body.productId}' has no type '${body.typeId}'`,
            'body/typeId',
            body.typeId,
          );
        if (type.quantity < body.quantity) {
          throw outOfStock(`typeId: ${type.quantity} in stock, ${body.quantity} asked`);
        }
        const price = type.price;
        // Informational (our client sends the order's ref; the provider documents no such field):
        // kept with the order so a test can tell which of its orders a placement was.
        const clientRef = req.get(CLIENT_REFERENCE_HEADER)?.slice(0, 200);
        return () => state.placeGiftCardOrder(role, body, price, clientRef);
      },
    },
    {
      method: 'get',
      path: '/gift-cards/checkOrder/:orderId',
      route: 'giftcards.checkOrder',
      access: 'read',
      accept: (req, role) => {
        const orderId = param(req, 'orderId');
        return (view) => state.checkGiftCardOrder(role, orderId, view);
      },
    },
    {
      method: 'get',
      path: '/gift-cards/list',
      route: 'giftcards.list',
      access: 'read',
      accept: (req, role) => {
        const query = listQuery(req);
        return (view) => state.listGiftCardOrders(role, query, view);
      },
    },
  ];

  const authenticate =
    (access: Access): RequestHandler =>
    (req, res, next) => {
      const address = req.socket.remoteAddress ?? 'unknown';
      const role = identify(req.get('X-Access-Token'), address);
      const { allowedIps, scope } = state.settings();
      assertAllowedAddress(allowedIps, address);
      authorize(role, access, role === 'sandbox' ? scope : keyScopes.readWrite);
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
        const result = act({ lagMs: readLagMs });
        const { data, beside } = endpoint.answer ? endpoint.answer(result) : { data: result, beside: {} };
        responder.success(res, data, 200, beside);
      },
    );
  }
  return router;
}
