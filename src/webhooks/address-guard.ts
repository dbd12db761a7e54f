/**
 * Which addresses a webhook may be delivered to, checked where it matters: on the address a
 * connection is actually made to, not on the URL alone. A URL's host name could resolve to a
 * public address when the endpoint is configured and to 127.0.0.1 a second later (DNS rebinding),
 * so the check sits in the connection itself:
 *
 * - a literal IP in the URL is checked before connecting;
 * - a host name is resolved by our own lookup, which refuses the name if *any* of its addresses is
 *   refused, and hands Node exactly the addresses it checked, so Node connects to one of them;
 * - once connected, the socket's remote address is checked again (and the socket destroyed if it
 *   is refused), whatever path led there.
 *
 * Only public unicast addresses pass (ipaddr.js's "unicast" range, after an IPv4-mapped IPv6
 * address is read as the IPv4 address it maps): loopback, private, link-local, unique-local,
 * carrier-grade NAT, multicast, reserved, NAT64 / 6to4 / Teredo (which can embed a private IPv4)
 * and the unspecified address are refused, unless a configured network (WEBHOOK_ALLOWED_NETWORKS)
 * contains the address.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import ipaddr from 'ipaddr.js';
import { buildConnector } from 'undici';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** A connection the policy refused; its message names the kind of address, never the address. */
export class AddressRefusedError extends Error {
  override name = 'AddressRefusedError';
  readonly code = 'WEBHOOK_ADDRESS_REFUSED';
  constructor(readonly range: string) {
    super(
      `refused: the endpoint's address is ${describeRange(range)}, not a public one (WEBHOOK_ALLOWED_NETWORKS)`,
    );
  }
}

function describeRange(range: string): string {
  const names: Record<string, string> = {
    loopback: 'a loopback address',
    private: 'a private address',
    linkLocal: 'a link-local address',
    uniqueLocal: 'a unique-local address',
    carrierGradeNat: 'a carrier-grade NAT address',
    unspecified: 'the unspecified address',
    multicast: 'a multicast address',
    broadcast: 'the broadcast address',
    unparsable: 'not an IP address',
  };
  return names[range] ?? `in a reserved or special range (${range})`;
}

export class AddressPolicy {
  readonly #allowed: [Address, number][];

  /** `allowedNetworks`: CIDR ranges reachable although not public (validated by the configuration). */
  constructor(allowedNetworks: readonly string[] = []) {
    this.#allowed = allowedNetworks.map((cidr) => ipaddr.parseCIDR(cidr));
  }

  /** Undefined when `address` may be connected to; otherwise the name of its range. */
  refusal(address: string): string | undefined {
    let ip: Address;
    try {
      ip = ipaddr.parse(address);
    } catch {
      return 'unparsable';
    }
    // ::ffff:10.0.0.1 reaches 10.0.0.1: judge the IPv4 address it maps.
    if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) {
      ip = (ip as ipaddr.IPv6).toIPv4Address();
    }
    if (this.#allowed.some(([network, bits]) => network.kind() === ip.kind() && ip.match(network, bits))) {
      return undefined;
    }
    const range = ip.range();
    return range === 'unicast' ? undefined : range;
  }
}

/** node:dns lookup's shape with `all: true`, so tests can answer for names of their own. */
export type LookupAll = (
  hostname: string,
  options: LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

const systemLookup: LookupAll = (hostname, options, callback) => dnsLookup(hostname, options, callback);

/**
 * An undici connector that connects only to addresses the policy allows (see the module comment).
 * `lookup` resolves host names (default: the system resolver, as Node would).
 */
export function guardedConnector(
  policy: AddressPolicy,
  options: { connectTimeoutMs: number; lookup?: LookupAll },
): buildConnector.connector {
  const resolveAll = options.lookup ?? systemLookup;
  // net.connect's lookup option: (hostname, options, callback) with either one address or all of them.
  const checkedLookup: LookupFunction = (hostname, lookupOptions, callback) => {
    resolveAll(hostname, { ...lookupOptions, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const refused = addresses.map((a) => policy.refusal(a.address)).find((r) => r !== undefined);
      if (refused !== undefined) return callback(new AddressRefusedError(refused), []);
      if (addresses.length === 0)
        return callback(Object.assign(new Error('no address'), { code: 'ENOTFOUND' }), []);
      if (lookupOptions.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
  const connect = buildConnector({ timeout: options.connectTimeoutMs, lookup: checkedLookup });
  return (connectOptions, callback) => {
    const host = connectOptions.hostname.replace(/^\[(.*)\]$/, '$1');
    // Node does not look a literal IP up, so the lookup above never sees it: check it here.
    const literal = isIP(host) ? policy.refusal(host) : undefined;
    if (literal !== undefined) return callback(new AddressRefusedError(literal), null);
    connect(connectOptions, (err, socket) => {
      if (err) return callback(err, null);
      const remote = (socket as Socket).remoteAddress;
      const refused = remote === undefined ? 'unparsable' : policy.refusal(remote);
      if (refused !== undefined) {
        socket.destroy();
        return callback(new AddressRefusedError(refused), null);
      }
      callback(null, socket);
    });
  };
}
