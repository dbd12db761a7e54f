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
 * The ledger is a list of rows, each dated: a send's debit when it commits, a refund when the
 * order's refund shows (at once for the scripted refunds, at the end of the timeline for the
 * sandbox's gift-card test types, when an outcome change falls due). The balance at a time is the
 * sum of the rows up to it, so a refund that is not due yet is not spendable yet.
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
  listLimits,
  operatorNames,
  operatorOfPlan,
  sandboxTestTypes,
  type GiftCardOrderCheck,
  type InternetCheck,
  type InternetSendBody,
  type KeyScope,
  type MobileCheck,
  type OperatorName,
  type Pagination,
  type PlaceOrderBody,
  type PlaceOrderResult,
  type SendResult,
  type SuggestedOffer,
  type Transaction,
} from '../provider';
import { BadKeyTracker } from './auth';
import { SandboxOffer, type OfferChange } from './catalog';
import { duplicatedRef, insufficientBalance, notFound } from './errors';
import { FaultStore, type RouteName } from './faults';
import { Journal, type JournalRecord } from './journal';
import {
  OutcomeChanges,
  type OutcomeChangeSpec,
  type OutcomeChange,
  type OutcomeTarget,
} from './outcome-changes';
import {
  CodeMaker,
  newId,
  sandboxRefundMessages,
  scriptedMobileOutcome,
  documentedTimeline,
  handlingAfterMs,
  settleAfterMs,
  timelineStatus,
  type Timeline,
  type TimelineFamily,
} from './simulation';
import type { ProviderStatus } from '../../contract/provider';

export type Family = 'mobile' | 'internet';

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

/** A mobile top-up as committed: the ref resolved, the amount credited (a fixed plan's own). */
export interface MobileTopup {
  plan_code: string;
  MSSIDN: string;
  amount: number;
  ref: string;
}
export type InternetTopup = InternetSendBody & { ref: string };

interface Created<B> {
  id: string;
  owner: string;
  /** When it was committed: the start of its status timeline. */
  createdAt: number;
  body: B;
  /** What the send debited (balance_amount before any refund). */
  debit: number;
  /** Sent while /v3/ping reported its operator down: accepted, then REFUNDED (docs/contributors.md). */
  operatorDown?: boolean;
  /** Drawn from the documented ranges (SandboxSettings.timings); absent: the spec's timeline. */
  timeline?: Timeline;
}

interface GiftCardOrder extends Created<PlaceOrderBody> {
  pricePerCard: number;
  /** What the placement's X-Client-Reference header said (wire.ts CLIENT_REFERENCE_HEADER), if anything. */
  clientRef?: string;
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

/** A ledger row before its running balances are known. */
interface LedgerEntry {
  id: string;
  type: string;
  /** Signed: negative for a debit. */
  delta: number;
  objid?: string;
  note?: string;
  at: number;
}

const ledgerTypes = {
  mobile: { debit: 'FLEXY', refund: 'REFUND-FLEXY' },
  internet: { debit: 'ADSL', refund: 'REFUND-ADSL' },
  giftCard: { debit: 'ORDER', refund: 'REFUND-ORDER' },
} as const;

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

export interface ListQuery {
  page: number;
  pageSize: number;
  from?: number;
  to?: number;
}

export interface Page<T> {
  items: T[];
  pagination: Pagination;
}

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
  #ledger: LedgerEntry[] = [];
  /** Refunded amount per order id (objid), so a refund is never credited twice. */
  readonly #refunded = new Map<string, number>();
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
    return this.#mobileAnswer(
      found(this.#mobile.get(owner, ref, asOf), `Top-up with reference '${ref}' not found`),
      asOf,
    );
  }

  checkMobileById(owner: string, id: string, view: ReadView = {}): MobileCheck {
    const asOf = this.#asOf(view);
    return this.#mobileAnswer(found(this.#mobile.byId(owner, id, asOf), `Top-up '${id}' not found`), asOf);
  }

  listMobile(owner: string, query: ListQuery, view: ReadView = {}): Page<MobileCheck> {
    const asOf = this.#asOf(view);
    return paginate(
      this.#mobile.list(owner, asOf).filter((t) => inRange(t.createdAt, query)),
      query,
      (t) => this.#mobileAnswer(t, asOf),
    );
  }

  checkInternet(owner: string, ref: string, view: ReadView = {}): InternetCheck {
    const asOf = this.#asOf(view);
    return this.#internetAnswer(
      found(this.#internet.get(owner, ref, asOf), `Top-up with reference '${ref}' not found`),
      asOf,
    );
  }

  checkInternetById(owner: string, id: string, view: ReadView = {}): InternetCheck {
    const asOf = this.#asOf(view);
    return this.#internetAnswer(
      found(this.#internet.byId(owner, id, asOf), `Top-up '${id}' not found`),
      asOf,
    );
  }

  listInternet(owner: string, query: ListQuery, view: ReadView = {}): Page<InternetCheck> {
    const asOf = this.#asOf(view);
    return paginate(
      this.#internet.list(owner, asOf).filter((t) => inRange(t.createdAt, query)),
      query,
      (t) => this.#internetAnswer(t, asOf),
    );
  }

  checkGiftCardOrder(owner: string, orderId: string, view: ReadView = {}): GiftCardOrderCheck {
    const asOf = this.#asOf(view);
    const order = this.#giftCardOrders.get(orderId);
    return this.#giftCardAnswer(
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
    return paginate(orders, query, (o) => this.#giftCardAnswer(o, asOf));
  }

  // ---- account ----

  balance(at: number = this.#now()): number {
    let balance = 0;
    for (const entry of this.#ledger) if (entry.at <= at) balance += entry.delta;
    return roundDinars(balance);
  }

  /** Ledger rows up to now (as of `view.lagMs` ago), newest first, with their running balances. */
  transactions(query: ListQuery, view: ReadView = {}): Page<Transaction> {
    const now = this.#asOf(view);
    const rows: Transaction[] = [];
    let balance = 0;
    for (const entry of [...this.#ledger].filter((e) => e.at <= now).sort((a, b) => a.at - b.at)) {
      const oldBalance = balance;
      balance = roundDinars(balance + entry.delta);
      if (!inRange(entry.at, query)) continue;
      rows.push({
        _id: entry.id,
        type: entry.type,
        operation: entry.delta < 0 ? 'debit' : 'credit',
        amount: roundDinars(Math.abs(entry.delta)),
        oldBalance,
        newBalance: balance,
        ...(entry.objid && { objid: entry.objid }),
        ...(entry.note && { note: entry.note }),
        time: new Date(entry.at).toISOString(),
      });
    }
    return paginate(rows.reverse(), query, (row) => row);
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
    this.#ledger = [];
    this.#refunded.clear();
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

  #mobileAnswer(topup: Created<MobileTopup>, asOf: number): MobileCheck {
    const { id, createdAt, body, debit, timeline } = topup;
    const changed = this.#changed({ ref: body.ref }, asOf);
    const scripted = topup.operatorDown
      ? { status: 'REFUNDED' as const, refund_message: sandboxRefundMessages.operatorDown }
      : scriptedMobileOutcome(body.MSSIDN);
    const outcome = changed
      ? {
          status: changed.status as ProviderStatus,
          ...(changed.status === 'REFUNDED' && {
            refund_message: changed.refund_message ?? sandboxRefundMessages.reversed,
          }),
        }
      : (scripted ?? { status: this.#status(createdAt, asOf, 'mobile', timeline) });
    return {
      _id: id,
      ref: body.ref,
      status: outcome.status,
      plan_code: body.plan_code,
      MSSIDN: body.MSSIDN,
      topup_amount: body.amount,
      balance_amount: roundDinars(debit - this.#refundedAsOf(id, asOf)),
      created_at: new Date(createdAt).toISOString(),
      ...('refund_message' in outcome &&
        outcome.refund_message && { refund_message: outcome.refund_message }),
      ...('suggested_offers' in outcome &&
        outcome.suggested_offers && { suggested_offers: outcome.suggested_offers }),
      ...(outcome.status === 'FULFILLED' &&
        isMenuPlan(body.plan_code) && { suggested_offers: this.#menuOffers(body.plan_code) }),
    };
  }

  /**
   * What a GETMENU_<Operator> plan returns (documented: "a number's available offers as
   * suggested_offers"): here, the operator's enabled plans other than the menu itself, a fixed
   * plan with its amount.
   */
  #menuOffers(menuCode: string): SuggestedOffer[] {
    const menu = this.#offer.findPlan(menuCode);
    const { dynamicPlans, fixedPlans } = this.#offer.plans();
    const offered = (p: { isEnabled: boolean; operator: string; code: string }) =>
      p.isEnabled && p.operator === menu?.plan.operator && !isMenuPlan(p.code);
    return [
      ...fixedPlans.filter(offered).map((p) => ({ typename: p.name, plan_code: p.code, amount: p.amount })),
      ...dynamicPlans.filter(offered).map((p) => ({ typename: p.name, plan_code: p.code })),
    ];
  }

  #internetAnswer(topup: Created<InternetTopup>, asOf: number): InternetCheck {
    const { id, createdAt, body, timeline } = topup;
    const changed = this.#changed({ ref: body.ref }, asOf);
    const status = changed?.status ?? this.#status(createdAt, asOf, 'internet', timeline);
    return {
      _id: id,
      ref: body.ref,
      status,
      type: body.type,
      number: body.number,
      topup_amount: body.value,
      created_at: new Date(createdAt).toISOString(),
      ...(status === 'FULFILLED' && {
        card_code: this.#codes.digits(`${id}:card`, 16),
        ...(!changed?.without?.includes('num_trans') && { num_trans: this.#codes.digits(`${id}:trans`, 12) }),
        date_traitement: new Date(createdAt + settleAfterMs(this.#timeScale, timeline)).toISOString(),
      }),
      ...(status === 'REFUNDED' && {
        refund_message: changed?.refund_message ?? sandboxRefundMessages.reversed,
      }),
    };
  }

  #giftCardAnswer(order: GiftCardOrder, asOf: number): GiftCardOrderCheck {
    const { id, createdAt, body, pricePerCard, timeline } = order;
    const changed = this.#changed({ orderId: id }, asOf);
    const settled = asOf - createdAt >= settleAfterMs(this.#timeScale, timeline);
    const scripted = settled ? scriptedGiftCardOutcome(body) : undefined;
    const status = changed?.status ?? scripted?.status ?? this.#status(createdAt, asOf, 'giftCard', timeline);
    const fulfilled =
      status === 'FULFILLED'
        ? body.quantity
        : status === 'PARTIALLY_FILLED'
          ? (scripted?.fulfilled ?? Math.floor(body.quantity / 2))
          : 0;
    return {
      _id: id,
      status,
      quantity: body.quantity,
      fulfilled_quantity: fulfilled,
      fulfilled_amount: roundDinars(fulfilled * pricePerCard),
      price_per_card: pricePerCard,
      ...(fulfilled > 0 && {
        cards: Array.from({ length: fulfilled }, (_, i) => ({
          value: this.#codes.digits(`${id}:card:${i}`, 16),
          serial: `SN${this.#codes.digits(`${id}:serial:${i}`, 12)}`,
        })),
      }),
      product: body.productId,
      type: body.typeId,
      time: new Date(createdAt).toISOString(),
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
        this.#credit('DEPOSIT', (record.startingBalance as number | undefined) ?? this.#startingBalance, {
          at: (record.at as number | undefined) ?? 0,
          note: 'starting balance',
        });
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
        this.#credit(ledgerTypes[family].debit, -spent, { at: createdAt, objid: id });
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
        this.#credit(ledgerTypes.giftCard.debit, -debit, { at: createdAt, objid: id });
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
      case 'balance': {
        const at = record.at as number;
        const delta = (record.balance as number) - this.balance(at);
        this.#ledger.push({
          id: record.id as string,
          type: delta < 0 ? 'WITHDRAW' : 'DEPOSIT',
          delta,
          at,
          note: 'set by the sandbox admin',
        });
        return;
      }
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

  #credit(
    type: string,
    delta: number,
    { at, objid, note }: { at: number; objid?: string; note?: string },
  ): void {
    this.#ledger.push({ id: newId(), type, delta, at, ...(objid && { objid }), ...(note && { note }) });
  }

  /** Credits what is left of an order's debit, once (a second refund of one order credits nothing). */
  #refund(family: Family | 'giftCard', objid: string, amount: number, at: number): void {
    const debit = this.#debitOf(family, objid);
    const left = Math.min(amount, debit - (this.#refunded.get(objid) ?? 0));
    if (left <= 0) return;
    this.#refunded.set(objid, (this.#refunded.get(objid) ?? 0) + left);
    this.#credit(ledgerTypes[family].refund, left, { at, objid });
  }

  #debitOf(family: Family | 'giftCard', objid: string): number {
    if (family === 'giftCard') return this.#giftCardOrders.get(objid)?.debit ?? 0;
    return (family === 'mobile' ? this.#mobile.any(objid) : this.#internet.any(objid))?.debit ?? 0;
  }

  #refundedAsOf(objid: string, asOf: number): number {
    let refunded = 0;
    for (const entry of this.#ledger) {
      if (entry.objid === objid && entry.delta > 0 && entry.at <= asOf) refunded += entry.delta;
    }
    return refunded;
  }

  #countsOf(ref: string, family: Family): SendCounts {
    let counts = this.#sendCounts.get(ref);
    if (!counts) this.#sendCounts.set(ref, (counts = { family, accepted: 0, attempts: 0 }));
    return counts;
  }

  #asOf({ lagMs = 0 }: ReadView): number {
    return this.#now() - lagMs;
  }

  #status(createdAt: number, asOf: number, family: TimelineFamily, timeline?: Timeline): ProviderStatus {
    return timelineStatus(asOf - createdAt, this.#timeScale, family, timeline);
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

/** Documented: `GETMENU_<Operator>` plans return the number's offers. */
function isMenuPlan(code: string): boolean {
  return code.startsWith('GETMENU_');
}

function upOperators(): Record<OperatorName, 'up' | 'down'> {
  return Object.fromEntries(operatorNames.map((name) => [name, 'up'])) as Record<OperatorName, 'up' | 'down'>;
}

/** The documented sandbox types: TEST_REFUND refunded, TEST_PARTIAL half fulfilled. */
function scriptedGiftCardOutcome(
  body: PlaceOrderBody,
): { status: 'REFUNDED' | 'PARTIALLY_FILLED'; fulfilled: number } | undefined {
  if (body.typeId === sandboxTestTypes.refund) return { status: 'REFUNDED', fulfilled: 0 };
  if (body.typeId !== sandboxTestTypes.partial) return undefined;
  const fulfilled = Math.floor(body.quantity / 2);
  // Half of one card is none: documented PARTIALLY_FILLED needs 0 < fulfilled < quantity.
  return fulfilled > 0 ? { status: 'PARTIALLY_FILLED', fulfilled } : { status: 'REFUNDED', fulfilled: 0 };
}

/** Dinars with at most two decimals (the docs allow decimals in a balance). */
function roundDinars(value: number): number {
  return Math.round(value * 100) / 100;
}

function inRange(at: number, { from, to }: ListQuery): boolean {
  return (from === undefined || at >= from) && (to === undefined || at <= to);
}

function paginate<S, T>(rows: S[], { page, pageSize }: ListQuery, map: (row: S) => T): Page<T> {
  const size = Math.min(Math.max(1, pageSize), listLimits.maxPageSize);
  const totalResults = rows.length;
  return {
    items: rows.slice((page - 1) * size, page * size).map(map),
    pagination: {
      page,
      pageSize: size,
      totalPages: Math.max(1, Math.ceil(totalResults / size)),
      totalResults,
    },
  };
}

function found<T>(value: T | undefined, message: string): T {
  if (value === undefined) throw notFound(message);
  return value;
}
