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
 * - **A cap in total** (API_MAX_CONNECTIONS), held below the process's open-file limit with room
 *   for the API's own sockets and files (connectionCap), so the health listener, Temporal and the
 *   provider always have descriptors. At the cap a new connection takes the place of the one that
 *   has waited longest without sending a byte (else the one idle longest between requests): an idle
 *   flood from many addresses churns its own connections while a caller that sends its request as
 *   it connects is served. Only when every held connection has a request running is the new one
 *   answered `503` with `Retry-After` and closed.
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

/**
 * Connections the API may hold beyond its total cap for a moment: a refused or evicted connection
 * is accepted (a descriptor) and closed, and its close lands a tick later.
 */
const REFUSAL_HEADROOM = 64;

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
  // Both listeners may hold REFUSAL_HEADROOM beyond their caps for a moment.
  const reserved =
    OWN_DESCRIPTORS + config.PROVIDER_POOL_CONNECTIONS + HEALTH_MAX_CONNECTIONS + 2 * REFUSAL_HEADROOM;
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

function refusal(status: 429 | 503, detail: string): string {
  const body = JSON.stringify({
    type: status === 429 ? '/problems/rate-limited' : '/problems/temporarily-unavailable',
    title: status === 429 ? 'Too many requests' : 'The service is temporarily unavailable',
    status,
    detail,
  });
  return [
    `HTTP/1.1 ${status} ${status === 429 ? 'Too Many Requests' : 'Service Unavailable'}`,
    `Retry-After: ${RETRY_AFTER_S}`,
    'Connection: close',
    'Content-Type: application/problem+json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

/** Refused connections, summed and logged at most every 10 s: a flood must not flood the log too. */
function refusalLog(
  logger: Logger | undefined,
  listener: string,
): (cause: 'address' | 'total' | 'evicted') => void {
  const counts = { address: 0, total: 0, evicted: 0 };
  let timer: NodeJS.Timeout | undefined;
  return (cause) => {
    counts[cause]++;
    if (!logger || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      logger.warn(
        {
          listener,
          overAddressCap: counts.address,
          overTotalCap: counts.total,
          silentClosedForRoom: counts.evicted,
        },
        'connections refused in the last 10 s',
      );
      counts.address = counts.total = counts.evicted = 0;
    }, 10_000);
    timer.unref();
  };
}

/**
 * The caps of the module comment on `server`: `total` (0: none), `perAddress` (0: none).
 *
 * At the total cap a new connection is not dropped unanswered (Node's `maxConnections`, which a
 * flood of idle connections from many addresses turns into every other caller's ECONNRESET): the
 * connection that has waited longest without sending a byte is closed to make room, else the one
 * idle longest between requests. A caller that sends its request as it connects is served, and
 * an idle flood only churns its own connections. With neither to close, every held connection has
 * a request running: the new one is answered `503` with `Retry-After` and closed.
 * `maxConnections` stays, REFUSAL_HEADROOM above, as the descriptors' backstop.
 */
function capConnections(
  server: Server,
  caps: { total: number; perAddress: number },
  refused: (cause: 'address' | 'total' | 'evicted') => void,
): void {
  server.maxConnections = caps.total + REFUSAL_HEADROOM;
  server.on('drop', () => refused('total'));
  const open = new Map<string, number>();
  let held = 0;
  /** Held connections that have not sent a byte yet, oldest first (pruned lazily: bytesRead > 0). */
  const silent = new Map<Socket, true>();
  /** Held connections between requests (kept alive), longest idle first. */
  const idle = new Map<Socket, true>();
  const inFlight = new WeakMap<Socket, number>();
  const addressAnswer = refusal(
    429,
    `At most ${caps.perAddress} connections from one address at once; reuse them, or retry after the Retry-After delay.`,
  );
  const fullAnswer = refusal(
    503,
    'The API holds as many connections as it can, each with a request running; retry after the Retry-After delay.',
  );

  const refuse = (socket: Socket, answer: string) => {
    // As Node answers a connection it gives up on (400, 408): the answer, then the close.
    socket.on('error', () => {});
    socket.end(answer);
    socket.destroySoon();
    setTimeout(() => socket.destroy(), 1_000).unref();
  };
  /** Closes the connection least likely to be a caller waiting for an answer; false if none is. */
  const evictOne = (): boolean => {
    for (const socket of silent.keys()) {
      silent.delete(socket);
      if (socket.bytesRead > 0 || socket.destroyed) continue;
      socket.destroy();
      return true;
    }
    for (const socket of idle.keys()) {
      idle.delete(socket);
      if (socket.destroyed) continue;
      socket.destroy();
      return true;
    }
    return false;
  };

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    silent.delete(socket);
    idle.delete(socket);
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    res.once('close', () => {
      const left = (inFlight.get(socket) ?? 1) - 1;
      inFlight.set(socket, left);
      if (left === 0 && !socket.destroyed) idle.set(socket, true);
    });
  });
  server.on('connection', (socket: Socket) => {
    const key = addressKey(socket.remoteAddress);
    const count = (open.get(key) ?? 0) + 1;
    if (caps.perAddress > 0 && count > caps.perAddress) {
      refused('address');
      refuse(socket, addressAnswer);
      return;
    }
    if (caps.total > 0 && held >= caps.total) {
      if (evictOne()) refused('evicted');
      else {
        refused('total');
        refuse(socket, fullAnswer);
        return;
      }
    }
    held++;
    open.set(key, count);
    silent.set(socket, true);
    socket.once('close', () => {
      held--;
      silent.delete(socket);
      idle.delete(socket);
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
