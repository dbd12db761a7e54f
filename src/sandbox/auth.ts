/**
 * API keys (spec section 5): the sandbox knows three — a working sandbox key, a production key
 * (no live transactions exist here, so it may read but not send) and a disabled key (it may only
 * validate, and learns that it is disabled). Key values never leave this module: the rest of the
 * sandbox sees only the role.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { type ApiKeyType } from '../provider/wire';
import { forbidden, notFound, unauthorized } from './errors';

export type KeyRole = 'sandbox' | 'production' | 'disabled';

/** What an operation needs: `validate` any known key, `read` an enabled key, `write` the sandbox key. */
export type Access = 'validate' | 'read' | 'write';

export interface Keys {
  sandboxKey: string;
  productionKey: string;
  disabledKey: string;
}

export function createKeyring(keys: Keys): (token: string | undefined) => KeyRole {
  const roles = new Map<string, KeyRole>([
    [keys.sandboxKey, 'sandbox'],
    [keys.productionKey, 'production'],
    [keys.disabledKey, 'disabled'],
  ]);
  if (roles.size !== 3) throw new Error('sandbox keys must be distinct');
  return (token) => {
    if (!token) throw unauthorized('X-Access-Token header is required');
    const role = roles.get(token);
    if (!role) throw unauthorized('unknown API key');
    return role;
  };
}

/** Throws when `role` may not perform an operation needing `access`. */
export function authorize(role: KeyRole, access: Access): void {
  if (access === 'validate') return;
  if (role === 'disabled') throw forbidden('this API key is disabled');
  if (access === 'write' && role === 'production') {
    throw forbidden('production keys cannot perform transactions in the sandbox');
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
      throw forbidden('X-Admin-Token is missing or wrong');
    }
  };
}
