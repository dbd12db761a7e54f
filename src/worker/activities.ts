/**
 * The activities a worker registers: every area's, assembled (the order activities are
 * src/orders/order.activities.ts). Built by a factory that receives the provider client and the
 * areas' dependencies, so tests can inject fakes.
 */
import type { Client } from '@temporalio/client';
import { createOrderActivities, type OrderActivityOptions } from '../orders';
import {
  createGiftCardRecordsActivities,
  createSweepActivities,
  type PlacementRecordsProvider,
} from '../orders';
import { createBulkReviewActivities } from '../reviews';
import { createReconciliationActivities, type ReconciliationProvider } from '../reconciliation';
import { createStatementDaysActivities, type StatementDaysSummarizer } from '../statements';
import { createAccountActivities, createAccountGate, type AccountOptions } from '../provider-account';
import { createAnnounceActivity, type AnnounceDeps } from '../webhooks';

export interface ActivityOptions extends Omit<OrderActivityOptions, 'gate'> {
  /**
   * How the order workflows' events reach the delivery workflows (src/webhooks/webhook.activities.ts);
   * without it a worker drops them (the orders are not affected).
   */
  webhooks?: AnnounceDeps;
  /** For the order sweep (src/orders/sweep.activities.ts) and bulk decisions: a client with the worker's data converter. */
  temporal?: Client;
  /**
   * The provider account watch (src/provider-account/account.activities.ts): held orders and the send gate. Without it
   * no order is held by the worker, and an order held by the provider cannot register (it retries
   * its send every REVIEW_RECHECK_INTERVAL_MS until its maximum hold).
   */
  account?: AccountOptions;
  /** The nightly reconciliation's provider calls (the ledger, one check per mismatch); with `temporal`. */
  reconciliation?: ReconciliationProvider;
  /** The nightly precompute of statements' closed days (src/statements/statement-days.ts). */
  statementDays?: StatementDaysSummarizer;
}

export function createActivities({
  webhooks,
  temporal,
  account,
  reconciliation,
  statementDays,
  ...orders
}: ActivityOptions) {
  const gate = account && createAccountGate(account, temporal);
  return {
    ...createAnnounceActivity(webhooks),
    ...createAccountActivities(account, temporal, gate),
    ...createSweepActivities(temporal),
    ...createBulkReviewActivities(temporal),
    ...createReconciliationActivities(reconciliation, temporal),
    ...createStatementDaysActivities(statementDays),
    ...createGiftCardRecordsActivities(
      'listGiftCardOrders' in orders.provider ? (orders.provider as PlacementRecordsProvider) : undefined,
      temporal,
    ),
    ...createOrderActivities({ ...orders, gate }),
  };
}

/** Every activity a worker registers, by name. */
export type Activities = ReturnType<typeof createActivities>;
