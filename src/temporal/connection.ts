/**
 * Temporal connection options from configuration: the local dev server by default; TLS, mTLS and
 * API keys for a hosted namespace, without code changes.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from '@temporalio/client';
import type { NativeConnectionOptions } from '@temporalio/worker';
import { ConfigError, type Config } from '../config';

export function temporalConnectionOptions(config: Config): ConnectionOptions {
  const { TEMPORAL_TLS_CERT_PATH: certPath, TEMPORAL_TLS_KEY_PATH: keyPath } = config;
  if (Boolean(certPath) !== Boolean(keyPath)) {
    throw new ConfigError(
      'Invalid configuration:\n  TEMPORAL_TLS_CERT_PATH, TEMPORAL_TLS_KEY_PATH: set both or neither',
    );
  }
  const clientCertPair =
    certPath && keyPath ? { crt: readFileSync(certPath), key: readFileSync(keyPath) } : undefined;
  // An API key is only ever sent over TLS.
  const tls = clientCertPair
    ? { clientCertPair }
    : config.TEMPORAL_TLS || config.TEMPORAL_API_KEY
      ? true
      : undefined;
  return {
    address: config.TEMPORAL_ADDRESS,
    ...(tls ? { tls } : {}),
    ...(config.TEMPORAL_API_KEY ? { apiKey: config.TEMPORAL_API_KEY } : {}),
  };
}

/** The same settings for the worker's NativeConnection (whose API key is a plain string). */
export function nativeConnectionOptions(config: Config): NativeConnectionOptions {
  const { address, tls } = temporalConnectionOptions(config);
  return {
    address,
    ...(tls ? { tls } : {}),
    ...(config.TEMPORAL_API_KEY ? { apiKey: config.TEMPORAL_API_KEY } : {}),
  };
}
