/**
 * API keys: generated here, stored only as hashes (src/clients/model.ts says why SHA-256 suffices).
 */
import { createHash, randomBytes } from 'node:crypto';

/** Recognisable in a leaked paste or a secret scanner; the rest is 256 random bits. */
export const API_KEY_PREFIX = 'tfk_';

export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** The SHA-256 of the key's UTF-8 bytes. */
export function keyDigest(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** What the clients file stores: `sha256:<hex>`. */
export function hashApiKey(key: string): string {
  return `sha256:${keyDigest(key).toString('hex')}`;
}

/** A key's name in the file and the logs: random, so it says nothing about the key. */
export function newKeyId(): string {
  return `k${randomBytes(4).toString('hex')}`;
}
