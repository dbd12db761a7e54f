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
 * Only public unicast addresses pass (ipaddr.js's "unicast" range): loopback, private,
 * link-local, unique-local, carrier-grade NAT, multicast, reserved and the unspecified address are
 * refused, unless a configured network (WEBHOOK_ALLOWED_NETWORKS) contains the address.
 *
 * An IPv6 address that carries an IPv4 address is judged by that IPv4 address first (ipaddr.js
 * calls some of these forms "unicast", so `[::127.0.0.1]` — written `::7f00:1` — once passed):
 * IPv4-mapped (`::ffff:a.b.c.d`, the IPv4 host itself: judged as it alone), IPv4-compatible
 * (`::a.b.c.d`, deprecated: refused even when the IPv4 address is public), and the translation
 * and tunnel forms — IPv4-translated (`::ffff:0:a.b.c.d`), NAT64 (`64:ff9b::/96`), 6to4
 * (`2002::/16`) and Teredo (`2001::/32`, server and client) — which a refused IPv4 address makes
 * refused by its range, and which are refused by their own range otherwise.
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
    ipv4Compatible: 'an IPv4-compatible IPv6 address (deprecated)',
    rfc6052: 'a NAT64 address',
    rfc6145: 'an IPv4-translated address',
    '6to4': 'a 6to4 address',
    teredo: 'a Teredo address',
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
    if (ip.kind() === 'ipv4') return this.#judge(ip);
    const ipv6 = ip as ipaddr.IPv6;
    // ::ffff:10.0.0.1 reaches 10.0.0.1: judge the IPv4 address it maps, and only that.
    if (ipv6.isIPv4MappedAddress()) return this.#judge(ipv6.toIPv4Address());
    for (const embedded of embeddedIPv4(ipv6)) {
      const refused = this.#judge(embedded);
      if (refused !== undefined) return refused;
    }
    if (isIPv4Compatible(ipv6)) return 'ipv4Compatible';
    return this.#judge(ipv6);
  }

  #judge(ip: Address): string | undefined {
    if (this.#allowed.some(([network, bits]) => network.kind() === ip.kind() && ip.match(network, bits))) {
      return undefined;
    }
    const range = ip.range();
    return range === 'unicast' ? undefined : range;
  }
}

/** `::a.b.c.d` (RFC 4291 section 2.5.5.1, deprecated), not `::` or `::1`. */
function isIPv4Compatible(ip: ipaddr.IPv6): boolean {
  const p = ip.parts;
  return p.slice(0, 6).every((x) => x === 0) && (p[6] !== 0 || p[7]! > 1);
}

function ipv4Of(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/** The IPv4 addresses an IPv6 address carries in a translation or tunnel form (besides IPv4-mapped). */
function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4[] {
  const p = ip.parts;
  const zero = (from: number, to: number) => p.slice(from, to).every((x) => x === 0);
  // IPv4-compatible ::a.b.c.d and IPv4-translated ::ffff:0:a.b.c.d (RFC 6145).
  if (isIPv4Compatible(ip) || (zero(0, 4) && p[4] === 0xffff && p[5] === 0)) return [ipv4Of(p[6]!, p[7]!)];
  // NAT64, the well-known prefix 64:ff9b::/96 (RFC 6052) and the local-use 64:ff9b:1::/48 (RFC 8215)
  // with the address in the last 32 bits, as /96 prefixes put it.
  if (p[0] === 0x64 && p[1] === 0xff9b) return [ipv4Of(p[6]!, p[7]!)];
  // 6to4 2002:AABB:CCDD::/48 (RFC 3056).
  if (p[0] === 0x2002) return [ipv4Of(p[1]!, p[2]!)];
  // Teredo 2001:0:server:…:client with the client's bits inverted (RFC 4380).
  if (p[0] === 0x2001 && p[1] === 0) return [ipv4Of(p[2]!, p[3]!), ipv4Of(p[6]! ^ 0xffff, p[7]! ^ 0xffff)];
  return [];
}

/**
 * Why a webhook URL whose host is a literal IP address could never be delivered to, or undefined
 * (a host name is judged at each connection, on what it resolves to then): for the clients tool,
 * so an endpoint that would only ever be refused is refused when it is added.
 */
export function literalAddressRefusal(url: string, policy: AddressPolicy): string | undefined {
  const host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
  if (!isIP(host)) return undefined;
  const refused = policy.refusal(host);
  return refused === undefined ? undefined : new AddressRefusedError(refused).message;
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
