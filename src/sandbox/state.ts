/**
 * Everything the sandbox remembers: top-ups, gift-card orders, the account's ledger (its balance),
 * the offer (plans, internet values, catalog with stock), the operators' states, per-ref send
 * counters, its settings, the fault rules and the outcome changes an admin scheduled
 * (outcome-changes.ts). Statuses are computed on read from the commit time, the due outcome
 * changes and the clock (no timer per order), and all check-then-insert steps are synchronous, so
 * with `uniqueRefs` (the default) concurrent sends of one ref cannot both be accepted, nor can two
 * sends both spend the last of the balance. Without `uniqueRefs` the sandbox behaves like a
 * provider with no atomic uniqueness check: every send it receives is committed.
 *
 * The ledger (the balance, its rows) is ledger.ts's, the rendering of check answers answers.ts's:
 * this store holds the records and delegates to them.
 *
 * Orders belong to an `owner` (the key that created them): refs are unique per owner and per
 * family, and an owner never sees another's orders — which is why the production key, which can
 * create nothing here, finds nothing. The balance is one account's: every key shares it.
 *
 * With a state file every committed change is journaled (journal.ts) before it is answered, and a
 * new SandboxState on the same file starts where the last one stopped. Fault rules, bad-key counts
 * and the request log are not kept: they are a test's set-up, not the provider's data.
 */
import {
  operatorNames,
  operatorOfPlan,
  type GiftCardOrderCheck,
  type InternetCheck,
  type KeyScope,
  type MobileCheck,
  type OperatorName,
  type PlaceOrderBody,
  type PlaceOrderResult,
  type SendResult,
  type Transaction,
} from '../provider';
import {
  giftCardAnswer,
  internetAnswer,
  mobileAnswer,
  scriptedGiftCardOutcome,
  type AnswerContext,
} from './answers';
import { BadKeyTracker } from './auth';
import { SandboxOffer, type OfferChange } from './catalog';
import { duplicatedRef, insufficientBalance, notFound } from './errors';
import { FaultStore, type RouteName } from './faults';
import { Journal, type JournalRecord } from './journal';
import { Ledger, ledgerTypes, roundDinars, type LedgerFamily } from './ledger';
import {
  OutcomeChanges,
  type OutcomeChangeSpec,
  type OutcomeChange,
  type OutcomeTarget,
} from './outcome-changes';
import { inRange, paginate, type ListQuery, type Page } from './pages';
import type { Created, Family, GiftCardOrder, InternetTopup, MobileTopup } from './records';
import {
  CodeMaker,
  newId,
  scriptedMobileOutcome,
  documentedTimeline,
  handlingAfterMs,
  settleAfterMs,
  type Timeline,
  type TimelineFamily,
} from './simulation';

export type { ListQuery, Page } from './pages';
export type { Family, InternetTopup, MobileTopup } from './records';

export interface SendCounts {
  /** The family of the first send of this ref. */
  family: Family;
  /** Sends that created a top-up. */
  accepted: number;
  /** Sends that passed authentication and validation, duplicates (DUPLICATED_REF) included. */
  attempts: number;
}

export interface SendReport {
  refs: Record<string, SendCounts>;
  giftCardOrders: { placed: number };
}

/** What an admin may change at run time (PATCH /admin/settings); kept in the state file. */
export interface SandboxSettings {
  /**
   * true (default): a ref already used by this key answers 403 DUPLICATED_REF, atomically. false:
   * like a provider without an atomic uniqueness check, every send received is committed, so a
   * double send shows as two accepted sends of one ref in /admin/sends.
   */
  uniqueRefs: boolean;
  /**
   * The key's IP whitelist (documented: empty = every address allowed). A request from any other
   * address answers 403, whatever its route (the docs show no code: `IP_NOT_ALLOWED` is ours).
   */
  allowedIps: string[];
  /** What /v3/ping reports of the provider's own API (documented: `ok` or `error`). */
  api: 'ok' | 'error';
  /** The sandbox key's scope: READ-ONLY keys read, and their sends answer 403 `READ_ONLY_KEY`. */
  scope: KeyScope;
  /**
   * 0 (default): a top-up is dated when it commits. More: top-ups committed while it is set are
   * dated this many ms earlier (`created_at`, their status timeline, their debit), as if made that
   * long ago — e.g. by a back office whose order for the ref is past our retention, so a ref
   * reused now finds an old top-up. A test sets it for its one old send and sets 0 again.
   */
  backdateSendsMs: number;
  /**
   * `spec` (default): every order follows the spec's fixed timeline (PENDING 5 s, HANDLING until
   * 20 s). `documented`: each order sent while it is set draws its own from the provider's
   * documented ranges (simulation.ts `documentedRanges`), the n-th order of a family since the
   * setting was last changed taking draw n under `timingsSeed`, so a run can be repeated.
   */
  timings: 'spec' | 'documented';
  timingsSeed: number;
}

export const defaultSandboxSettings: Readonly<SandboxSettings> = {
  uniqueRefs: true,
  allowedIps: [],
  api: 'ok',
  scope: 'READ-WRITE',
  backdateSendsMs: 0,
  timings: 'spec',
  timingsSeed: 1,
};

/** Plenty for every test and benchmark; a test of an empty account sets its own. */
export const DEFAULT_STARTING_BALANCE = 1_000_000_000;

/** How a read sees the state: as of `lagMs` ago (a lagging replica), or now. */
export interface ReadView {
  lagMs?: number;
}

/** One family's top-ups, keyed by owner and ref; more than one per key only without `uniqueRefs`. */
class TopupBook<B extends { ref: string }> {
  readonly #byKey = new Map<string, Created<B>[]>();
  readonly #byId = new Map<string, Created<B>>();

  has(owner: string, ref: string): boolean {
    return this.#byKey.has(TopupBook.#key(owner, ref));
  }

  add(topup: Created<B>): void {
    const key = TopupBook.#key(topup.owner, topup.body.ref);
    const list = this.#byKey.get(key);
    if (list) list.push(topup);
    else this.#byKey.set(key, [topup]);
    this.#byId.set(topup.id, topup);
  }

  /**
   * The first top-up committed under this ref that a read as of `asOf` can see. A provider that
   * let a ref be committed twice answers check-ref from the oldest row (the sandbox's choice).
   */
  get(owner: string, ref: string, asOf: number): Created<B> | undefined {
    return this.#byKey.get(TopupBook.#key(owner, ref))?.find((topup) => topup.createdAt <= asOf);
  }

  byId(owner: string, id: string, asOf: number): Created<B> | undefined {
    const topup = this.#byId.get(id);
    return topup?.owner === owner && topup.createdAt <= asOf ? topup : undefined;
  }

  /** Every top-up, in the order they were committed. */
  all(): IterableIterator<Created<B>> {
    return this.#byId.values();
  }

  /** A top-up by id, whoever owns it (the ledger's look-ups). */
  any(id: string): Created<B> | undefined {
    return this.#byId.get(id);
  }

  /** The first top-up under `ref`, whoever owns it (outcome changes name a ref for every key). */
  firstWithRef(ref: string): Created<B> | undefined {
    for (const topup of this.#byId.values()) if (topup.body.ref === ref) return topup;
    return undefined;
  }

  /** The owner's top-ups a read as of `asOf` can see, newest first. */
  list(owner: string, asOf: number): Created<B>[] {
    return [...this.#byId.values()]
      .filter((topup) => topup.owner === owner && topup.createdAt <= asOf)
      .reverse();
  }

  clear(): void {
    this.#byKey.clear();
    this.#byId.clear();
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
  /** The account's balance on a fresh start (and after a reset), DZD. */
  startingBalance?: number;
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
  /** A list route's `page` (tests count the pages a reader asked for). */
  page?: number;
}

/** The request log keeps the latest requests only: a long run must not grow it without bound. */
const REQUEST_LOG_SIZE = 1_000;

/** One order's timeline as the admin surface lists it (GET /admin/timelines), epoch ms. */
export interface OrderTimeline {
  family: TimelineFamily;
  /** The topupId or orderId. */
  id: string;
  /** A top-up's ref. */
  ref?: string;
  createdAt: number;
  handlingAt: number;
  settledAt: number;
  /** The documented draw, if it was one. */
  timeline?: Timeline;
}

/** A gift-card order as the admin surface lists it (tests look up an order whose answer was lost). */
export interface PlacedGiftCardOrder extends PlaceOrderBody {
  orderId: string;
  placedAt: string;
  /** The placement's X-Client-Reference, if it carried one: which of the client's orders placed it. */
  clientRef?: string;
}

/** The sandbox account's login (the docs show a phone number in international form). */
export const SANDBOX_USERNAME = '+213550000000';

export class SandboxState {
  readonly faults: FaultStore;
  readonly outcomeChanges = new OutcomeChanges();
  readonly badKeys: BadKeyTracker;
  readonly #timeScale: number;
  readonly #now: () => number;
  readonly #startingBalance: number;
  #codes: CodeMaker;
  #offer = new SandboxOffer();
  readonly #mobile = new TopupBook<MobileTopup>();
  readonly #internet = new TopupBook<InternetTopup>();
  readonly #giftCardOrders = new Map<string, GiftCardOrder>();
  /** By ref alone (only the sandbox key can send, and refs are unique per family in practice). */
  readonly #sendCounts = new Map<string, SendCounts>();
  readonly #ledger = new Ledger();
  #operators = upOperators();
  #settings: SandboxSettings = { ...defaultSandboxSettings };
  /** Documented timelines drawn per family since the timings settings last changed. */
  #drawn: Record<TimelineFamily, number> = { mobile: 0, internet: 0, giftCard: 0 };
  readonly #journal?: Journal;
  #requests: RequestRecord[] = [];

  constructor(options: SandboxStateOptions) {
    this.#timeScale = options.timeScale;
    this.#now = options.now;
    this.#startingBalance = options.startingBalance ?? DEFAULT_STARTING_BALANCE;
    this.faults = new FaultStore(options.random);
    this.badKeys = new BadKeyTracker(options.now);
    this.#codes = new CodeMaker();
    if (options.stateFile) {
      const { journal, records } = Journal.open(options.stateFile);
      this.#journal = journal;
      for (const record of records) this.#apply(record);
      // A new file starts with the secret the card codes derive from, so they survive a restart.
      if (records.length === 0) this.#commit(this.#header());
    } else {
      this.#apply(this.#header());
    }
  }

  get offer(): SandboxOffer {
    return this.#offer;
  }

  // ---- sends ----

  /** `body` validated by the route against the plans; `debit` what it costs the account. */
  sendMobile(owner: string, body: MobileTopup, debit: number): SendResult {
    const found = this.#offer.findPlan(body.plan_code);
    const operator = found && operatorOfPlan(found.plan);
    const operatorDown = operator !== undefined && this.#operators[operator] === 'down';
    return this.#send(this.#mobile, 'mobile', owner, body, debit, operatorDown);
  }

  sendInternet(owner: string, body: InternetTopup, debit: number): SendResult {
    return this.#send(this.#internet, 'internet', owner, body, debit);
  }

  placeGiftCardOrder(
    owner: string,
    body: PlaceOrderBody,
    pricePerCard: number,
    clientRef?: string,
  ): PlaceOrderResult {
    this.#assertCovers(pricePerCard * body.quantity);
    const orderId = newId();
    const timeline = this.#drawTimeline('giftCard');
    this.#commit({
      t: 'giftCardOrder',
      id: orderId,
      owner,
      createdAt: this.#now(),
      body,
      pricePerCard,
      ...(clientRef && { clientRef }),
      ...(timeline && { timeline }),
    });
    return { orderId };
  }

  // ---- checks ----

  checkMobile(owner: string, ref: string, view: ReadView = {}): MobileCheck {
    const asOf = this.#asOf(view);
    return mobileAnswer(
      this.#answers(),
      found(this.#mobile.get(owner, ref, asOf), `Top-up with reference '${ref}' not found`),
      asOf,
    );
  }

  checkMobileById(owner: string, id: string, view: ReadView = {}): MobileCheck {
    const asOf = this.#asOf(view);
    return mobileAnswer(
      this.#answers(),
      found(this.#mobile.byId(owner, id, asOf), `Top-up '${id}' not found`),
      asOf,
    );
  }

  listMobile(owner: string, query: ListQuery, view: ReadView = {}): Page<MobileCheck> {
    const asOf = this.#asOf(view);
    return paginate(
      this.#mobile.list(owner, asOf).filter((t) => inRange(t.createdAt, query)),
      query,
      (t) => mobileAnswer(this.#answers(), t, asOf),
    );
  }

  checkInternet(owner: string, ref: string, view: ReadView = {}): InternetCheck {
    const asOf = this.#asOf(view);
    return internetAnswer(
      this.#answers(),
      found(this.#internet.get(owner, ref, asOf), `Top-up with reference '${ref}' not found`),
      asOf,
    );
  }

  checkInternetById(owner: string, id: string, view: ReadView = {}): InternetCheck {
    const asOf = this.#asOf(view);
    return internetAnswer(
      this.#answers(),
      found(this.#internet.byId(owner, id, asOf), `Top-up '${id}' not found`),
      asOf,
    );
  }

  listInternet(owner: string, query: ListQuery, view: ReadView = {}): Page<InternetCheck> {
    const asOf = this.#asOf(view);
    return paginate(
      this.#internet.list(owner, asOf).filter((t) => inRange(t.createdAt, query)),
      query,
      (t) => internetAnswer(this.#answers(), t, asOf),
    );
  }

  checkGiftCardOrder(owner: string, orderId: string, view: ReadView = {}): GiftCardOrderCheck {
    const asOf = this.#asOf(view);
    const order = this.#giftCardOrders.get(orderId);
    return giftCardAnswer(
      this.#answers(),
      found(
        order?.owner === owner && order.createdAt <= asOf ? order : undefined,
        `Order '${orderId}' not found`,
      ),
      asOf,
    );
  }

  listGiftCardOrders(owner: string, query: ListQuery, view: ReadView = {}): Page<GiftCardOrderCheck> {
    const asOf = this.#asOf(view);
    const orders = [...this.#giftCardOrders.values()]
      .filter((o) => o.owner === owner && o.createdAt <= asOf && inRange(o.createdAt, query))
      .reverse();
    return paginate(orders, query, (o) => giftCardAnswer(this.#answers(), o, asOf));
  }

  // ---- account ----

  balance(at: number = this.#now()): number {
    return this.#ledger.balance(at);
  }

  /** Ledger rows up to now (as of `view.lagMs` ago), newest first, with their running balances. */
  transactions(query: ListQuery, view: ReadView = {}): Page<Transaction> {
    return this.#ledger.transactions(query, this.#asOf(view));
  }

  /** Admin: the balance becomes `balance` now (a DEPOSIT or WITHDRAW row of the difference). */
  setBalance(balance: number): number {
    this.#commit({ t: 'balance', id: newId(), balance, at: this.#now() });
    return this.balance();
  }

  operators(): Record<OperatorName, 'up' | 'down'> {
    return { ...this.#operators };
  }

  setOperators(changes: Partial<Record<OperatorName, 'up' | 'down'>>): Record<OperatorName, 'up' | 'down'> {
    this.#commit({ t: 'operators', operators: { ...this.#operators, ...changes } });
    return this.operators();
  }

  /** Admin: a plan, internet value, product or type changes; one naming nothing is refused. */
  changeOffer(change: OfferChange): void {
    if (!this.#offer.apply(change))
      throw notFound('no such plan, product, type or value in the sandbox offer');
    this.#journal?.append({ t: 'offer', change });
  }

  /**
   * Admin: when each order became HANDLING and reached its final status on its timeline (the
   * bench's "provider settled" and the polling tests' reference). Outcome changes and scripted
   * outcomes are not reflected: these are the timelines alone.
   */
  timelines(): OrderTimeline[] {
    const entry = (
      family: TimelineFamily,
      { id, createdAt, timeline }: Created<unknown>,
      ref?: string,
    ): OrderTimeline => ({
      family,
      id,
      ...(ref !== undefined && { ref }),
      createdAt,
      handlingAt: createdAt + handlingAfterMs(this.#timeScale, timeline),
      settledAt: createdAt + settleAfterMs(this.#timeScale, timeline),
      ...(timeline && { timeline }),
    });
    return [
      ...[...this.#mobile.all()].map((t) => entry('mobile', t, t.body.ref)),
      ...[...this.#internet.all()].map((t) => entry('internet', t, t.body.ref)),
      ...[...this.#giftCardOrders.values()].map((o) => entry('giftCard', o)),
    ];
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
    return [...this.#giftCardOrders.values()].map(({ id, createdAt, body, clientRef }) => ({
      orderId: id,
      ...body,
      placedAt: new Date(createdAt).toISOString(),
      ...(clientRef && { clientRef }),
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
  trackRequest(route: RouteName, page?: number): RequestRecord {
    const record: RequestRecord = { route, receivedAt: this.#now(), ...(page !== undefined && { page }) };
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
    this.#ledger.clear();
    this.#offer = new SandboxOffer();
    this.#operators = upOperators();
    this.#settings = { ...defaultSandboxSettings };
    this.#drawn = { mobile: 0, internet: 0, giftCard: 0 };
    this.#requests = [];
    this.faults.clear();
    this.badKeys.clear();
    this.outcomeChanges.clear();
    const header = this.#header();
    this.#journal?.restart([header]);
    this.#apply(header);
  }

  /** Stop writing the state file (the server closes). */
  close(): void {
    this.#journal?.close();
  }

  #send<B extends { ref: string }>(
    book: TopupBook<B>,
    family: Family,
    owner: string,
    body: B,
    debit: number,
    operatorDown = false,
  ): SendResult {
    if (this.#settings.uniqueRefs && book.has(owner, body.ref)) {
      this.#commit({ t: 'duplicate', family, ref: body.ref });
      throw duplicatedRef(body.ref);
    }
    this.#assertCovers(debit);
    const id = newId();
    const timeline = this.#drawTimeline(family);
    this.#commit({
      t: 'topup',
      family,
      id,
      owner,
      createdAt: this.#now() - this.#settings.backdateSendsMs,
      body,
      debit,
      ...(operatorDown && { operatorDown }),
      ...(timeline && { timeline }),
    });
    return { topupId: id, topupRef: body.ref };
  }

  #assertCovers(required: number): void {
    const available = this.balance();
    if (required > available) throw insufficientBalance(roundDinars(required), available);
  }

  /** What the answers (answers.ts) read of the store, now. */
  #answers(): AnswerContext {
    return {
      timeScale: this.#timeScale,
      codes: this.#codes,
      offer: this.#offer,
      changed: (target, asOf) => this.#changed(target, asOf),
      refundedAsOf: (objid, asOf) => this.#ledger.refundedAsOf(objid, asOf),
    };
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
        this.#ledger.credit(
          'DEPOSIT',
          (record.startingBalance as number | undefined) ?? this.#startingBalance,
          {
            at: (record.at as number | undefined) ?? 0,
            note: 'starting balance',
          },
        );
        return;
      case 'topup': {
        const { family, id, owner, createdAt, body, debit, operatorDown, timeline } =
          record as unknown as Created<MobileTopup | InternetTopup> & { family: Family };
        const book = family === 'mobile' ? this.#mobile : this.#internet;
        const spent = debit ?? ('amount' in body ? body.amount : body.value);
        (book as TopupBook<MobileTopup | InternetTopup>).add({
          id,
          owner,
          createdAt,
          body,
          debit: spent,
          ...(operatorDown && { operatorDown }),
          ...(timeline && { timeline }),
        });
        this.#ledger.credit(ledgerTypes[family].debit, -spent, { at: createdAt, objid: id });
        if (
          operatorDown ||
          (family === 'mobile' && scriptedMobileOutcome((body as MobileTopup).MSSIDN)?.status === 'REFUNDED')
        ) {
          this.#refund(family, id, spent, createdAt);
        }
        const counts = this.#countsOf(body.ref, family);
        counts.attempts++;
        counts.accepted++;
        return;
      }
      case 'duplicate':
        this.#countsOf(record.ref as string, record.family as Family).attempts++;
        return;
      case 'giftCardOrder': {
        const { id, owner, createdAt, body, timeline } = record as unknown as Created<PlaceOrderBody>;
        const pricePerCard = (record.pricePerCard as number | undefined) ?? 0;
        const debit = pricePerCard * body.quantity;
        const clientRef = record.clientRef as string | undefined;
        this.#giftCardOrders.set(id, {
          id,
          owner,
          createdAt,
          body,
          debit,
          pricePerCard,
          ...(clientRef && { clientRef }),
          ...(timeline && { timeline }),
        });
        this.#offer.take(body.productId, body.typeId, body.quantity);
        this.#ledger.credit(ledgerTypes.giftCard.debit, -debit, { at: createdAt, objid: id });
        const scripted = scriptedGiftCardOutcome(body);
        if (scripted) {
          const refund = (body.quantity - scripted.fulfilled) * pricePerCard;
          this.#refund('giftCard', id, refund, createdAt + settleAfterMs(this.#timeScale, timeline));
        }
        return;
      }
      case 'outcomeChange':
        this.#addOutcomeChange(record);
        return;
      case 'settings': {
        const before = this.#settings;
        this.#settings = { ...defaultSandboxSettings, ...(record.settings as Partial<SandboxSettings>) };
        // A new mode or seed starts its draws from the first: the same settings, the same timelines.
        if (before.timings !== this.#settings.timings || before.timingsSeed !== this.#settings.timingsSeed) {
          this.#drawn = { mobile: 0, internet: 0, giftCard: 0 };
        }
        return;
      }
      case 'balance':
        this.#ledger.setBalance(record.id as string, record.balance as number, record.at as number);
        return;
      case 'operators':
        this.#operators = {
          ...upOperators(),
          ...(record.operators as Partial<Record<OperatorName, 'up' | 'down'>>),
        };
        return;
      case 'offer':
        this.#offer.apply(record.change as OfferChange);
        return;
      default:
        throw new Error(`sandbox state: unknown record "${record.t}"`);
    }
  }

  #header(): JournalRecord {
    return {
      t: 'sandbox',
      version: 2,
      codeSecret: this.#codes.secret.toString('base64'),
      startingBalance: this.#startingBalance,
      at: this.#now(),
    };
  }

  /** Credits what is left of an order's debit, once (a second refund of one order credits nothing). */
  #refund(family: LedgerFamily, objid: string, amount: number, at: number): void {
    this.#ledger.refund(family, objid, this.#debitOf(family, objid), amount, at);
  }

  #debitOf(family: LedgerFamily, objid: string): number {
    if (family === 'giftCard') return this.#giftCardOrders.get(objid)?.debit ?? 0;
    return (family === 'mobile' ? this.#mobile.any(objid) : this.#internet.any(objid))?.debit ?? 0;
  }

  #countsOf(ref: string, family: Family): SendCounts {
    let counts = this.#sendCounts.get(ref);
    if (!counts) this.#sendCounts.set(ref, (counts = { family, accepted: 0, attempts: 0 }));
    return counts;
  }

  #asOf({ lagMs = 0 }: ReadView): number {
    return this.#now() - lagMs;
  }

  /** The next documented timeline of `family`, when the settings ask for them. */
  #drawTimeline(family: TimelineFamily): Timeline | undefined {
    if (this.#settings.timings !== 'documented') return undefined;
    return documentedTimeline(family, this.#settings.timingsSeed, this.#drawn[family]++);
  }

  #addOutcomeChange(record: JournalRecord): OutcomeChange {
    const { target, spec, at } = record as unknown as {
      target: OutcomeTarget;
      spec: OutcomeChangeSpec;
      at: number;
    };
    const change = this.outcomeChanges.add(target, spec, at);
    if (spec.status === 'REFUNDED') this.#refundChanged(target, at + spec.afterMs);
    return change;
  }

  /** An outcome change to REFUNDED credits the order's debit when it falls due. */
  #refundChanged(target: OutcomeTarget, at: number): void {
    if ('orderId' in target) {
      const order = this.#giftCardOrders.get(target.orderId);
      if (order) this.#refund('giftCard', order.id, order.debit, at);
      return;
    }
    const mobile = this.#mobile.firstWithRef(target.ref);
    if (mobile) this.#refund('mobile', mobile.id, mobile.debit, at);
    const internet = this.#internet.firstWithRef(target.ref);
    if (internet) this.#refund('internet', internet.id, internet.debit, at);
  }

  #changed(target: OutcomeTarget, asOf: number): OutcomeChange | undefined {
    return this.outcomeChanges.due(target, asOf);
  }
}

function upOperators(): Record<OperatorName, 'up' | 'down'> {
  return Object.fromEntries(operatorNames.map((name) => [name, 'up'])) as Record<OperatorName, 'up' | 'down'>;
}

function found<T>(value: T | undefined, message: string): T {
  if (value === undefined) throw notFound(message);
  return value;
}
