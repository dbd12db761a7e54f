/**
 * The HTTP servers around the app: the API's, and optionally a health listener of its own for the
 * orchestrator (API_HEALTH_ADDRESS). Each keeps idle or abusive callers from holding sockets, and
 * each closes gracefully: stop accepting, let requests in flight finish, then cut the rest.
 *
 * Every connection costs the process a file descriptor, and past its open-file limit it can accept
 * nothing, /healthz included: two processes holding 9,990 idle connections each took every
 * descriptor of an API with a limit of 20,000, until Node's 30 s check closed some. So:
 *
 * - **Idle connections close within a few seconds.** A connection must deliver its request's
 *   headers within API_HEADERS_TIMEOUT_MS of opening (Node's `headersTimeout`, which also covers a
 *   connection that sends nothing), checked every second (`connectionsCheckingInterval`, 30 s by
 *   default); between requests a keep-alive connection closes after API_KEEP_ALIVE_TIMEOUT_MS.
 * - **A cap per address** (API_MAX_CONNECTIONS_PER_ADDRESS, the peer's address, an IPv6 /56 as one):
 *   a connection beyond it is answered `429` with `Retry-After` and closed at once, so one source
 *   cannot take the connections another caller needs.
 * - **A cap in total** (API_MAX_CONNECTIONS, Node's `maxConnections`: beyond it a connection is
 *   closed unanswered), held below the process's open-file limit with room for the API's own
 *   sockets and files (connectionCap), so the health listener, Temporal and the provider always
 *   have descriptors.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Express } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import ipaddr from 'ipaddr.js';
import type { Logger } from 'pino';
import { splitHostPort, type Config } from '../config';

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
type ConnectionConfig = TimeoutConfig &
  Pick<Config, 'API_MAX_CONNECTIONS' | 'API_MAX_CONNECTIONS_PER_ADDRESS' | 'PROVIDER_POOL_CONNECTIONS'>;

/**
 * How often Node looks for connections past their headers or request timeout: the most an idle
 * connection outlives API_HEADERS_TIMEOUT_MS. Node's default, 30 s, let idle connections pile up.
 */
const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

/**
 * The health listener's caps. The orchestrator probes one request at a time from an address or two;
 * a flood of it from elsewhere takes at most these, never the API's descriptors.
 */
const HEALTH_MAX_CONNECTIONS = 64;
const HEALTH_MAX_CONNECTIONS_PER_ADDRESS = 8;

/**
 * Descriptors the API keeps for itself below its open-file limit, besides the provider pool and the
 * health listener: Node's own (stdio, the event loop, libuv's threads), the Temporal connection,
 * the metrics listener and its scrapes, the traces exporter, the clients file on a reload.
 */
const OWN_DESCRIPTORS = 256;

/** How long a caller over the per-address cap is told to wait: a slot frees when one of its requests ends. */
const RETRY_AFTER_S = 1;

export function applyServerTimeouts(server: Server, config: TimeoutConfig): void {
  // The whole request (headers and body) must arrive within this; Node answers 408 otherwise.
  server.requestTimeout = config.API_REQUEST_TIMEOUT_MS;
  // Node requires headersTimeout <= requestTimeout.
  server.headersTimeout = Math.min(config.API_HEADERS_TIMEOUT_MS, config.API_REQUEST_TIMEOUT_MS);
  server.keepAliveTimeout = config.API_KEEP_ALIVE_TIMEOUT_MS;
}

/** The process's soft limit of open files (Linux: /proc/self/limits), undefined where it cannot be read. */
export function openFileLimit(limits = '/proc/self/limits'): number | undefined {
  try {
    const line = readFileSync(limits, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    return soft !== undefined && /^\d+$/.test(soft) ? Number(soft) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The API's total connection cap: API_MAX_CONNECTIONS, lowered to leave the descriptors the
 * process needs for everything else below its open-file limit. `lowered` says when it was.
 */
export function connectionCap(
  config: Pick<Config, 'API_MAX_CONNECTIONS' | 'PROVIDER_POOL_CONNECTIONS'>,
  fileLimit = openFileLimit(),
): { total: number; lowered?: { fileLimit: number; reserved: number } } {
  if (fileLimit === undefined) return { total: config.API_MAX_CONNECTIONS };
  const reserved = OWN_DESCRIPTORS + config.PROVIDER_POOL_CONNECTIONS + HEALTH_MAX_CONNECTIONS;
  const room = Math.max(1, fileLimit - reserved);
  return room < config.API_MAX_CONNECTIONS
    ? { total: room, lowered: { fileLimit, reserved } }
    : { total: config.API_MAX_CONNECTIONS };
}

/** The key a connection is counted under: its peer's address, IPv4 as IPv4 even when dual-stack, IPv6 by /56. */
function addressKey(remoteAddress: string | undefined): string {
  if (!remoteAddress) return 'unknown';
  try {
    return ipKeyGenerator(ipaddr.process(remoteAddress).toString());
  } catch {
    return remoteAddress;
  }
}

function refusal(perAddress: number): string {
  const body = JSON.stringify({
    type: '/problems/rate-limited',
    title: 'Too many requests',
    status: 429,
    detail: `At most ${perAddress} connections from one address at once; reuse them, or retry after the Retry-After delay.`,
  });
  return [
    'HTTP/1.1 429 Too Many Requests',
    `Retry-After: ${RETRY_AFTER_S}`,
    'Connection: close',
    'Content-Type: application/problem+json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

/** Refused connections, summed and logged at most every 10 s: a flood must not flood the log too. */
function refusalLog(logger: Logger | undefined, listener: string): (cause: 'address' | 'total') => void {
  const counts = { address: 0, total: 0 };
  let timer: NodeJS.Timeout | undefined;
  return (cause) => {
    counts[cause]++;
    if (!logger || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      logger.warn(
        { listener, overAddressCap: counts.address, overTotalCap: counts.total },
        'connections refused in the last 10 s',
      );
      counts.address = counts.total = 0;
    }, 10_000);
    timer.unref();
  };
}

/** The caps of the module comment on `server`: `total` (Node drops beyond it), `perAddress` (0: none). */
function capConnections(
  server: Server,
  caps: { total: number; perAddress: number },
  refused: (cause: 'address' | 'total') => void,
): void {
  server.maxConnections = caps.total;
  server.on('drop', () => refused('total'));
  if (caps.perAddress <= 0) return;
  const open = new Map<string, number>();
  const answer = refusal(caps.perAddress);
  server.on('connection', (socket: Socket) => {
    const key = addressKey(socket.remoteAddress);
    const count = (open.get(key) ?? 0) + 1;
    if (count > caps.perAddress) {
      refused('address');
      // As Node answers a connection it gives up on (400, 408): the answer, then the close.
      socket.on('error', () => {});
      socket.write(answer);
      socket.destroy();
      return;
    }
    open.set(key, count);
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left > 0) open.set(key, left);
      else open.delete(key);
    });
  });
}

async function serve(
  server: Server,
  port: number,
  host: string | undefined,
): Promise<Omit<RunningServer, 'server'>> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  let closing: Promise<void> | undefined;
  const close = (graceMs = 10_000) =>
    (closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      // Idle keep-alive sockets would hold close() open until they time out.
      server.closeIdleConnections();
      const cut = setTimeout(() => server.closeAllConnections(), graceMs);
      cut.unref();
    }));
  return { url: `http://${shownHost}:${address.port}`, close };
}

export async function listen(
  app: Express,
  options: { port: number; host?: string; config: ConnectionConfig; logger?: Logger },
): Promise<RunningServer> {
  const { config } = options;
  const server = createServer({ connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS }, app);
  applyServerTimeouts(server, config);
  const cap = connectionCap(config);
  if (cap.lowered) {
    options.logger?.warn(
      { maxConnections: cap.total, ...cap.lowered },
      'API_MAX_CONNECTIONS lowered to fit the open-file limit (raise ulimit -n for more)',
    );
  }
  capConnections(
    server,
    { total: cap.total, perAddress: config.API_MAX_CONNECTIONS_PER_ADDRESS },
    refusalLog(options.logger, 'api'),
  );
  return { server, ...(await serve(server, options.port, options.host)) };
}

const HEALTH_PATHS = new Set(['/healthz', '/readyz']);

/**
 * The health listener (API_HEALTH_ADDRESS): /healthz and /readyz of the same app, answered as on
 * the API's port, on a listener with caps of its own, so a flood of the API's port leaves the
 * orchestrator's probes their sockets. Anything else is a 404.
 */
export async function listenHealth(
  app: Express,
  options: { address: string; config: TimeoutConfig; logger?: Logger },
): Promise<RunningServer> {
  const server = createServer(
    { connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS },
    (req: IncomingMessage, res: ServerResponse) => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      if (HEALTH_PATHS.has(path)) return app(req, res);
      res.writeHead(404, { 'content-type': 'application/problem+json' }).end(
        JSON.stringify({
          type: '/problems/not-found',
          title: 'No such resource',
          status: 404,
          detail: 'This listener serves GET /healthz and GET /readyz only.',
        }),
      );
    },
  );
  applyServerTimeouts(server, options.config);
  capConnections(
    server,
    { total: HEALTH_MAX_CONNECTIONS, perAddress: HEALTH_MAX_CONNECTIONS_PER_ADDRESS },
    refusalLog(options.logger, 'health'),
  );
  const { host, port } = splitHostPort(options.address);
  return { server, ...(await serve(server, port, host)) };
}
