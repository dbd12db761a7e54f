/**
 * The provider sandbox: a standalone implementation of the provider's /v3 interface with the
 * sandbox behaviours of the spec, plus an admin surface for fault injection (see
 * admin-routes.ts). `createSandboxApp` gives the Express app (e.g. with a fake clock);
 * `startSandbox` also listens and knows how to stop, hanging connections included.
 */
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import express, { type Express } from 'express';
import pino, { type Logger } from 'pino';
import { adminRouter } from './admin-routes';
import { createKeyring } from './auth';
import { createResponder, requestContext } from './http';
import { SandboxState } from './state';
import { v3Router } from './v3-routes';

export { SandboxState } from './state';

export interface SandboxOptions {
  /** Validates as SANDBOX; the only key that can send. Default `sandbox-key`. */
  sandboxKey: string;
  /** Validates as PRODUCTION; sends → 403, checks → 404 (no live transactions exist). Default `production-key`. */
  productionKey: string;
  /** Validates with isEnabled:false; everything else → 403. Default `disabled-key`. */
  disabledKey: string;
  /** Multiplies the 5 s PENDING and 15 s HANDLING delays. Default 1. */
  timeScale: number;
  /** The X-Admin-Token the admin surface requires; unset = no admin surface (404). */
  adminToken?: string;
  /** Where unexpected errors are logged (never keys or bodies). Default: pino at `warn`. */
  logger?: Logger;
  /** Keep the state in this file (journal.ts) and start from what it holds; unset = in memory only. */
  stateFile?: string;
  /** The account's balance on a fresh start and after a reset, DZD (default: plenty). */
  startingBalance?: number;
}

export const defaultSandboxOptions: Readonly<SandboxOptions> = {
  sandboxKey: 'sandbox-key',
  productionKey: 'production-key',
  disabledKey: 'disabled-key',
  timeScale: 1,
};

export function createSandboxApp(
  options: Partial<SandboxOptions> = {},
  now: () => number = Date.now,
): { app: Express; state: SandboxState } {
  const settings = { ...defaultSandboxOptions, ...withoutUndefined(options) };
  if (!(Number.isFinite(settings.timeScale) && settings.timeScale > 0)) {
    throw new RangeError('timeScale must be a positive number');
  }
  const logger = settings.logger ?? pino({ name: 'sandbox', level: 'warn' });
  const state = new SandboxState({
    timeScale: settings.timeScale,
    now,
    stateFile: settings.stateFile,
    startingBalance: settings.startingBalance,
  });
  const responder = createResponder(now, logger);

  const app = express();
  app.disable('x-powered-by');
  // Statuses change over time; a 304 on a status check would only confuse clients.
  app.set('etag', false);
  app.use(requestContext);
  app.use(v3Router(state, createKeyring(settings, state.badKeys), responder));
  app.use(adminRouter(state, settings.adminToken, responder));
  app.use(responder.unknownRoute);
  app.use(responder.errorHandler);
  return { app, state };
}

export interface StartedSandbox {
  url: string;
  port: number;
  state: SandboxState;
  close(): Promise<void>;
}

export async function startSandbox(
  options: Partial<SandboxOptions> & { port?: number; host?: string } = {},
): Promise<StartedSandbox> {
  const { port = 0, host = '127.0.0.1', ...appOptions } = options;
  const { app, state } = createSandboxApp(appOptions);
  const server = createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= new Promise<void>((resolve, reject) => {
      server.close((err) => {
        state.close();
        if (err) reject(err);
        else resolve();
      });
      // Idle keep-alive sockets and requests held by a `hang` fault would otherwise keep close() waiting.
      server.closeAllConnections();
    }));

  return { url: `http://${urlHost}:${address.port}`, port: address.port, state, close };
}

/** `{ port: undefined }` from an optional config value must not override a default. */
function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
