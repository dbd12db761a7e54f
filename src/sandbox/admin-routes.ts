/**
 * The admin surface, for tests and benchmarks only (design: "Provider sandbox contract"): fault
 * rules, settings, the per-ref send counters that prove nothing was sent twice, a log of recent
 * requests, outcomes that change later (outcome-changes.ts) and a reset. Outside /v3 so a provider
 * client can never reach it by accident, and guarded by X-Admin-Token.
 */
import { Router } from 'express';
import { z } from 'zod';
import { KeyScope, OperatorName, OperatorState } from '../provider';
import { createAdminGuard } from './auth';
import { notFound, parseOrThrow } from './errors';
import { FaultSpec, RouteName } from './faults';
import { jsonBody, type Responder } from './http';
import { OutcomeChangeSpec } from './outcome-changes';
import { type SandboxState } from './state';
import { InternetLineType } from '../../contract/provider';

export function adminRouter(
  state: SandboxState,
  adminToken: string | undefined,
  responder: Responder,
): Router {
  const guard = createAdminGuard(adminToken);
  const { success } = responder;
  const router = Router();

  router.use('/admin', (req, _res, next) => {
    guard(req.get('X-Admin-Token'));
    next();
  });

  router.post('/admin/faults', ...jsonBody, (req, res) => {
    const rule = state.faults.add(parseOrThrow(FaultSpec, req.body));
    success(res, { id: rule.id }, 201);
  });
  router.get('/admin/faults', (_req, res) => success(res, { faults: state.faults.list() }));
  router.delete('/admin/faults', (_req, res) => success(res, { removed: state.faults.clear() }));
  router.delete('/admin/faults/:id', (req, res) => {
    const { id } = req.params;
    if (!state.faults.remove(id)) throw notFound(`id: no fault rule "${id}"`);
    success(res, { id });
  });

  router.get('/admin/settings', (_req, res) =>
    success(res, { ...state.settings(), balance: state.balance() }),
  );
  router.patch('/admin/settings', ...jsonBody, (req, res) => {
    const { balance, ...settings } = parseOrThrow(SettingsChange, req.body);
    if (balance !== undefined) state.setBalance(balance);
    success(res, { ...state.updateSettings(settings), balance: state.balance() });
  });

  // What /v3/ping reports of each operator.
  router.patch('/admin/operators', ...jsonBody, (req, res) =>
    success(res, state.setOperators(parseOrThrow(OperatorsChange, req.body))),
  );
  // The offer: a plan's or product's enabled flag, an internet value's availability, a type's price and stock.
  router.patch('/admin/plans/:code', ...jsonBody, (req, res) => {
    const { isEnabled } = parseOrThrow(z.strictObject({ isEnabled: z.boolean() }), req.body);
    state.changeOffer({ t: 'plan', code: String(req.params.code), isEnabled });
    success(res, state.offer.plans());
  });
  router.patch('/admin/internet-products/:type/:value', ...jsonBody, (req, res) => {
    const { available } = parseOrThrow(z.strictObject({ available: z.boolean() }), req.body);
    const type = parseOrThrow(InternetLineType, req.params.type, 'type');
    state.changeOffer({ t: 'internetValue', type, value: Number(req.params.value), available });
    success(res, state.offer.internetProducts(type));
  });
  router.patch('/admin/gift-cards/:productId', ...jsonBody, (req, res) => {
    const { enabled } = parseOrThrow(z.strictObject({ enabled: z.boolean() }), req.body);
    const productId = String(req.params.productId);
    state.changeOffer({ t: 'product', productId, enabled });
    success(res, state.offer.productDetails(productId));
  });
  router.patch('/admin/gift-cards/:productId/types/:typeId', ...jsonBody, (req, res) => {
    const change = parseOrThrow(GiftTypeChange, req.body);
    const productId = String(req.params.productId);
    state.changeOffer({ t: 'giftType', productId, typeId: String(req.params.typeId), ...change });
    success(res, state.offer.productDetails(productId));
  });

  router.get('/admin/requests', (req, res) => {
    const { route } = parseOrThrow(RequestsQuery, req.query, 'query');
    success(res, { requests: state.requests(route) });
  });

  router.get('/admin/sends', (_req, res) => success(res, state.sendReport()));
  router.get('/admin/sends/:ref', (req, res) => success(res, state.sendCountsOf(req.params.ref)));

  // A top-up by the ref it was sent with, a gift-card order by its orderId (listed below, for an
  // order whose placement answer was lost).
  router.post('/admin/topups/:ref/outcome', ...jsonBody, (req, res) => {
    const { ref } = req.params as { ref: string };
    success(res, state.changeOutcome({ ref }, parseOrThrow(OutcomeChangeSpec, req.body)), 201);
  });
  router.post('/admin/gift-card-orders/:orderId/outcome', ...jsonBody, (req, res) => {
    const { orderId } = req.params as { orderId: string };
    success(res, state.changeOutcome({ orderId }, parseOrThrow(OutcomeChangeSpec, req.body)), 201);
  });
  router.get('/admin/outcome-changes', (_req, res) => success(res, { changes: state.outcomeChanges.list() }));
  router.get('/admin/gift-card-orders', (_req, res) => success(res, { orders: state.giftCardOrders() }));
  router.get('/admin/timelines', (_req, res) => success(res, { timelines: state.timelines() }));

  router.post('/admin/reset', (_req, res) => {
    state.reset();
    success(res, { reset: true });
  });

  return router;
}

/** A year and more: older than any retention a back office keeps. */
const MAX_BACKDATE_MS = 400 * 24 * 3_600_000;

const SettingsChange = z.strictObject({
  uniqueRefs: z.boolean().optional(),
  allowedIps: z
    .array(z.union([z.ipv4(), z.ipv6()]))
    .max(20)
    .optional(),
  api: z.enum(['ok', 'error']).optional(),
  scope: KeyScope.optional(),
  /** Top-ups sent from now on are dated this long ago (SandboxSettings.backdateSendsMs). */
  backdateSendsMs: z.number().int().min(0).max(MAX_BACKDATE_MS).optional(),
  /** `documented`: orders sent from now on draw their timelines (SandboxSettings.timings). */
  timings: z.enum(['spec', 'documented']).optional(),
  timingsSeed: z
    .number()
    .int()
    .min(0)
    .max(2 ** 31)
    .optional(),
  /** The account's balance from now on, DZD. */
  balance: z.number().min(0).optional(),
});
const OperatorsChange = z.partialRecord(OperatorName, OperatorState);
const GiftTypeChange = z.strictObject({
  price: z.number().min(0).optional(),
  quantity: z.number().int().min(0).optional(),
});
const RequestsQuery = z.object({ route: RouteName.optional() });
