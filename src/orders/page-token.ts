/**
 * Page tokens of GET /v1/orders, sealed with a server key: `base64url(keyId length ‖ keyId ‖ mac ‖
 * cursor)`, where the mac is HMAC-SHA-256 (first 16 bytes) over the key id, the list's filter and
 * the cursor. Only this service can make a token, and a token opens only for the list it was made
 * for: same filters, same caller's reach. A token that fails any of that is a 400 naming
 * `pageToken` before Temporal is asked.
 *
 * Keys rotate like the payload keys (API_PAGE_TOKEN_KEYS, the codec's format): the first seals,
 * every key listed opens, and the old one is dropped once the tokens it sealed no longer matter
 * (a page token is for paging now, not for keeping).
 */
import { createHmac, randomBytes, timingSafeEqual, createSecretKey } from 'node:crypto';
import type { Config } from '../config';
import { parseEncryptionKeys, type EncryptionKeys } from '../codec';

const MAC_BYTES = 16;
/** Domain separation: these keys sign page tokens and nothing else. */
const CONTEXT = 'topup-fulfillment/page-token/v1';

export class PageTokens {
  readonly #keys: EncryptionKeys;

  constructor(keys: EncryptionKeys) {
    this.#keys = keys;
  }

  seal(cursor: Buffer, filter: string): string {
    const keyId = Buffer.from(this.#keys.currentKeyId);
    const mac = this.#mac(this.#keys.currentKeyId, filter, cursor);
    return Buffer.concat([Buffer.from([keyId.length]), keyId, mac, cursor]).toString('base64url');
  }

  /** The cursor the token holds, if this service sealed it for this filter with a key it still has. */
  open(token: string, filter: string): Buffer | undefined {
    const sealed = Buffer.from(token, 'base64url');
    const keyIdLength = sealed[0] ?? 0;
    const macStart = 1 + keyIdLength;
    const cursor = sealed.subarray(macStart + MAC_BYTES);
    if (keyIdLength === 0 || cursor.length === 0) return undefined;
    const keyId = sealed.subarray(1, macStart).toString('latin1');
    if (!this.#keys.keys.has(keyId)) return undefined;
    const mac = sealed.subarray(macStart, macStart + MAC_BYTES);
    return timingSafeEqual(mac, this.#mac(keyId, filter, cursor)) ? cursor : undefined;
  }

  #mac(keyId: string, filter: string, cursor: Buffer): Buffer {
    const key = this.#keys.keys.get(keyId)!;
    return createHmac('sha256', key)
      .update(`${CONTEXT}\0${keyId}\0${filter}\0`)
      .update(cursor)
      .digest()
      .subarray(0, MAC_BYTES);
  }
}

/**
 * The page tokens of API_PAGE_TOKEN_KEYS; unset, a random key of this process alone (`random`:
 * main.ts says so in its start line, since tokens then fail on another instance or after a restart).
 */
export function pageTokensFromConfig(config: Pick<Config, 'API_PAGE_TOKEN_KEYS'>): {
  pageTokens: PageTokens;
  random: boolean;
} {
  if (config.API_PAGE_TOKEN_KEYS) {
    return {
      pageTokens: new PageTokens(parseEncryptionKeys(config.API_PAGE_TOKEN_KEYS, 'API_PAGE_TOKEN_KEYS')),
      random: false,
    };
  }
  const keys = new Map([['process', createSecretKey(randomBytes(32))]]);
  return { pageTokens: new PageTokens({ currentKeyId: 'process', keys }), random: true };
}
