/**
 * src/orders/ (intake, the order lifecycle, reads, the sweep): its Node-side surface. Other folders import from here,
 * never from its files (.dependency-cruiser.cjs).
 */
export { assertMayForce } from './access';
export { cachedCatalog, type CatalogProvider, GiftCardCatalogView, loadCatalogView } from './catalog';
export { giftCardsRouter } from './catalog.routes';
export { FIGURES_MEMO, type OrderFigures } from './figures';
export { createIntakeCheck, type IntakeProvider } from './intake';
export { LatestRuns, orderRunsClause } from './latest-runs';
export { ownedByClause, rangeClauses, type ScannedOrder } from './order-list.service';
export { createOrderActivities, type OrderActivityOptions } from './order.activities';
export { ordersRouter } from './order.routes';
export { OrderService, type OrderView } from './order.service';
export { type PageTokens, pageTokensFromConfig } from './page-token';
export {
  type ClosedContinuation,
  disputedSearchAttributes,
  ownSearchAttributes,
  reopenedInput,
  reopenOrder,
  type Reopening,
  type ReopenMark,
} from './reopen';
export { FairStartGate, StartNotRun, type StartKind } from './start-gate';
export { createSweepActivities } from './sweep.activities';
export { ensureOrderSweepSchedule } from './sweep.schedule';
export { timingsFromConfig } from './timings';
export {
  createGiftCardRecordsActivities,
  FIGURES_MEMO_KEY,
  type PlacementRecordsProvider,
} from './gift-card-records.activities';
