/**
 * Everything the sandbox remembers: top-ups, gift-card orders, per-ref send counters, the
 * fault rules and the outcome changes an admin scheduled (outcome-changes.ts). Statuses are
 * computed on read from the creation time, the due outcome changes and the clock (no timer per
 * order), and all check-then-insert steps are synchronous, so concurrent sends of one ref cannot
 * both be accepted.
 *
 * Orders belong to an `owner` (the key that created them): refs are unique per owner and per
 * family, and an owner never sees another's orders — which is why the production key, which can
 * create nothing here, finds nothing.
 */
import {
  type GiftCardOrderCheck,
  type InternetCheck,
  type InternetSendBody,
  type MobileCheck,
  type MobileSendBody,
  type PlaceOrderBody,
  type PlaceOrderResult,
  type ProviderStatus,
  type SendResult,
} from '../provider/wire';
import { duplicateRef, notFound } from './errors';
import { FaultStore } from './faults';
import {
  OutcomeChanges,
  type OutcomeChangeSpec,
  type OutcomeChange,
  type OutcomeTarget,
} from './outcome-changes';
import { CodeMaker, newId, scriptedMobileOutcome, timelineStatus, type ScriptedOutcome } from './simulation';

export type Family = 'mobile' | 'internet';

export interface SendCounts {
  /** The family of the first send of this ref. */
  family: Family;
  /** Sends that created a top-up. */
  accepted: number;
  /** Sends that passed authentication and validation, duplicates (409) included. */
  attempts: number;
}

export interface SendReport {
  refs: Record<string, SendCounts>;
  giftCardOrders: { placed: number };
}

interface Created<B> {
  id: string;
  owner: string;
  createdAt: number;
  body: B;
}

/** One family's top-ups, keyed by owner and ref. */
class TopupBook<B extends { ref: string }> {
  readonly #byKey = new Map<string, Created<B>>();

  /** `undefined` when the owner already used this ref. */
  add(owner: string, body: B, createdAt: number): Created<B> | undefined {
    const key = TopupBook.#key(owner, body.ref);
    if (this.#byKey.has(key)) return undefined;
    const topup = { id: newId(), owner, createdAt, body };
    this.#byKey.set(key, topup);
    return topup;
  }

  get(owner: string, ref: string): Created<B> | undefined {
    return this.#byKey.get(TopupBook.#key(owner, ref));
  }

  clear(): void {
    this.#byKey.clear();
  }

  // Refs cannot contain ':' (wire.ts Ref), so the key is unambiguous.
  static #key(owner: string, ref: string): string {
    return `${owner}:${ref}`;
  }
}

export interface SandboxStateOptions {
  /** Multiplies the spec's 5 s / 15 s delays. */
  timeScale: number;
  now: () => number;
  /** For fault probabilities. */
  random?: () => number;
}

/** A gift-card order as the admin surface lists it (tests look up an order whose answer was lost). */
export interface PlacedGiftCardOrder extends PlaceOrderBody {
  orderId: string;
  placedAt: string;
}

/** The message of a top-up an outcome change made REFUNDED, when the change gives none. */
const REVERSED_MESSAGE = 'The top-up was reversed by the operator; the amount was refunded.';

export class SandboxState {
  readonly faults: FaultStore;
  readonly outcomeChanges = new OutcomeChanges();
  readonly #timeScale: number;
  readonly #now: () => number;
  readonly #codes = new CodeMaker();
  readonly #mobile = new TopupBook<MobileSendBody>();
  readonly #internet = new TopupBook<InternetSendBody>();
  readonly #giftCardOrders = new Map<string, Created<PlaceOrderBody>>();
  /** By ref alone (only the sandbox key can send, and refs are unique per family in practice). */
  readonly #sendCounts = new Map<string, SendCounts>();

  constructor(options: SandboxStateOptions) {
    this.#timeScale = options.timeScale;
    this.#now = options.now;
    this.faults = new FaultStore(options.random);
  }

  sendMobile(owner: string, body: MobileSendBody): SendResult {
    return this.#send(this.#mobile, 'mobile', owner, body);
  }

  sendInternet(owner: string, body: InternetSendBody): SendResult {
    return this.#send(this.#internet, 'internet', owner, body);
  }

  checkMobile(owner: string, ref: string): MobileCheck {
    const { id, createdAt, body } = found(this.#mobile.get(owner, ref), `ref: no mobile top-up "${ref}"`);
    const changed = this.#changed({ ref });
    const { status, ...details }: ScriptedOutcome | { status: ProviderStatus; message?: string } = changed
      ? {
          status: changed.status,
          ...(changed.status === 'REFUNDED' && { message: changed.message ?? REVERSED_MESSAGE }),
        }
      : (scriptedMobileOutcome(body.MSSIDN, body.plan_code, body.amount) ?? {
          status: this.#status(createdAt),
        });
    return { status, MSSIDN: body.MSSIDN, topup_amount: body.amount, topupId: id, topupRef: ref, ...details };
  }

  checkInternet(owner: string, ref: string): InternetCheck {
    const { id, createdAt, body } = found(this.#internet.get(owner, ref), `ref: no internet top-up "${ref}"`);
    const status = this.#changed({ ref })?.status ?? this.#status(createdAt);
    return {
      status,
      topupId: id,
      topupRef: ref,
      type: body.type,
      number: body.number,
      value: body.value,
      ...(status === 'FULFILLED' && {
        card_code: this.#codes.digits(`${id}:card`, 16),
        num_trans: this.#codes.digits(`${id}:trans`, 12),
      }),
    };
  }

  placeGiftCardOrder(owner: string, body: PlaceOrderBody): PlaceOrderResult {
    const orderId = newId();
    this.#giftCardOrders.set(orderId, { id: orderId, owner, createdAt: this.#now(), body });
    return { orderId };
  }

  checkGiftCardOrder(owner: string, orderId: string): GiftCardOrderCheck {
    const order = this.#giftCardOrders.get(orderId);
    const { createdAt, body } = found(
      order?.owner === owner ? order : undefined,
      `orderId: no order "${orderId}"`,
    );
    const status = this.#changed({ orderId })?.status ?? this.#status(createdAt);
    return {
      status,
      orderId,
      productId: body.productId,
      typeId: body.typeId,
      quantity: body.quantity,
      ...(status === 'FULFILLED' && {
        cards: Array.from({ length: body.quantity }, (_, i) => ({
          value: this.#codes.digits(`${orderId}:card:${i}`, 16),
          serial: `SN${this.#codes.digits(`${orderId}:serial:${i}`, 12)}`,
        })),
      }),
    };
  }

  /**
   * From `afterMs` on, checks of the top-up(s) under `ref` (any family, any key) or of the gift-card
   * order `orderId` answer `spec.status` (README "Provider sandbox": outcomes that change later).
   * A ref may be named before it is sent, so a test can arrange an outcome without racing the
   * timeline; an orderId must exist, since only the sandbox makes them up.
   */
  changeOutcome(target: OutcomeTarget, spec: OutcomeChangeSpec): OutcomeChange {
    if ('orderId' in target && !this.#giftCardOrders.has(target.orderId)) {
      throw notFound(`orderId: no order "${target.orderId}"`);
    }
    return this.outcomeChanges.add(target, spec, this.#now());
  }

  giftCardOrders(): PlacedGiftCardOrder[] {
    return [...this.#giftCardOrders.values()].map(({ id, createdAt, body }) => ({
      orderId: id,
      ...body,
      placedAt: new Date(createdAt).toISOString(),
    }));
  }

  sendReport(): SendReport {
    return {
      // Copies: a report is a snapshot, not a live view of the counters.
      refs: Object.fromEntries([...this.#sendCounts].map(([ref, counts]) => [ref, { ...counts }])),
      giftCardOrders: { placed: this.#giftCardOrders.size },
    };
  }

  sendCountsOf(ref: string): { ref: string; accepted: number; attempts: number } {
    const counts = this.#sendCounts.get(ref);
    return { ref, accepted: counts?.accepted ?? 0, attempts: counts?.attempts ?? 0 };
  }

  /** Forget every order, counter and fault rule. */
  reset(): void {
    this.#mobile.clear();
    this.#internet.clear();
    this.#giftCardOrders.clear();
    this.#sendCounts.clear();
    this.faults.clear();
    this.outcomeChanges.clear();
  }

  #send<B extends { ref: string }>(book: TopupBook<B>, family: Family, owner: string, body: B): SendResult {
    const counts = this.#sendCounts.get(body.ref) ?? { family, accepted: 0, attempts: 0 };
    this.#sendCounts.set(body.ref, counts);
    counts.attempts++;
    const topup = book.add(owner, body, this.#now());
    if (!topup) throw duplicateRef(body.ref);
    counts.accepted++;
    return { topupId: topup.id, topupRef: body.ref };
  }

  #changed(target: OutcomeTarget): OutcomeChange | undefined {
    return this.outcomeChanges.due(target, this.#now());
  }

  #status(createdAt: number): ProviderStatus {
    return timelineStatus(this.#now() - createdAt, this.#timeScale);
  }
}

function found<T>(value: T | undefined, message: string): T {
  if (value === undefined) throw notFound(message);
  return value;
}
