/**
 * API keys (spec section 5, fact sheet "Envelope and errors"): the sandbox knows three — a working
 * sandbox key, a production key (no live transactions exist here, so it may read but not send)
 * and a disabled key (it may only validate, and learns that it is disabled). Key values never
 * leave this module: the rest of the sandbox sees only the role.
 *
 * As documented: no key is 401 MISSING_ACCESS_TOKEN, a bad key 401 INVALID_ACCESS_TOKEN with
 * `attemptsLeft`, and the fifth bad key in a row from one address blocks that address for 15
 * minutes (IP_BLOCKED, whatever key it then sends). A good key resets the count (our choice).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { errorCodes, keyScopes, type ApiKeyType, type KeyScope } from '../provider';
import { forbidden, invalidKey, ipBlocked, missingKey, notFound } from './errors';

export type KeyRole = 'sandbox' | 'production' | 'disabled';

/** What an operation needs: `validate` any known key, `read` an enabled key, `write` the sandbox key. */
export type Access = 'validate' | 'read' | 'write';

export interface Keys {
  sandboxKey: string;
  productionKey: string;
  disabledKey: string;
}

/** Documented: five bad keys, then the address is blocked for 15 minutes. */
export const BAD_KEY_ATTEMPTS = 5;
export const IP_BLOCK_MS = 15 * 60_000;

/** Bad keys per client address, and the addresses blocked for them. */
export class BadKeyTracker {
  readonly #failures = new Map<string, number>();
  readonly #blockedUntil = new Map<string, number>();

  constructor(private readonly now: () => number) {}

  /** Throws IP_BLOCKED while `ip` is blocked. */
  assertNotBlocked(ip: string): void {
    const until = this.#blockedUntil.get(ip);
    if (until === undefined) return;
    if (until > this.now()) throw ipBlocked(Math.ceil((until - this.now()) / 1_000));
    this.#blockedUntil.delete(ip);
  }

  /** Records a bad key; returns the attempts left before the block. */
  failed(ip: string): number {
    const failures = (this.#failures.get(ip) ?? 0) + 1;
    if (failures >= BAD_KEY_ATTEMPTS) {
      this.#failures.delete(ip);
      this.#blockedUntil.set(ip, this.now() + IP_BLOCK_MS);
      return 0;
    }
    this.#failures.set(ip, failures);
    return BAD_KEY_ATTEMPTS - failures;
  }

  succeeded(ip: string): void {
    this.#failures.delete(ip);
  }

  clear(): void {
    this.#failures.clear();
    this.#blockedUntil.clear();
  }
}

export function createKeyring(
  keys: Keys,
  tracker: BadKeyTracker,
): (token: string | undefined, ip: string) => KeyRole {
  const roles = new Map<string, KeyRole>([
    [keys.sandboxKey, 'sandbox'],
    [keys.productionKey, 'production'],
    [keys.disabledKey, 'disabled'],
  ]);
  if (roles.size !== 3) throw new Error('sandbox keys must be distinct');
  return (token, ip) => {
    tracker.assertNotBlocked(ip);
    if (!token) throw missingKey();
    const role = roles.get(token);
    if (!role) {
      const attemptsLeft = tracker.failed(ip);
      if (attemptsLeft === 0) tracker.assertNotBlocked(ip);
      throw invalidKey(attemptsLeft);
    }
    tracker.succeeded(ip);
    return role;
  };
}

/** Throws when `role` may not perform an operation needing `access` (codes: the sandbox's own). */
export function authorize(role: KeyRole, access: Access, scope: KeyScope = keyScopes.readWrite): void {
  if (access === 'validate') return;
  if (role === 'disabled') throw forbidden(errorCodes.keyDisabled, 'this API key is disabled');
  if (access === 'write' && role === 'production') {
    throw forbidden(errorCodes.forbidden, 'production keys cannot perform transactions in the sandbox');
  }
  if (access === 'write' && scope === keyScopes.readOnly) {
    throw forbidden(errorCodes.readOnlyKey, 'this API key is read-only');
  }
}

/**
 * The key's IP whitelist (documented: a request from an address outside it is refused with 403;
 * empty = every address). Addresses compare without the IPv4-mapped IPv6 prefix.
 */
export function assertAllowedAddress(allowedIps: readonly string[], ip: string): void {
  if (allowedIps.length === 0) return;
  const plain = (address: string) => address.replace(/^::ffff:/i, '');
  if (!allowedIps.some((allowed) => plain(allowed) === plain(ip))) {
    throw forbidden(errorCodes.ipNotAllowed, 'request from an IP address outside the key’s whitelist');
  }
}

export function keyType(role: KeyRole): ApiKeyType {
  return role === 'production' ? 'PRODUCTION' : 'SANDBOX';
}

/**
 * The admin surface's guard. Without a configured token the surface does not exist (404); with
 * one, anything but that exact token is refused (403). Compared in constant time via digests,
 * which also equalises lengths.
 */
export function createAdminGuard(adminToken: string | undefined): (token: string | undefined) => void {
  const digest = (value: string) => createHash('sha256').update(value).digest();
  const expected = adminToken === undefined ? undefined : digest(adminToken);
  return (token) => {
    if (!expected) throw notFound('no admin surface: SANDBOX_ADMIN_TOKEN is not set');
    if (token === undefined || !timingSafeEqual(digest(token), expected)) {
      throw forbidden(errorCodes.forbidden, 'X-Admin-Token is missing or wrong');
    }
  };
}
