/**
 * Endpoint signing secrets, derived instead of stored: HKDF-SHA256 of WEBHOOK_SIGNING_KEY with the
 * client id, the endpoint id and the endpoint's `secretVersion`. The clients file therefore holds
 * no secret (it already holds only key hashes), the worker needs one secret from its environment
 * to sign for every endpoint, and a rotation is a version bump. Whoever holds WEBHOOK_SIGNING_KEY
 * can compute every endpoint's secret: keep it in a secret store, like PAYLOAD_ENCRYPTION_KEYS.
 *
 * The secrets are in the Standard Webhooks form (`whsec_` + base64 of 32 bytes), what the
 * `standardwebhooks` library (and every receiver's library) takes.
 */
import { hkdfSync } from 'node:crypto';
import type { WebhookEndpoint } from '../clients';

/** Domain separation: the same master key used for anything else would derive other bytes. */
const HKDF_SALT = 'topup-fulfillment webhook signing secret v1';

export function signingKeyFrom(base64: string): Buffer {
  return Buffer.from(base64, 'base64');
}

export function endpointSecret(
  signingKey: Buffer,
  client: string,
  endpoint: string,
  version: number,
): string {
  const bytes = hkdfSync('sha256', signingKey, HKDF_SALT, `${client}\n${endpoint}\n${version}`, 32);
  return `whsec_${Buffer.from(bytes).toString('base64')}`;
}

/** The secrets an event to this endpoint is signed with: the current one, and the previous during a rotation. */
export function endpointSecrets(signingKey: Buffer, client: string, endpoint: WebhookEndpoint): string[] {
  const current = endpoint.secretVersion ?? 1;
  const versions =
    endpoint.previousSecretVersion !== undefined ? [current, endpoint.previousSecretVersion] : [current];
  return versions.map((version) => endpointSecret(signingKey, client, endpoint.id, version));
}
