/**
 * The ref a top-up carries to the provider, derived from (client, ref).
 *
 * All clients share one provider account, whose refs are one namespace: two clients' `INV-1001`
 * must reach the provider as two refs. So every new order sends `<client>.<start of ref>.<hash>`:
 * the readable part helps the provider's support find an order, and the hash (96 bits of a SHA-256
 * over client and ref) makes the mapping injective in practice and the result unequal, but by a
 * 2^-96 accident, to any ref an old order sent as is. It stays within the provider's limits (1–64
 * characters of `[A-Za-z0-9._-]`: a client id and a ref use no other) and holds no personal data
 * (a client id and the client's own reference only).
 */
import { createHash } from 'node:crypto';
import { limits } from '../../contract/provider';

/** Hex digits of the hash kept: 24 × 4 = 96 bits (the collision bound for a 2^40-order history is 2^-17). */
const HASH_HEX_DIGITS = 24;
/** Versioned, so a future scheme can never produce the same hash for the same pair. */
const DOMAIN = 'topup-provider-ref/v1';

export function providerRefFor(clientId: string, ref: string): string {
  // NUL separates the parts: neither a client id nor a ref can contain it, so (a, bc) ≠ (ab, c).
  const hash = createHash('sha256')
    .update(`${DOMAIN}\0${clientId}\0${ref}`)
    .digest('hex')
    .slice(0, HASH_HEX_DIGITS);
  const readable = `${clientId}.${ref}`.slice(0, limits.refMaxLength - HASH_HEX_DIGITS - 1);
  return `${readable}.${hash}`;
}
