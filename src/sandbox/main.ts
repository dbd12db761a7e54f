/**
 * `npm run sandbox`: the provider sandbox alone, configured from the environment (src/config.ts,
 * SANDBOX_* and LOG_LEVEL). Logs where it listens — never the keys or the admin token — and stops
 * cleanly on SIGINT / SIGTERM.
 */
import { createLogger } from '../logging';
import { ConfigError, loadConfig } from '../config';
import { startSandbox } from './server';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL).child({ name: 'sandbox' });
  const sandbox = await startSandbox({
    port: config.SANDBOX_PORT,
    host: config.SANDBOX_HOST,
    sandboxKey: config.SANDBOX_KEY,
    productionKey: config.SANDBOX_PRODUCTION_KEY,
    disabledKey: config.SANDBOX_DISABLED_KEY,
    timeScale: config.SANDBOX_TIME_SCALE,
    adminToken: config.SANDBOX_ADMIN_TOKEN,
    stateFile: config.SANDBOX_STATE_FILE,
    startingBalance: config.SANDBOX_STARTING_BALANCE,
    logger,
  });
  if (config.SANDBOX_TIMINGS !== 'spec') {
    sandbox.state.updateSettings({
      timings: config.SANDBOX_TIMINGS,
      timingsSeed: config.SANDBOX_TIMINGS_SEED,
    });
  }
  logger.info(
    {
      url: sandbox.url,
      timeScale: config.SANDBOX_TIME_SCALE,
      timings: config.SANDBOX_TIMINGS,
      adminSurface: config.SANDBOX_ADMIN_TOKEN !== undefined,
      stateFile: config.SANDBOX_STATE_FILE !== undefined,
    },
    'provider sandbox listening',
  );

  const stop = (signal: NodeJS.Signals) => {
    logger.info({ signal }, 'provider sandbox stopping');
    sandbox.close().then(
      () => {
        logger.info('provider sandbox stopped');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'provider sandbox did not stop cleanly');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  // A ConfigError names the bad variables (never their values); anything else is a start-up failure.
  const text =
    err instanceof ConfigError
      ? err.message
      : err instanceof Error
        ? (err.stack ?? err.message)
        : String(err);
  process.stderr.write(`${text}\n`);
  process.exit(1);
});
