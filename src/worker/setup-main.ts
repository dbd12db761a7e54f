/**
 * `npm run temporal:setup` (in the image: `node dist/src/worker/setup-main.js`, docker-compose's
 * `temporal-setup` job): makes sure TEMPORAL_NAMESPACE exists with TEMPORAL_NAMESPACE_RETENTION and
 * that every search attribute the service needs is registered and served (src/temporal/setup.ts),
 * and creates or updates the order sweep's Schedule (src/orders/sweep.schedule.ts), the nightly
 * reconciliation's (src/reconciliation/reconciliation.schedule.ts) and that of statements' closed days
 * (src/statements/statement-days.schedule.ts).
 * Exits 0 when Temporal is ready for orders; otherwise 1, with a message that says what is missing.
 */
import { Client, Connection } from '@temporalio/client';
import { ConfigError, loadConfig } from '../config';
import { createLogger } from '../logging';
import { temporalConnectionOptions } from '../temporal';
import { ensureTemporalSetup, TemporalSetupError } from '../temporal';
import { ensureOrderSweepSchedule } from '../orders';
import { ensureReconciliationSchedule } from '../reconciliation';
import { ensureStatementDaysSchedule } from '../statements';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL).child({ name: 'temporal-setup' });
  const deadline = Date.now() + config.TEMPORAL_SETUP_TIMEOUT_MS;
  // Temporal may still be starting (compose starts this job once its port answers): keep trying.
  let connection: Connection | undefined;
  for (let attempt = 1; !connection; attempt++) {
    try {
      connection = await Connection.connect({ ...temporalConnectionOptions(config), connectTimeout: 5_000 });
    } catch (err) {
      if (Date.now() >= deadline) {
        throw new TemporalSetupError(
          `Temporal setup: cannot connect to ${config.TEMPORAL_ADDRESS}: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
      logger.info({ attempt }, `waiting for Temporal at ${config.TEMPORAL_ADDRESS}`);
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }
  try {
    const result = await ensureTemporalSetup(connection, {
      namespace: config.TEMPORAL_NAMESPACE,
      retentionMs: config.TEMPORAL_NAMESPACE_RETENTION,
      timeoutMs: Math.max(1_000, deadline - Date.now()),
      log: (message) => logger.info(message),
    });
    const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
    const sweep = await ensureOrderSweepSchedule(client, {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      intervalMs: config.ORDER_SWEEP_INTERVAL_MS,
    });
    const reconciliation = await ensureReconciliationSchedule(client, {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      at: config.RECONCILE_AT,
      timeZone: config.RECONCILE_TIME_ZONE,
    });
    const statementDays = await ensureStatementDaysSchedule(client, {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      at: config.STATEMENT_DAYS_AT,
      backfillDays: config.STATEMENT_DAYS_BACKFILL_DAYS,
    });
    logger.info(
      {
        ...result,
        sweepSchedule: sweep,
        reconciliationSchedule: reconciliation,
        statementDaysSchedule: statementDays,
        namespace: config.TEMPORAL_NAMESPACE,
      },
      'Temporal is set up for orders',
    );
  } finally {
    await connection.close();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError || err instanceof TemporalSetupError ? err.message : err);
  process.exit(1);
});
