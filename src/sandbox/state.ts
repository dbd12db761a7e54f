/**
 * Everything the sandbox remembers: top-ups, gift-card orders, per-ref send counters, its
 * settings, the fault rules and the outcome changes an admin scheduled (outcome-changes.ts).
 * Statuses are computed on read from the commit time, the due outcome changes and the clock (no
 * timer per order), and all check-then-insert steps are synchronous, so with `uniqueRefs` (the
 * default) concurrent sends of one ref cannot both be accepted. Without it the sandbox behaves like
 * a provider with no atomic uniqueness check: every send it receives is committed.
 *
 * Orders belong to an `owner` (the key that created them): refs are unique per owner and per
 * family, and an owner never sees another's orders — which is why the production key, which can
 * create nothing here, finds nothing.
 *
 * With a state file every committed change is journaled (journal.ts) before it is answered, and a
 * new SandboxState on the same file starts where the last one stopped. Fault rules and the request
 * log are not kept: they are a test's set-up, not the provider's data.
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
import { FaultStore, type RouteName } from './faults';
import { Journal, type JournalRecord } from './journal';
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

/** What an admin may change at run time (PATCH /admin/settings); kept in the state file. */
export interface SandboxSettings {
  /**
   * true (default): a ref already used by this key answers 409, atomically. false: like a provider
   * without an atomic uniqueness check, every send received is committed, so a double send shows
   * as two accepted sends of one ref in /admin/sends.
   */
  uniqueRefs: boolean;
}

export const defaultSandboxSettings: Readonly<SandboxSettings> = { uniqueRefs: true };

/** How a read sees the state: as of `lagMs` ago (a lagging replica), or now. */
export interface ReadView {
  lagMs?: number;
}

interface Created<B> {
  id: string;
  owner: string;
  /** When it was committed: the start of its status timeline. */
  createdAt: number;
  body: B;
}

/** One family's top-ups, keyed by owner and ref; more than one per key only without `uniqueRefs`. */
class TopupBook<B extends { ref: string }> {
  readonly #byKey = new Map<string, Created<B>[]>();

  has(owner: string, ref: string): boolean {
    return this.#byKey.has(TopupBook.#key(owner, ref));
  }

  add(topup: Created<B>): void {
    const key = TopupBook.#key(topup.owner, topup.body.ref);
    const list = this.#byKey.get(key);
    if (list) list.push(topup);
    else this.#byKey.set(key, [topup]);
  }

  /**
   * The first top-up committed under this ref that a read as of `asOf` can see. A provider that
   * let a ref be committed twice answers check-ref from the oldest row (the sandbox's choice).
   */
  get(owner: string, ref: string, asOf: number): Created<B> | undefined {
    return this.#byKey.get(TopupBook.#key(owner, ref))?.find((topup) => topup.createdAt <= asOf);
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
  /** Journal every committed change here and start from what it holds (SANDBOX_STATE_FILE). */
  stateFile?: string;
}

/** One request as the sandbox saw it (GET /admin/requests): when it came and when its connection let go. */
export interface RequestRecord {
  route: RouteName;
  /** Epoch ms the request reached its route. */
  receivedAt: number;
  /** Epoch ms the response finished or the connection closed; unset while it is open. */
  endedAt?: number;
  /** Whether a complete answer was written (false: the client left, or the answer was dropped). */
  answered?: boolean;
}

/** The request log keeps the latest requests only: a long run must not grow it without bound. */
const REQUEST_LOG_SIZE = 1_000;

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
  #codes: CodeMaker;
  readonly #mobile = new TopupBook<MobileSendBody>();
  readonly #internet = new TopupBook<InternetSendBody>();
  readonly #giftCardOrders = new Map<string, Created<PlaceOrderBody>>();
  /** By ref alone (only the sandbox key can send, and refs are unique per family in practice). */
  readonly #sendCounts = new Map<string, SendCounts>();
  #settings: SandboxSettings = { ...defaultSandboxSettings };
  readonly #journal?: Journal;
  #requests: RequestRecord[] = [];

  constructor(options: SandboxStateOptions) {
    this.#timeScale = options.timeScale;
    this.#now = options.now;
    this.faults = new FaultStore(options.random);
    this.#codes = new CodeMaker();
    if (options.stateFile) {
      const { journal, records } = Journal.open(options.stateFile);
      this.#journal = journal;
      for (const record of records) this.#apply(record);
      // A new file starts with the secret the card codes derive from, so they survive a restart.
      if (records.length === 0) journal.append(this.#header());
    }
  }

  sendMobile(owner: string, body: MobileSendBody): SendResult {
    return this.#send(this.#mobile, 'mobile', owner, body);
  }

  sendInternet(owner: string, body: InternetSendBody): SendResult {
    return this.#send(this.#internet, 'internet', owner, body);
  }

  checkMobile(owner: string, ref: string, view: ReadView = {}): MobileCheck {
    const asOf = this.#asOf(view);
    const { id, createdAt, body } = found(
      this.#mobile.get(owner, ref, asOf),
      `ref: no mobile top-up "${ref}"`,
    );
    const changed = this.#changed({ ref }, asOf);
    const { status, ...details }: ScriptedOutcome | { status: ProviderStatus; message?: string } = changed
      ? {
          status: changed.status,
          ...(changed.status === 'REFUNDED' && { message: changed.message ?? REVERSED_MESSAGE }),
        }
      : (scriptedMobileOutcome(body.MSSIDN, body.plan_code, body.amount) ?? {
          status: this.#status(createdAt, asOf),
        });
    return { status, MSSIDN: body.MSSIDN, topup_amount: body.amount, topupId: id, topupRef: ref, ...details };
  }

  checkInternet(owner: string, ref: string, view: ReadView = {}): InternetCheck {
    const asOf = this.#asOf(view);
    const { id, createdAt, body } = found(
      this.#internet.get(owner, ref, asOf),
      `ref: no internet top-up "${ref}"`,
    );
    const status = this.#changed({ ref }, asOf)?.status ?? this.#status(createdAt, asOf);
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
    this.#commit({ t: 'giftCardOrder', id: orderId, owner, createdAt: this.#now(), body });
    return { orderId };
  }

  checkGiftCardOrder(owner: string, orderId: string, view: ReadView = {}): GiftCardOrderCheck {
    const asOf = this.#asOf(view);
    const order = this.#giftCardOrders.get(orderId);
    const { createdAt, body } = found(
      order?.owner === owner && order.createdAt <= asOf ? order : undefined,
      `orderId: no order "${orderId}"`,
    );
    const status = this.#changed({ orderId }, asOf)?.status ?? this.#status(createdAt, asOf);
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
   * order `orderId` answer `spec.status` (docs/contributors.md "Provider sandbox": outcomes that change later).
   * A ref may be named before it is sent, so a test can arrange an outcome without racing the
   * timeline; an orderId must exist, since only the sandbox makes them up.
   */
  changeOutcome(target: OutcomeTarget, spec: OutcomeChangeSpec): OutcomeChange {
    if ('orderId' in target && !this.#giftCardOrders.has(target.orderId)) {
      throw notFound(`orderId: no order "${target.orderId}"`);
    }
    // Journalled like an order, so a restarted sandbox keeps the changes it promised.
    const record: JournalRecord = { t: 'outcomeChange', target, spec, at: this.#now() };
    this.#journal?.append(record);
    return this.#addOutcomeChange(record);
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

  settings(): SandboxSettings {
    return { ...this.#settings };
  }

  updateSettings(changes: Partial<SandboxSettings>): SandboxSettings {
    this.#commit({ t: 'settings', settings: { ...this.#settings, ...changes } });
    return this.settings();
  }

  /** Start watching a request to `route`; the caller sets `endedAt` and `answered` when it ends. */
  trackRequest(route: RouteName): RequestRecord {
    const record: RequestRecord = { route, receivedAt: this.#now() };
    this.#requests.push(record);
    if (this.#requests.length > REQUEST_LOG_SIZE)
      this.#requests = this.#requests.slice(-REQUEST_LOG_SIZE / 2);
    return record;
  }

  /** The latest requests (to `route`, if given), oldest first. */
  requests(route?: RouteName): RequestRecord[] {
    return this.#requests.filter((r) => route === undefined || r.route === route).map((r) => ({ ...r }));
  }

  /** Forget every order, counter, setting, fault rule and logged request (the state file too). */
  reset(): void {
    this.#mobile.clear();
    this.#internet.clear();
    this.#giftCardOrders.clear();
    this.#sendCounts.clear();
    this.#settings = { ...defaultSandboxSettings };
    this.#requests = [];
    this.faults.clear();
    this.outcomeChanges.clear();
    this.#journal?.restart([this.#header()]);
  }

  /** Stop writing the state file (the server closes). */
  close(): void {
    this.#journal?.close();
  }

  #send<B extends { ref: string }>(book: TopupBook<B>, family: Family, owner: string, body: B): SendResult {
    if (this.#settings.uniqueRefs && book.has(owner, body.ref)) {
      this.#commit({ t: 'duplicate', family, ref: body.ref });
      throw duplicateRef(body.ref);
    }
    const id = newId();
    this.#commit({ t: 'topup', family, id, owner, createdAt: this.#now(), body });
    return { topupId: id, topupRef: body.ref };
  }

  /** Journal first, then apply: what was answered is on disk. */
  #commit(record: JournalRecord): void {
    this.#journal?.append(record);
    this.#apply(record);
  }

  /** The one place a committed change takes effect, live or replayed from the state file. */
  #apply(record: JournalRecord): void {
    switch (record.t) {
      case 'sandbox':
        this.#codes = new CodeMaker(Buffer.from(record.codeSecret as string, 'base64'));
        return;
      case 'topup': {
        const { family, id, owner, createdAt, body } = record as unknown as Created<
          MobileSendBody | InternetSendBody
        > & { family: Family };
        const book = family === 'mobile' ? this.#mobile : this.#internet;
        (book as TopupBook<MobileSendBody | InternetSendBody>).add({ id, owner, createdAt, body });
        const counts = this.#countsOf(body.ref, family);
        counts.attempts++;
        counts.accepted++;
        return;
      }
      case 'duplicate':
        this.#countsOf(record.ref as string, record.family as Family).attempts++;
        return;
      case 'giftCardOrder': {
        const { id, owner, createdAt, body } = record as unknown as Created<PlaceOrderBody>;
        this.#giftCardOrders.set(id, { id, owner, createdAt, body });
        return;
      }
      case 'outcomeChange':
        this.#addOutcomeChange(record);
        return;
      case 'settings':
        this.#settings = { ...defaultSandboxSettings, ...(record.settings as Partial<SandboxSettings>) };
        return;
      default:
        throw new Error(`sandbox state: unknown record "${record.t}"`);
    }
  }

  #header(): JournalRecord {
    return { t: 'sandbox', version: 1, codeSecret: this.#codes.secret.toString('base64') };
  }

  #countsOf(ref: string, family: Family): SendCounts {
    let counts = this.#sendCounts.get(ref);
    if (!counts) this.#sendCounts.set(ref, (counts = { family, accepted: 0, attempts: 0 }));
    return counts;
  }

  #asOf({ lagMs = 0 }: ReadView): number {
    return this.#now() - lagMs;
  }

  #status(createdAt: number, asOf: number): ProviderStatus {
    return timelineStatus(asOf - createdAt, this.#timeScale);
  }

  #addOutcomeChange(record: JournalRecord): OutcomeChange {
    const { target, spec, at } = record as unknown as {
      target: OutcomeTarget;
      spec: OutcomeChangeSpec;
      at: number;
    };
    return this.outcomeChanges.add(target, spec, at);
  }

  #changed(target: OutcomeTarget, asOf: number): OutcomeChange | undefined {
    return this.outcomeChanges.due(target, asOf);
  }
}

function found<T>(value: T | undefined, message: string): T {
  if (value === undefined) throw notFound(message);
  return value;
}
