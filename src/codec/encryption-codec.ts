/**
 * AES-256-GCM encryption of Temporal payloads, so card codes and phone numbers never reach Temporal
 * Server (its database, its UI, its exports) in clear.
 *
 * Wire format: the whole original Payload (metadata and data) is serialized as protobuf and encrypted;
 * the result is a payload with metadata `encoding: binary/encrypted`, `encryption-key-id: <keyId>` and
 * data `iv(12) ‖ ciphertext ‖ tag(16)`. That is the layout of Temporal's Go encryption sample (plain
 * `Payload.encode`, no length prefix: the TypeScript sample's `encodeDelimited` is not byte-compatible
 * with it), so a worker or codec server in another language can share the keys.
 * The key id travels in the clear so keys can rotate: the first configured key encrypts, every
 * configured key decrypts, and an old key is dropped only once no history still needs it.
 *
 * Errors name key ids (not secret) and never carry key material or plaintext.
 */
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { METADATA_ENCODING_KEY, ValueError, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { ConfigError, type Config } from '../config';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const METADATA_KEY_ID = 'encryption-key-id';

const ALGORITHM = 'aes-256-gcm';
/** 96-bit random IVs are GCM's recommended size; with random IVs one key stays safe for ~2^32 payloads. */
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
/** Key ids appear in payload metadata and in logs, so only plain characters. */
const KEY_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
const BASE64_PATTERN = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export interface EncryptionKeys {
  /** The key id new payloads are encrypted with (the first one configured). */
  readonly currentKeyId: string;
  /**
   * Every key that may decrypt, by id. KeyObjects rather than Buffers: logging or inspecting one
   * prints `SecretKeyObject { type: 'secret', symmetricKeySize: 32 }`, never the bytes.
   */
  readonly keys: ReadonlyMap<string, KeyObject>;
}

/** A payload that cannot be decrypted. The message is safe to log and to return to a caller. */
export class PayloadDecryptionError extends ValueError {
  override name = 'PayloadDecryptionError';
}

/**
 * Parses `keyId:base64key[,keyId:base64key…]` of 32-byte keys (PAYLOAD_ENCRYPTION_KEYS, and
 * API_PAGE_TOKEN_KEYS: `variable` names it). Throws ConfigError listing every bad entry by
 * position and key id, never by its value.
 */
export function parseEncryptionKeys(value: string, variable = 'PAYLOAD_ENCRYPTION_KEYS'): EncryptionKeys {
  const problems: string[] = [];
  const keys = new Map<string, KeyObject>();
  const entries = value
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  if (entries.length === 0) problems.push('no key: expected keyId:base64key[,keyId:base64key…]');

  entries.forEach((entry, index) => {
    const where = `entry ${index + 1}`;
    const colon = entry.indexOf(':');
    if (colon < 0) {
      // The whole entry may be a bare key: do not echo it.
      problems.push(`${where}: expected keyId:base64key`);
      return;
    }
    const keyId = entry.slice(0, colon).trim();
    const encoded = entry.slice(colon + 1).trim();
    if (!KEY_ID_PATTERN.test(keyId)) {
      problems.push(`${where}: the key id must be 1-64 characters of A-Z a-z 0-9 . _ -`);
      return;
    }
    if (keys.has(keyId)) {
      problems.push(`${where}: key id "${keyId}" is used twice`);
      return;
    }
    if (!BASE64_PATTERN.test(encoded)) {
      problems.push(`${where} ("${keyId}"): the key is not standard base64`);
      return;
    }
    const bytes = Buffer.from(encoded, 'base64');
    if (bytes.length !== KEY_BYTES) {
      problems.push(
        `${where} ("${keyId}"): the key decodes to ${bytes.length} bytes, it needs ${KEY_BYTES} ` +
          '(make one with `openssl rand -base64 32`)',
      );
      return;
    }
    keys.set(keyId, createSecretKey(bytes));
    bytes.fill(0); // createSecretKey copied it; do not leave a second copy around.
  });

  const currentKeyId = keys.keys().next().value;
  if (problems.length > 0 || currentKeyId === undefined) {
    throw new ConfigError(`Invalid configuration:\n${problems.map((p) => `  ${variable}: ${p}`).join('\n')}`);
  }
  return { currentKeyId, keys };
}

export class EncryptionCodec implements PayloadCodec {
  private readonly currentKey: KeyObject;

  constructor(private readonly keyring: EncryptionKeys) {
    const key = keyring.keys.get(keyring.currentKeyId);
    if (!key) throw new ValueError(`encryption key "${keyring.currentKeyId}" is not among the keys`);
    this.currentKey = key;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => ({
      metadata: {
        [METADATA_ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING),
        [METADATA_KEY_ID]: Buffer.from(this.keyring.currentKeyId),
      },
      data: encrypt(temporal.api.common.v1.Payload.encode(payload).finish(), this.currentKey),
    }));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.decodeOne(payload));
  }

  private decodeOne(payload: Payload): Payload {
    const metadata = payload.metadata ?? {};
    const encoding = metadata[METADATA_ENCODING_KEY];
    // Payloads written before encryption was turned on (or by another codec) pass through untouched.
    if (!encoding || Buffer.from(encoding).toString() !== ENCRYPTED_ENCODING) return payload;

    const keyIdBytes = metadata[METADATA_KEY_ID];
    if (!keyIdBytes) throw new PayloadDecryptionError(`encrypted payload has no ${METADATA_KEY_ID}`);
    const keyId = Buffer.from(keyIdBytes).toString();
    // The id comes from the payload, i.e. from whoever sent it: echo it only if it looks like one of ours.
    const shownId = KEY_ID_PATTERN.test(keyId) ? `"${keyId}"` : '(malformed)';
    const key = this.keyring.keys.get(keyId);
    if (!key) {
      throw new PayloadDecryptionError(
        `payload is encrypted with key id ${shownId}, which is not in PAYLOAD_ENCRYPTION_KEYS`,
      );
    }

    let plaintext: Buffer;
    try {
      plaintext = decrypt(payload.data ?? new Uint8Array(), key);
    } catch {
      // GCM authentication failed: the cause says nothing useful and is deliberately not attached.
      throw new PayloadDecryptionError(
        `payload encrypted with key id ${shownId} failed authentication: ` +
          'it was altered or truncated, or that key id now names a different key',
      );
    }
    let decoded: temporal.api.common.v1.Payload;
    try {
      decoded = temporal.api.common.v1.Payload.decode(plaintext);
    } catch {
      throw new PayloadDecryptionError('decrypted payload is not a valid Temporal Payload');
    }
    // protobufjs leaves an absent bytes field as its default, a plain [] (a payload of `undefined`,
    // binary/null, has no data): hand on a Uint8Array like every other payload's.
    const data = decoded.data instanceof Uint8Array ? decoded.data : Uint8Array.from(decoded.data ?? []);
    return { metadata: decoded.metadata, data };
  }
}

function encrypt(plaintext: Uint8Array, key: KeyObject): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, key, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, ciphertext, cipher.getAuthTag()]);
}

/** Throws on any change to IV, ciphertext or tag: GCM authenticates all three. */
function decrypt(data: Uint8Array, key: KeyObject): Buffer {
  if (data.length < IV_BYTES + TAG_BYTES) throw new Error('too short');
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const decipher = createDecipheriv(ALGORITHM, key, bytes.subarray(0, IV_BYTES), {
    authTagLength: TAG_BYTES,
  });
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
  return Buffer.concat([
    decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)),
    decipher.final(),
  ]);
}

/** The codec for PAYLOAD_ENCRYPTION_KEYS, or undefined when it is unset (no encryption). */
export function createEncryptionCodecFromConfig(
  config: Pick<Config, 'PAYLOAD_ENCRYPTION_KEYS'>,
): EncryptionCodec | undefined {
  const value = config.PAYLOAD_ENCRYPTION_KEYS;
  return value ? new EncryptionCodec(parseEncryptionKeys(value)) : undefined;
}
