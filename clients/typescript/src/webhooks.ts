/**
 * Verifying the service's webhooks (Standard Webhooks, https://www.standardwebhooks.com/): each
 * request carries `webhook-id`, `webhook-timestamp` (epoch seconds) and `webhook-signature`
 * (space-separated `v1,<base64 HMAC-SHA256>`), signed over `<id>.<timestamp>.<raw body>` with the
 * endpoint's secret (`whsec_<base64 key>`).
 *
 * Written on node:crypto rather than on the `standardwebhooks` package so that the client library
 * has no dependency beyond what its generated client needs; the tests check it against that
 * package's signing. This module imports nothing but node:crypto and types, so a receiver can use
 * it without the HTTP client (`@topup/client/webhooks`).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { components } from './schema';

/** An order event as the service sends it: `data` is the order as its owner reads it then. */
export interface WebhookEvent {
  /** The event's id, also the `webhook-id` header: the same on every retry and redelivery. */
  id: string;
  type: components['schemas']['WebhookEventType'];
  /** When the order changed (the attempt's time is `webhook-timestamp`). */
  timestamp: string;
  /** 1, 2, 3… per order, in the order the changes happened: keep the highest per order. */
  sequence: number;
  data: components['schemas']['OrderView'];
}

export type WebhookVerificationReason =
  'missing-header' | 'bad-timestamp' | 'too-old' | 'too-new' | 'bad-signature' | 'bad-body' | 'replay';

/** A delivery that must not be acted on; `reason` says why, `message` in words. */
export class WebhookVerificationError extends Error {
  override readonly name: string = 'WebhookVerificationError';
  constructor(
    readonly reason: WebhookVerificationReason,
    message: string,
  ) {
    super(message);
  }
}

/**
 * An authentic event whose id was seen within the tolerance window: a retry or a redelivery of an
 * event already received (delivery is at least once). Answer 2xx and do nothing; `event` is it.
 */
export class WebhookReplayError extends WebhookVerificationError {
  override readonly name = 'WebhookReplayError';
  constructor(readonly event: WebhookEvent) {
    super('replay', `event ${event.id} was already received (a retry or a replay): not processed again`);
  }
}

/**
 * Where seen event ids are kept. An id need only be kept until its timestamp leaves the tolerance
 * window: after that the timestamp check refuses the delivery anyway. Several receiver processes
 * share one store (a database table, Redis `SET NX PX`) to refuse a replay sent to another of them.
 */
export interface ReplayStore {
  /** Records `id` until `untilMs` (epoch ms); true when it was not there yet. Must be atomic. */
  remember(id: string, untilMs: number): boolean | Promise<boolean>;
  /** Removes `id`, so that a later delivery of it is taken (after processing it failed). */
  forget(id: string): void | Promise<void>;
}

/** In-process memory, for one receiver process; expired ids are dropped as new ones come. */
export class MemoryReplayStore implements ReplayStore {
  readonly #until = new Map<string, number>();
  constructor(private readonly now: () => number = Date.now) {}

  remember(id: string, untilMs: number): boolean {
    const now = this.now();
    // Map keeps insertion order, and ids come roughly in time order: drop from the front.
    for (const [seen, until] of this.#until) {
      if (until > now) break;
      this.#until.delete(seen);
    }
    const known = this.#until.get(id);
    if (known !== undefined && known > now) return false;
    this.#until.set(id, untilMs);
    return true;
  }

  forget(id: string): void {
    this.#until.delete(id);
  }
}

export interface WebhookVerifierOptions {
  /**
   * The endpoint's secrets (`whsec_…`, `npm run clients -- webhook-secret`). During a rotation give
   * the new one and the old one: a delivery verifies when any signature matches any secret.
   */
  secrets: string | readonly string[];
  /** How far `webhook-timestamp` may be from now, in seconds (default 300, the spec's). */
  toleranceSeconds?: number;
  /** Where seen ids are kept (default: in memory); `false`: no replay check. */
  replays?: ReplayStore | false;
  /** The clock, epoch ms (tests). */
  now?: () => number;
}

/** Headers as Node (`IncomingHttpHeaders`), fetch (`Headers`) or a plain object give them. */
export type WebhookHeaders =
  { get(name: string): string | null } | Record<string, string | string[] | undefined>;

const SECRET_PREFIX = 'whsec_';

function headerOf(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof headers.get === 'function')
    return (headers.get as (n: string) => string | null)(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const value = record[name] ?? Object.entries(record).find(([key]) => key.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? value[0] : value;
}

function keyOf(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(encoded, 'base64');
  if (key.length === 0) throw new TypeError('a webhook secret is whsec_ and a base64 key');
  return key;
}

export class WebhookVerifier {
  readonly #keys: Buffer[];
  readonly #toleranceS: number;
  readonly #replays: ReplayStore | undefined;
  readonly #now: () => number;

  constructor(options: WebhookVerifierOptions) {
    const secrets = typeof options.secrets === 'string' ? [options.secrets] : options.secrets;
    if (secrets.length === 0) throw new TypeError('at least one webhook secret');
    this.#keys = secrets.map(keyOf);
    this.#toleranceS = options.toleranceSeconds ?? 300;
    this.#now = options.now ?? Date.now;
    this.#replays =
      options.replays === false ? undefined : (options.replays ?? new MemoryReplayStore(this.#now));
  }

  /**
   * The event, once its signature, timestamp and id check out. Give the raw body, exactly as
   * received (before any JSON parsing: re-serialising changes the bytes signed). Throws
   * WebhookVerificationError (forged, altered, too old or too new) or WebhookReplayError (authentic,
   * already received).
   */
  async verify(rawBody: string | Uint8Array, headers: WebhookHeaders): Promise<WebhookEvent> {
    const { event, signedAtS } = this.#check(rawBody, headers);
    if (this.#replays) {
      // Kept as long as the timestamp check would let the same delivery through.
      const fresh = await this.#replays.remember(event.id, (signedAtS + this.#toleranceS) * 1_000 + 1_000);
      if (!fresh) throw new WebhookReplayError(event);
    }
    return event;
  }

  /**
   * The signature and timestamp checks alone, synchronously, without the replay check: for a
   * receiver that deduplicates by `event.id` itself (as the service's own docs advise).
   */
  verifySignature(rawBody: string | Uint8Array, headers: WebhookHeaders): WebhookEvent {
    return this.#check(rawBody, headers).event;
  }

  /** Lets a later delivery of `id` through again: call it when processing the event failed. */
  async forget(id: string): Promise<void> {
    await this.#replays?.forget(id);
  }

  #check(rawBody: string | Uint8Array, headers: WebhookHeaders): { event: WebhookEvent; signedAtS: number } {
    const id = headerOf(headers, 'webhook-id');
    const timestamp = headerOf(headers, 'webhook-timestamp');
    const signature = headerOf(headers, 'webhook-signature');
    for (const [name, value] of [
      ['webhook-id', id],
      ['webhook-timestamp', timestamp],
      ['webhook-signature', signature],
    ] as const) {
      if (!value) throw new WebhookVerificationError('missing-header', `no ${name} header`);
    }
    if (!/^\d{1,12}$/.test(timestamp!))
      throw new WebhookVerificationError('bad-timestamp', 'webhook-timestamp is not epoch seconds');
    const signedAtS = Number(timestamp);
    const nowS = Math.floor(this.#now() / 1_000);
    // Checked before the signature: an old delivery, however authentic, is a replay risk.
    if (nowS - signedAtS > this.#toleranceS)
      throw new WebhookVerificationError(
        'too-old',
        `signed ${nowS - signedAtS} s ago, more than the ${this.#toleranceS} s tolerance`,
      );
    if (signedAtS - nowS > this.#toleranceS)
      throw new WebhookVerificationError(
        'too-new',
        `signed ${signedAtS - nowS} s in the future, more than the ${this.#toleranceS} s tolerance`,
      );
    const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
    const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`, 'utf8'), body]);
    const expected = this.#keys.map((key) => createHmac('sha256', key).update(signed).digest());
    // Each `v1,<base64>` against each secret, in constant time per comparison; other versions
    // (a future asymmetric v1a) are skipped, as the spec asks.
    const matched = signature!.split(' ').some((entry) => {
      const [version, value] = entry.split(',', 2);
      if (version !== 'v1' || !value) return false;
      const given = Buffer.from(value, 'base64');
      return expected.some((mac) => mac.length === given.length && timingSafeEqual(mac, given));
    });
    if (!matched)
      throw new WebhookVerificationError(
        'bad-signature',
        'no signature matches the secrets given (a forged or altered delivery, or the wrong secret)',
      );
    let event: WebhookEvent;
    try {
      event = JSON.parse(body.toString('utf8')) as WebhookEvent;
    } catch {
      throw new WebhookVerificationError('bad-body', 'the signed body is not JSON');
    }
    // The service's events carry the header's id; the signature binds both, so a difference is
    // a sender's bug, not an attack: still refused, as nothing else about it can be trusted.
    if (typeof event === 'object' && event !== null && 'id' in event && event.id !== id)
      throw new WebhookVerificationError('bad-body', 'the body’s id is not the webhook-id header');
    return { event, signedAtS };
  }
}
