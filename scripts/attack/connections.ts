/**
 * `npx tsx scripts/attack/connections.ts --url http://127.0.0.1:3310 --key <a client's key>`:
 * the connection attack of issue 34 against a running API, measured from outside.
 *
 * The attacker opens `--connections` TCP connections (spread over `--addresses` loopback source
 * addresses, 127.0.0.2 on) and sends nothing; with `--reopen` each is opened again a second after
 * the API closes it. Meanwhile a well-behaved caller from 127.0.0.1 sends `GET /v1/orders?pageSize=1`
 * on a new connection every `--every-ms`. After `--hold` seconds it prints how many of the
 * attacker's connections are still open, how they ended, and what the well-behaved caller got.
 *
 * Loopback only: the source addresses are 127.0.0.x.
 */
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:3000' },
    key: { type: 'string' },
    connections: { type: 'string', default: '9990' },
    addresses: { type: 'string', default: '1' },
    hold: { type: 'string', default: '40' },
    'every-ms': { type: 'string', default: '200' },
    reopen: { type: 'boolean', default: false },
    'open-rate': { type: 'string', default: '2000' },
  },
});

const target = new URL(values.url);
const port = Number(target.port || 80);
const host = target.hostname;
const total = Number(values.connections);
const addressCount = Number(values.addresses);
const holdS = Number(values.hold);
const openRate = Number(values['open-rate']);

interface Conn {
  openedAt: number;
  connectedAt?: number;
  firstBytes: string;
}

const attack = {
  tried: 0,
  connected: 0,
  connectFailed: new Map<string, number>(),
  answered: new Map<string, number>(),
  closedAfterMs: [] as number[],
  open: new Map<Socket, Conn>(),
};
let stopping = false;

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function openOne(index: number): void {
  if (stopping) return;
  attack.tried++;
  const localAddress = `127.0.0.${2 + (index % addressCount)}`;
  const socket = connect({ host, port, localAddress });
  const conn: Conn = { openedAt: Date.now(), firstBytes: '' };
  attack.open.set(socket, conn);
  socket.on('connect', () => {
    conn.connectedAt = Date.now();
    attack.connected++;
  });
  socket.on('data', (chunk: Buffer) => {
    if (!conn.firstBytes) conn.firstBytes = chunk.toString('latin1', 0, 12);
  });
  socket.on('error', (err: NodeJS.ErrnoException) => {
    if (conn.connectedAt === undefined) bump(attack.connectFailed, err.code ?? err.message);
  });
  socket.on('close', () => {
    attack.open.delete(socket);
    if (stopping || conn.connectedAt === undefined) return;
    bump(attack.answered, conn.firstBytes ? conn.firstBytes.trim() : '(closed unanswered)');
    attack.closedAfterMs.push(Date.now() - conn.connectedAt);
    if (values.reopen) setTimeout(() => openOne(index), 1_000).unref();
  });
}

interface Outcome {
  what: string;
  ms: number;
}

function wellBehaved(): Promise<Outcome> {
  const started = Date.now();
  return new Promise((resolve) => {
    const req = httpRequest(
      new URL('/v1/orders?pageSize=1', values.url),
      {
        agent: false,
        localAddress: '127.0.0.1',
        timeout: 10_000,
        headers: values.key ? { authorization: `Bearer ${values.key}` } : {},
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          const retry = res.headers['retry-after'];
          resolve({
            what: `${res.statusCode}${retry !== undefined ? ` Retry-After ${retry}` : ''}`,
            ms: Date.now() - started,
          });
        });
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('no answer in 10 s'), { code: 'TIMEOUT' })));
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve({ what: err.code ?? err.message, ms: Date.now() - started }),
    );
    req.end();
  });
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function main(): Promise<void> {
  const started = Date.now();
  const outcomes: Outcome[] = [];
  const caller = (async () => {
    while (!stopping) {
      outcomes.push(await wellBehaved());
      await sleep(Number(values['every-ms']));
    }
  })();
  // Opened at `open-rate` a second, as fast as a single attacker process does without a pause.
  for (let i = 0; i < total; i++) {
    openOne(i);
    if (i % Math.max(1, Math.floor(openRate / 100)) === 0) await sleep(10);
  }
  const samples: string[] = [];
  const sample = () => {
    let held = 0;
    for (const conn of attack.open.values()) if (conn.connectedAt !== undefined && !conn.firstBytes) held++;
    samples.push(`${Math.round((Date.now() - started) / 1000)}s:${held}`);
    return held;
  };
  const sampler = setInterval(sample, 5_000);
  await sleep(Math.max(0, holdS * 1_000 - (Date.now() - started)));
  clearInterval(sampler);
  const stillOpen = sample();
  stopping = true;
  await caller;
  for (const socket of attack.open.keys()) socket.destroy();

  const lifetimes = [...attack.closedAfterMs].sort((a, b) => a - b);
  const tally = new Map<string, number>();
  for (const o of outcomes) bump(tally, o.what);
  const okMs = outcomes
    .filter((o) => o.what.startsWith('200'))
    .map((o) => o.ms)
    .sort((a, b) => a - b);
  const report = {
    attack: {
      connections: total,
      sourceAddresses: addressCount,
      reopen: values.reopen,
      tried: attack.tried,
      connected: attack.connected,
      connectFailed: Object.fromEntries(attack.connectFailed),
      endedBy: Object.fromEntries(attack.answered),
      closedByServer: lifetimes.length,
      closedAfterMs: { p50: percentile(lifetimes, 50), max: lifetimes.at(-1) ?? null },
      [`stillOpenAfter${holdS}s`]: stillOpen,
      heldOverTime: samples.join(' '),
    },
    wellBehavedCaller: {
      requests: outcomes.length,
      outcomes: Object.fromEntries(tally),
      okMs: { p50: percentile(okMs, 50), p99: percentile(okMs, 99), max: okMs.at(-1) ?? null },
    },
  };
  console.log(JSON.stringify(report, null, 2));
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
