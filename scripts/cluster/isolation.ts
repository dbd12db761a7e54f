/**
 * A worker's own network, for the fault run's link cuts (scripts/cluster/faults.ts).
 *
 * As root with `ip` and `iptables`: a network namespace of its own joined to the host by a veth
 * pair (a /30 of 10.231.0.0/16), as a worker on another machine is. Everything the worker talks to
 * listens on the host's loopback, so for each of them (Temporal's frontend, the provider, the
 * webhook endpoint) a relay in this process listens on the host's end of the pair and forwards to
 * it. A cut is an iptables DROP inside the namespace for that relay's port, both ways: packets
 * vanish, open connections hang until their keepalives or timeouts notice, new ones time out —
 * a partition, not a refused connection.
 *
 * Elsewhere (not root, no `ip`): the relays listen on loopback and the worker is pointed at them;
 * a cut stops the relay forwarding and holds new connections unanswered (a black hole that the
 * kernel does not take part in). `mode` says which one ran.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';

export type LinkTarget = 'temporal' | 'provider' | 'webhooks';

export interface IsolatedNetwork {
  mode: 'netns' | 'relay';
  /** Why the namespace could not be used, when mode is `relay`. */
  fallbackReason?: string;
  /** The command prefix that runs a process inside it (empty for `relay`). */
  wrap: string[];
  /**
   * Relays `127.0.0.1:port` to the worker under `target`'s name; returns the `host:port` the
   * worker connects to instead.
   */
  relay(target: LinkTarget, port: number): Promise<string>;
  cut(target: LinkTarget): void;
  restore(target: LinkTarget): void;
  /** Bytes the worker has sent through `target`'s relay so far (its polls, once the link is back). */
  sent(target: LinkTarget): number;
  close(): Promise<void>;
}

function commandWorks(command: string, args: string[]): boolean {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

/** Why a namespace cannot be made here, or undefined if it can. */
function netnsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  if (!commandWorks('ip', ['-V'])) return 'no `ip` (iproute2)';
  if (!commandWorks('iptables', ['--version'])) return 'no `iptables`';
  return undefined;
}

interface Relay {
  server: Server;
  port: number;
  sockets: Set<Socket>;
  /** Relay mode only: while cut, nothing is forwarded. */
  cut: boolean;
  /** Bytes forwarded from the worker. */
  sent: number;
}

/** A TCP relay on `host` to 127.0.0.1:`port`. While `relay.cut`, bytes are held, not forwarded. */
async function startRelay(host: string, port: number): Promise<Relay> {
  const sockets = new Set<Socket>();
  const relay: Relay = { server: createServer(), port: 0, sockets, cut: false, sent: 0 };
  relay.server.on('connection', (inbound) => {
    sockets.add(inbound);
    const outbound = connect({ host: '127.0.0.1', port });
    sockets.add(outbound);
    const end = () => {
      inbound.destroy();
      outbound.destroy();
      sockets.delete(inbound);
      sockets.delete(outbound);
    };
    for (const [from, to] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      // A cut relay drops what it reads (a black hole), and the connection stays open.
      from.on('data', (chunk: Buffer) => {
        if (relay.cut) return;
        if (from === inbound) relay.sent += chunk.length;
        to.write(chunk);
      });
      from.on('error', end);
      from.on('close', end);
    }
  });
  await new Promise<void>((resolve, reject) => {
    relay.server.once('error', reject);
    relay.server.listen(0, host, () => resolve());
  });
  const address = relay.server.address();
  relay.port = typeof address === 'object' && address ? address.port : 0;
  return relay;
}

export async function isolateNetwork(log: (line: string) => void): Promise<IsolatedNetwork> {
  const relays = new Map<LinkTarget, Relay>();
  const closeRelays = async () => {
    for (const relay of relays.values()) {
      for (const socket of relay.sockets) socket.destroy();
      await new Promise<void>((resolve) => relay.server.close(() => resolve()));
    }
  };
  const relayMode = (fallbackReason: string): IsolatedNetwork => ({
    mode: 'relay',
    fallbackReason,
    wrap: [],
    async relay(target, port) {
      const relay = await startRelay('127.0.0.1', port);
      relays.set(target, relay);
      return `127.0.0.1:${relay.port}`;
    },
    cut: (target) => void (relays.get(target)!.cut = true),
    restore: (target) => void (relays.get(target)!.cut = false),
    sent: (target) => relays.get(target)?.sent ?? 0,
    close: closeRelays,
  });
  const unavailable = netnsUnavailable();
  if (unavailable) {
    log(`worker isolation: no network namespace (${unavailable}); relays on loopback instead`);
    return relayMode(unavailable);
  }

  const id = randomInt(1, 60_000).toString(36);
  const ns = `topup-fault-${id}`;
  const hostLink = `tf${id}h`;
  const nsLink = `tf${id}w`;
  // A /30 of 10.231.0.0/16: .1 the host's end, .2 the worker's.
  const block = randomInt(0, 16_384) * 4;
  const octets = (n: number) => `10.231.${Math.floor(n / 256)}.${n % 256}`;
  const hostIp = octets(block + 1);
  const nsIp = octets(block + 2);
  const run = (...args: string[]) => execFileSync(args[0]!, args.slice(1), { stdio: 'pipe' });
  const inNs = (...args: string[]) => run('ip', 'netns', 'exec', ns, ...args);
  const teardown = () => {
    spawnSync('ip', ['link', 'del', hostLink], { stdio: 'ignore' });
    spawnSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
  };
  try {
    run('ip', 'netns', 'add', ns);
    run('ip', 'link', 'add', hostLink, 'type', 'veth', 'peer', 'name', nsLink);
    run('ip', 'link', 'set', nsLink, 'netns', ns);
    run('ip', 'addr', 'add', `${hostIp}/30`, 'dev', hostLink);
    run('ip', 'link', 'set', hostLink, 'up');
    inNs('ip', 'addr', 'add', `${nsIp}/30`, 'dev', nsLink);
    inNs('ip', 'link', 'set', nsLink, 'up');
    inNs('ip', 'link', 'set', 'lo', 'up');
  } catch (err) {
    teardown();
    const reason = err instanceof Error ? err.message.split('\n')[0]! : String(err);
    log(`worker isolation: the namespace could not be made (${reason}); relays on loopback instead`);
    return relayMode(reason);
  }
  log(`worker isolation: network namespace ${ns}, ${nsIp} ↔ ${hostIp} (veth ${hostLink})`);
  /** The DROP rules of a cut: the worker's packets to the relay, and the relay's to the worker. */
  const rules = (port: number) => [
    ['OUTPUT', '-p', 'tcp', '-d', hostIp, '--dport', String(port), '-j', 'DROP'],
    ['INPUT', '-p', 'tcp', '-s', hostIp, '--sport', String(port), '-j', 'DROP'],
  ];
  return {
    mode: 'netns',
    wrap: ['ip', 'netns', 'exec', ns],
    async relay(target, port) {
      const relay = await startRelay(hostIp, port);
      relays.set(target, relay);
      return `${hostIp}:${relay.port}`;
    },
    cut(target) {
      for (const rule of rules(relays.get(target)!.port)) inNs('iptables', '-A', ...rule);
    },
    restore(target) {
      for (const rule of rules(relays.get(target)!.port)) inNs('iptables', '-D', ...rule);
    },
    sent: (target) => relays.get(target)?.sent ?? 0,
    async close() {
      await closeRelays();
      teardown();
    },
  };
}
