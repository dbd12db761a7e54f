/**
 * The typed client for the provider's /v3 interface (spec: shared/spec/provider-api-v3.md, and
 * the routes the provider documents beside it: shared/spec/provider-v3-documented.md).
 *
 * One method per endpoint; each either returns the parsed `data` of the success envelope or
 * throws a ProviderError whose `kind` says what the caller may safely do next. Nothing else is
 * thrown: transport errors, error statuses and malformed answers are all classified here, so the
 * activities above never guess whether money may have moved.
 */
import type { Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  API_PREFIX,
  CLIENT_REFERENCE_HEADER,
  Balance,
  Catalog,
  envelope,
  FailureEnvelope,
  GiftCardOrderCheck,
  GiftCardOrderPage,
  InternetCheck,
  InternetProducts,
  InternetTopupPage,
  KeyInfo,
  MobileCheck,
  MobilePlans,
  MobileTopupPage,
  NumberCheck,
  Pagination,
  Ping,
  PlaceOrderResult,
  ProductDetails,
  SendResult,
  TransactionPage,
  type InternetSendBody,
  type MobileSendBody,
  type PlaceOrderBody,
  type Transaction,
} from './wire';
import {
  bodyReadFailure,
  CALL_CANCELLED,
  CALL_DEADLINE_EXCEEDED,
  invalidResponse,
  notSent,
  notStarted,
  statusFailure,
  transportFailure,
} from './classify';
import { deadline as callDeadline } from './deadline';
import { isProviderError } from './errors';
import type { InternetLineType, ProviderFailureKind } from '../../contract/provider';

/** One finished provider call, for metrics: never its body, ref or key. */
export interface ProviderCallRecord {
  /** The public method's name, e.g. `checkMobileTopup`. */
  operation: string;
  /** `ok`, or how it failed (`error` only for a bug: the client throws nothing but ProviderErrors). */
  outcome: 'ok' | ProviderFailureKind | 'error';
  /** From the call to its answer or failure, queueing for a connection included. */
  durationMs: number;
}

export interface ProviderClientOptions {
  /** e.g. http://127.0.0.1:4010; the /v3/... paths are appended (a path prefix is kept). */
  baseUrl: string;
  /** Sent only in the X-Access-Token header; never in a log line or an error message. */
  apiKey: string;
  /** Injected so one Pool per origin is shared (and so tests can pass a MockAgent). */
  dispatcher: Dispatcher;
  /** Both timeouts must be shorter than the activity's start-to-close timeout (undici's default is 5 min). */
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** Told of every call once it is over (metrics); must not throw. */
  onCall?: (call: ProviderCallRecord) => void;
}

/** Per call: what the caller adds to the client's own deadline. */
export interface CallOptions {
  /**
   * Aborts the call (e.g. the activity's cancellation combined with its remaining time): the
   * request is cancelled, and if it had not left yet it never will. Already aborted: not sent.
   */
  signal?: AbortSignal;
  /** Sent as CLIENT_REFERENCE_HEADER (wire.ts): informational, the provider documents no such field. */
  clientReference?: string;
}

// Built once: the success envelopes of every endpoint.
const KeyInfoEnvelope = envelope(KeyInfo);
const PingEnvelope = envelope(Ping);
const BalanceEnvelope = envelope(Balance);
const MobilePlansEnvelope = envelope(MobilePlans);
const SendResultEnvelope = envelope(SendResult);
const MobileCheckEnvelope = envelope(MobileCheck);
const InternetProductsEnvelope = envelope(InternetProducts);
const NumberCheckEnvelope = envelope(NumberCheck);
const InternetCheckEnvelope = envelope(InternetCheck);
const CatalogEnvelope = envelope(Catalog);
const ProductDetailsEnvelope = envelope(ProductDetails);
const PlaceOrderResultEnvelope = envelope(PlaceOrderResult);
const GiftCardOrderCheckEnvelope = envelope(GiftCardOrderCheck);

/** A page of a list in the one form callers see, whichever documented form it came in. */
export interface ListPage<T> {
  items: T[];
  pagination?: Pagination;
}

export interface ListOptions {
  page?: number;
  pageSize?: number;
  /** ISO 8601; documented: `from` and `to` only together. */
  range?: { from: string; to: string };
}

/**
 * Rows in `data.items` (⚠ `data.topups`), pagination in `data.pagination` (⚠ `meta.pagination`).
 * Built as an envelope whose `data` is the normalised page.
 */
function listEnvelope<T>(page: z.ZodType<{ items?: T[]; topups?: T[]; pagination?: Pagination }>) {
  return envelope(page).transform((answer): { data: ListPage<T> } => {
    const data = answer.data as { items?: T[]; topups?: T[]; pagination?: Pagination };
    const metaPagination = Pagination.safeParse(
      (answer.meta as { pagination?: unknown } | undefined)?.pagination,
    );
    const pagination = data.pagination ?? (metaPagination.success ? metaPagination.data : undefined);
    return {
      data: { items: data.items ?? data.topups ?? [], ...(pagination && { pagination }) },
    };
  });
}
const MobileListEnvelope = listEnvelope(MobileTopupPage);
const InternetListEnvelope = listEnvelope(InternetTopupPage);
const GiftCardListEnvelope = listEnvelope(GiftCardOrderPage);
const TransactionListEnvelope = listEnvelope(TransactionPage);

function listQuery({ page, pageSize, range }: ListOptions = {}): string {
  const params = new URLSearchParams();
  if (page !== undefined) params.set('page', String(page));
  if (pageSize !== undefined) params.set('pageSize', String(pageSize));
  if (range) {
    params.set('from', range.from);
    params.set('to', range.to);
  }
  const query = params.toString();
  return query ? `?${query}` : '';
}

interface Call<T> {
  /** The public method's name, reported in every ProviderError. */
  operation: string;
  method: 'GET' | 'POST';
  /** Below /v3, with path parameters already encoded. */
  path: string;
  envelope: z.ZodType<{ data: T }, unknown>;
  body?: unknown;
  options?: CallOptions;
}

export class ProviderClient {
  readonly #origin: string;
  readonly #pathPrefix: string;
  // A private field: it does not show up in util.inspect, JSON.stringify or a logged client.
  readonly #apiKey: string;
  readonly #dispatcher: Dispatcher;
  readonly #headersTimeoutMs: number;
  readonly #bodyTimeoutMs: number;
  readonly #onCall: ((call: ProviderCallRecord) => void) | undefined;

  constructor(options: ProviderClientOptions) {
    if (!options.apiKey) throw new TypeError('ProviderClient: apiKey is required');
    const url = new URL(options.baseUrl);
    this.#origin = url.origin;
    // A base URL behind a gateway may carry a path (https://host/provider); keep it, minus the trailing '/'.
    this.#pathPrefix = url.pathname.replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    this.#dispatcher = options.dispatcher;
    this.#headersTimeoutMs = options.headersTimeoutMs;
    this.#bodyTimeoutMs = options.bodyTimeoutMs;
    this.#onCall = options.onCall;
  }

  /** GET /v3/validate: the key's type, scope and enabled flag. */
  validateKey(options?: CallOptions): Promise<KeyInfo> {
    return this.#call({
      operation: 'validateKey',
      method: 'GET',
      path: '/validate',
      envelope: KeyInfoEnvelope,
      options,
    });
  }

  /** GET /v3/ping: the API's and each operator's state (documented: check every 30–60 s). */
  ping(options?: CallOptions): Promise<Ping> {
    return this.#call({ operation: 'ping', method: 'GET', path: '/ping', envelope: PingEnvelope, options });
  }

  /** GET /v3/account/balance, DZD. */
  getBalance(options?: CallOptions): Promise<Balance> {
    return this.#call({
      operation: 'getBalance',
      method: 'GET',
      path: '/account/balance',
      envelope: BalanceEnvelope,
      options,
    });
  }

  /** GET /v3/account/transactions: the ledger, newest first. */
  listTransactions(list?: ListOptions, options?: CallOptions): Promise<ListPage<Transaction>> {
    return this.#call({
      operation: 'listTransactions',
      method: 'GET',
      path: `/account/transactions${listQuery(list)}`,
      envelope: TransactionListEnvelope,
      options,
    });
  }

  /** GET /v3/mobile/plans: dynamic plans (min/max) and fixed ones (amount); documented: cache daily. */
  getMobilePlans(options?: CallOptions): Promise<MobilePlans> {
    return this.#call({
      operation: 'getMobilePlans',
      method: 'GET',
      path: '/mobile/plans',
      envelope: MobilePlansEnvelope,
      options,
    });
  }

  /** POST /v3/mobile/send. Moves money: see design.md "Never send twice" before retrying. */
  sendMobileTopup(body: MobileSendBody, options?: CallOptions): Promise<SendResult> {
    return this.#call({
      operation: 'sendMobileTopup',
      method: 'POST',
      path: '/mobile/send',
      envelope: SendResultEnvelope,
      body,
      options,
    });
  }

  /** GET /v3/mobile/check-ref/{ref}; a ref never sent answers `not_found`. */
  checkMobileTopup(ref: string, options?: CallOptions): Promise<MobileCheck> {
    return this.#call({
      operation: 'checkMobileTopup',
      method: 'GET',
      path: `/mobile/check-ref/${encodeURIComponent(ref)}`,
      envelope: MobileCheckEnvelope,
      options,
    });
  }

  /** GET /v3/mobile/check-id/{topupId}: the same answer as check-ref. */
  checkMobileTopupById(topupId: string, options?: CallOptions): Promise<MobileCheck> {
    return this.#call({
      operation: 'checkMobileTopupById',
      method: 'GET',
      path: `/mobile/check-id/${encodeURIComponent(topupId)}`,
      envelope: MobileCheckEnvelope,
      options,
    });
  }

  /** GET /v3/mobile/list: the account's top-ups. */
  listMobileTopups(list?: ListOptions, options?: CallOptions): Promise<ListPage<MobileCheck>> {
    return this.#call({
      operation: 'listMobileTopups',
      method: 'GET',
      path: `/mobile/list${listQuery(list)}`,
      envelope: MobileListEnvelope,
      options,
    });
  }

  /** GET /v3/internet/products?type=: the card values of a line type and whether each is available. */
  getInternetProducts(type: InternetLineType, options?: CallOptions): Promise<InternetProducts> {
    return this.#call({
      operation: 'getInternetProducts',
      method: 'GET',
      path: `/internet/products?type=${encodeURIComponent(type)}`,
      envelope: InternetProductsEnvelope,
      options,
    });
  }

  /** GET /v3/internet/check-number: a line's details; an invalid number answers ERR_PHONE (`refused`). */
  checkInternetNumber(type: InternetLineType, number: string, options?: CallOptions): Promise<NumberCheck> {
    return this.#call({
      operation: 'checkInternetNumber',
      method: 'GET',
      path: `/internet/check-number?${new URLSearchParams({ type, number }).toString()}`,
      envelope: NumberCheckEnvelope,
      options,
    });
  }

  /** POST /v3/internet/send. Moves money: see design.md "Never send twice" before retrying. */
  sendInternetTopup(body: InternetSendBody, options?: CallOptions): Promise<SendResult> {
    return this.#call({
      operation: 'sendInternetTopup',
      method: 'POST',
      path: '/internet/send',
      envelope: SendResultEnvelope,
      body,
      options,
    });
  }

  /** GET /v3/internet/check-ref/{ref}; a ref never sent answers `not_found`. */
  checkInternetTopup(ref: string, options?: CallOptions): Promise<InternetCheck> {
    return this.#call({
      operation: 'checkInternetTopup',
      method: 'GET',
      path: `/internet/check-ref/${encodeURIComponent(ref)}`,
      envelope: InternetCheckEnvelope,
      options,
    });
  }

  /** GET /v3/internet/check-id/{topupId}: the same answer as check-ref. */
  checkInternetTopupById(topupId: string, options?: CallOptions): Promise<InternetCheck> {
    return this.#call({
      operation: 'checkInternetTopupById',
      method: 'GET',
      path: `/internet/check-id/${encodeURIComponent(topupId)}`,
      envelope: InternetCheckEnvelope,
      options,
    });
  }

  /** GET /v3/internet/list: the account's internet top-ups. */
  listInternetTopups(list?: ListOptions, options?: CallOptions): Promise<ListPage<InternetCheck>> {
    return this.#call({
      operation: 'listInternetTopups',
      method: 'GET',
      path: `/internet/list${listQuery(list)}`,
      envelope: InternetListEnvelope,
      options,
    });
  }

  /** GET /v3/gift-cards/catalog: categories of products (types, prices and stock: checkGiftCardProduct). */
  getGiftCardCatalog(options?: CallOptions): Promise<Catalog> {
    return this.#call({
      operation: 'getGiftCardCatalog',
      method: 'GET',
      path: '/gift-cards/catalog',
      envelope: CatalogEnvelope,
      options,
    });
  }

  /** GET /v3/gift-cards/checkProduct/{productId}: a product's types with price and stock. */
  checkGiftCardProduct(productId: string, options?: CallOptions): Promise<ProductDetails> {
    return this.#call({
      operation: 'checkGiftCardProduct',
      method: 'GET',
      path: `/gift-cards/checkProduct/${encodeURIComponent(productId)}`,
      envelope: ProductDetailsEnvelope,
      options,
    });
  }

  /** GET /v3/gift-cards/list: the account's gift-card orders. */
  listGiftCardOrders(list?: ListOptions, options?: CallOptions): Promise<ListPage<GiftCardOrderCheck>> {
    return this.#call({
      operation: 'listGiftCardOrders',
      method: 'GET',
      path: `/gift-cards/list${listQuery(list)}`,
      envelope: GiftCardListEnvelope,
      options,
    });
  }

  /**
   * POST /v3/gift-cards/placeOrder. Moves money and carries no client reference, so an
   * `outcome_unknown` here cannot be checked: only `not_reached` is safe to retry.
   */
  placeGiftCardOrder(body: PlaceOrderBody, options?: CallOptions): Promise<PlaceOrderResult> {
    return this.#call({
      operation: 'placeGiftCardOrder',
      method: 'POST',
      path: '/gift-cards/placeOrder',
      envelope: PlaceOrderResultEnvelope,
      body,
      options,
    });
  }

  /** GET /v3/gift-cards/checkOrder/{orderId}; card codes are present only when FULFILLED. */
  checkGiftCardOrder(orderId: string, options?: CallOptions): Promise<GiftCardOrderCheck> {
    return this.#call({
      operation: 'checkGiftCardOrder',
      method: 'GET',
      path: `/gift-cards/checkOrder/${encodeURIComponent(orderId)}`,
      envelope: GiftCardOrderCheckEnvelope,
      options,
    });
  }

  async #call<T>(call: Call<T>): Promise<T> {
    if (!this.#onCall) return this.#callOnce(call);
    const started = performance.now();
    let outcome: ProviderCallRecord['outcome'] = 'ok';
    try {
      return await this.#callOnce(call);
    } catch (err) {
      outcome = isProviderError(err) ? err.kind : 'error';
      throw err;
    } finally {
      this.#report({ operation: call.operation, outcome, durationMs: performance.now() - started });
    }
  }

  #report(record: ProviderCallRecord): void {
    try {
      this.#onCall?.(record);
    } catch {
      // A metrics problem must never change what a provider call returns.
    }
  }

  async #callOnce<T>({ operation, method, path, envelope: schema, body, options = {} }: Call<T>): Promise<T> {
    // Checked before anything is queued: a call whose time is already up certainly never left.
    if (options.signal?.aborted) throw notStarted(operation, options.signal.reason);
    const headers: Record<string, string> = { 'x-access-token': this.#apiKey, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (options.clientReference) headers[CLIENT_REFERENCE_HEADER] = options.clientReference;

    // undici's timeouts start once the request is on a socket; time queued in a busy pool is
    // unbounded. A call that Temporal has long given up on must not go out late (a resend may
    // already have happened), so the whole call, queue included, has a deadline: the client's own
    // and the caller's signal (an activity's remaining time and cancellation), whichever fires
    // first. undici drops an aborted request when it leaves the queue and cancels one in flight,
    // and we stop waiting for it at once.
    const deadline = callDeadline(
      this.#headersTimeoutMs + this.#bodyTimeoutMs,
      'the provider call deadline passed',
      options.signal,
    );
    try {
      return await this.#exchange<T>(
        { operation, method, path, envelope: schema, body, headers },
        deadline.signal,
      );
    } finally {
      deadline.clear();
    }
  }

  async #exchange<T>(
    {
      operation,
      method,
      path,
      envelope: schema,
      body,
      headers,
    }: Call<T> & { headers: Record<string, string> },
    deadline: AbortSignal,
  ): Promise<T> {
    let response: Dispatcher.ResponseData;
    // Whether undici handed the request to a socket: until it does, nothing of it has left.
    const written = { yet: false };
    try {
      response = await untilAborted(
        deadline,
        this.#dispatcher.compose(markWritten(written)).request({
          // `origin` is ignored by a Pool (it has one) and required by an Agent or MockAgent.
          origin: this.#origin,
          path: `${this.#pathPrefix}${API_PREFIX}${path}`,
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          headersTimeout: this.#headersTimeoutMs,
          bodyTimeout: this.#bodyTimeoutMs,
          signal: deadline,
        }),
      );
    } catch (err) {
      // Our deadline or a cancel ended a call undici had not yet handed to a socket (still queued
      // for a connection, or connecting): it is dropped unwritten, so it never left.
      const failure = transportFailure(operation, err);
      const endedByUs = failure.code === CALL_DEADLINE_EXCEEDED || failure.code === CALL_CANCELLED;
      throw endedByUs && !written.yet ? notSent(operation, err) : failure;
    }

    const { statusCode: status } = response;
    // Read the whole body on every path, error statuses included: an unread body holds its
    // connection, and the pool would eventually stall.
    let text: string;
    try {
      text = await response.body.text();
    } catch (err) {
      throw bodyReadFailure(operation, status, err);
    }
    const json = parseJson(text);

    // A failure envelope is a failure whatever the status: its code says what happened.
    if (status < 200 || status >= 300 || FailureEnvelope.safeParse(json).success) {
      throw statusFailure(operation, status, response.headers['retry-after'], json, this.#apiKey);
    }
    if (json === NOT_JSON) throw invalidResponse(operation, status, 'body is not JSON');
    const parsed = schema.safeParse(json);
    if (!parsed.success) throw invalidResponse(operation, status, describeIssues(parsed.error));
    return parsed.data.data;
  }
}

const NOT_JSON = Symbol('not JSON');

/** Error bodies may be HTML from a proxy, or empty; that is tolerated, not thrown. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return NOT_JSON;
  }
}

/** Paths and issue codes only: zod messages are safe today, but values in the body never are. */
function describeIssues(error: z.ZodError): string {
  const shown = error.issues.slice(0, 3).map((i) => `${i.path.join('.') || '(root)'}: ${i.code}`);
  const more = error.issues.length > shown.length ? `, +${error.issues.length - shown.length} more` : '';
  return `${shown.join(', ')}${more}`;
}

/**
 * An interceptor that notes when undici is about to write the request to a socket (`onRequestStart`,
 * undici's `onConnect`: called in the same tick, just before the request's first byte is written,
 * and never after the request was aborted — a request whose signal fired is dropped unwritten).
 * So a call that failed without it certainly never left this process.
 */
function markWritten(written: { yet: boolean }): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (options, handler) =>
    dispatch(options, {
      onRequestStart(controller, context) {
        written.yet = true;
        handler.onRequestStart?.(controller, context);
      },
      onRequestUpgrade: (...args) => handler.onRequestUpgrade?.(...args),
      onResponseStart: (...args) => handler.onResponseStart?.(...args),
      onResponseData: (...args) => handler.onResponseData?.(...args),
      onResponseEnd: (...args) => handler.onResponseEnd?.(...args),
      onResponseError: (...args) => handler.onResponseError?.(...args),
    });
}

/** `promise`, or the signal's reason as soon as it aborts (the promise is then left to settle unobserved). */
function untilAborted<T>(signal: AbortSignal, promise: Promise<T>): Promise<T> {
  promise.catch(() => {}); // settles after we stopped waiting; nothing to report
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
