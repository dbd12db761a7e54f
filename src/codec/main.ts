/**
 * `npm run codec`: the codec server for Temporal UI (`temporal server start-dev --ui-codec-endpoint
 * http://127.0.0.1:8888`) and the CLI (`temporal workflow show … --codec-endpoint http://127.0.0.1:8888
 * [--codec-auth "Bearer <token>"]`). See server.ts for who may call it.
 */
import type { AddressInfo } from 'node:net';
import { createLogger } from '../logging';
import { ConfigError, loadConfig } from '../config';
import { createEncryptionCodecFromConfig } from './encryption-codec';
import { createCodecServer } from './server';

/** In-flight requests get this long after SIGTERM/SIGINT before the process exits anyway. */
const SHUTDOWN_TIMEOUT_MS = 10_000;
const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

function main(): void {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL).child({ name: 'codec' });

  const codec = createEncryptionCodecFromConfig(config);
  if (!codec) {
    throw new ConfigError(
      'Invalid configuration:\n  PAYLOAD_ENCRYPTION_KEYS: required (nothing to decode without the payload keys)',
    );
  }
  const authTokens = config.CODEC_AUTH_TOKENS ?? [];
  if (authTokens.length === 0 && !LOOPBACK.test(config.CODEC_HOST)) {
    throw new ConfigError(
      'Invalid configuration:\n  CODEC_HOST: without CODEC_AUTH_TOKENS the codec server listens on loopback only',
    );
  }

  const app = createCodecServer({
    codec,
    namespace: config.TEMPORAL_NAMESPACE,
    authTokens,
    corsOrigins: config.CODEC_CORS_ORIGINS,
    logger,
    bodyLimit: config.CODEC_BODY_LIMIT,
  });
  const server = app.listen(config.CODEC_PORT, config.CODEC_HOST, () => {
    const { port } = server.address() as AddressInfo;
    const host = config.CODEC_HOST.includes(':') ? `[${config.CODEC_HOST}]` : config.CODEC_HOST;
    logger.info(
      {
        url: `http://${host}:${port}`,
        port,
        mode: authTokens.length > 0 ? 'token' : 'local',
        namespace: config.TEMPORAL_NAMESPACE,
        corsOrigins: config.CODEC_CORS_ORIGINS,
      },
      'codec server listening',
    );
  });
  server.on('error', (err) => {
    logger.fatal({ errorCode: (err as NodeJS.ErrnoException).code }, 'codec server could not listen');
    process.exit(1);
  });

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'codec server stopping');
    server.close(() => process.exit(0));
    server.closeIdleConnections();
    setTimeout(() => {
      logger.warn('requests still open at shutdown timeout; closing them');
      server.closeAllConnections();
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS).unref();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

try {
  main();
} catch (err) {
  // ConfigError messages name variables, never values; anything else is reported by class only.
  console.error(err instanceof ConfigError ? err.message : `codec server failed to start: ${String(err)}`);
  process.exit(1);
}
