/**
 * The HTTP server around the app, with the timeouts that keep slow or idle clients from holding
 * sockets, and a graceful close: stop accepting, let requests in flight finish, then cut the rest.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import type { Config } from '../config';

export interface RunningServer {
  server: Server;
  url: string;
  /** Resolves once every connection is closed; requests still running after `graceMs` are cut. */
  close(graceMs?: number): Promise<void>;
}

type TimeoutConfig = Pick<
  Config,
  'API_REQUEST_TIMEOUT_MS' | 'API_HEADERS_TIMEOUT_MS' | 'API_KEEP_ALIVE_TIMEOUT_MS'
>;

export function applyServerTimeouts(server: Server, config: TimeoutConfig): void {
  // The whole request (headers and body) must arrive within this; Node answers 408 otherwise.
  server.requestTimeout = config.API_REQUEST_TIMEOUT_MS;
  // Node requires headersTimeout <= requestTimeout.
  server.headersTimeout = Math.min(config.API_HEADERS_TIMEOUT_MS, config.API_REQUEST_TIMEOUT_MS);
  server.keepAliveTimeout = config.API_KEEP_ALIVE_TIMEOUT_MS;
}

export async function listen(
  app: Express,
  options: { port: number; host?: string; config: TimeoutConfig },
): Promise<RunningServer> {
  const server = createServer(app);
  applyServerTimeouts(server, options.config);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  let closing: Promise<void> | undefined;
  const close = (graceMs = 10_000) =>
    (closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      // Idle keep-alive sockets would hold close() open until they time out.
      server.closeIdleConnections();
      const cut = setTimeout(() => server.closeAllConnections(), graceMs);
      cut.unref();
    }));
  return { server, url: `http://${host}:${address.port}`, close };
}
