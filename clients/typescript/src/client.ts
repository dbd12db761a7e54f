/**
 * A thin client over the generated one (openapi-fetch on src/schema.ts): the rules every back
 * office otherwise writes by hand — typed problems, retrying 429/503 within a deadline, paging with
 * tokens, the export's stream, collecting a bulk decision's 202 — and nothing else. Every route
 * stays reachable, typed, through `raw`.
 */
import createClient, { type Client as RawClient } from 'openapi-fetch';
import type { components, operations, paths } from './schema';
import { problemOf, ProblemError } from './problem';
import { fetchWithRetry, type RetryOptions } from './retry';

type Schemas = components['schemas'];
export type OrderRequest = Schemas['OrderRequest'];
export type OrderView = Schemas['OrderView'];
export type OrderViewWithDeliveries = Schemas['OrderViewWithDeliveries'];
export type OrderSummary = Schemas['OrderSummary'];
export type OrderList = Schemas['OrderList'];
export type BatchItemResult = Schemas['BatchItemResult'];
export type ExportRow = Schemas['ExportRow'];
export type Statement = Schemas['Statement'];
export type ReviewRequest = Schemas['ReviewRequest'];
export type BulkReviewRequest = Schemas['BulkReviewRequest'];
export type BulkReviewAnswer = Schemas['BulkReviewAnswer'];
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
export type OrderWebhookDeliveries = Schemas['OrderWebhookDeliveries'];
export type RedeliveryAccepted = Schemas['RedeliveryAccepted'];
export type GiftCardCatalog = Schemas['GiftCardCatalog'];
export type OrderStatus = OrderView['status'];

type Query<O extends keyof operations> = NonNullable<operations[O]['parameters']['query']>;
export type ListOrdersQuery = Omit<Query<'listOrders'>, 'pageToken'>;
export type ExportQuery = Omit<Query<'exportOrders'>, 'after'> & { from: string; to: string };
export type StatementQuery = Query<'statement'> & { from: string; to: string };

export interface TopupClientOptions {
  /** The API's address, e.g. `https://topup.example.com`. */
  baseUrl: string;
  /** Your client's key (`tfk_…`), sent as `Authorization: Bearer`. */
  apiKey: string;
  /** How long one call may take in all, its retries and their waits included (default 60 s). */
  deadlineMs?: number;
  retry?: RetryOptions;
  /** Another fetch (a proxy agent, tracing); default globalThis.fetch. */
  fetch?: typeof fetch;
}

export interface CallOptions {
  /** This call's deadline instead of the client's. */
  deadlineMs?: number;
  signal?: AbortSignal;
}

export interface Submitted {
  /** True for a new order (201); false when this ref was already submitted with this body (200). */
  created: boolean;
  order: OrderView;
}

export interface Decided {
  /** True when the decision was accepted but the provider's check outlasted the API's wait (202). */
  pending: boolean;
  order: OrderView;
}

/**
 * Which requests may be sent again on 429 and 503. A 429 started nothing: always. A 503 may
 * come after the API began (a request timeout), so only what is safe to repeat: reads, order
 * submissions (the same ref and body answer the same order: the API starts each ref once),
 * bulk decisions (one bulkId decides each order once) and redeliveries (the receiver
 * deduplicates by event id). A single review decision is not: its first try may have been applied,
 * and the repeat would then answer 409 order-not-in-review for a decision that was taken.
 */
function retryable(request: Request, status: number): boolean {
  if (status === 429) return true;
  if (request.method === 'GET') return true;
  const path = new URL(request.url).pathname;
  return (
    path === '/v1/orders' ||
    path === '/v1/orders/batch' ||
    path === '/v1/reviews/bulk' ||
    /\/webhooks\/[^/]+\/redeliver$/.test(path)
  );
}

export class TopupClient {
  /** The generated client, for any route this class does not wrap (same key, no retries). */
  readonly raw: RawClient<paths>;
  readonly #options: TopupClientOptions;
  readonly #fetch: typeof fetch;

  constructor(options: TopupClientOptions) {
    this.#options = options;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.raw = createClient<paths>({
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      headers: { Authorization: `Bearer ${options.apiKey}` },
      fetch: (request) => this.#fetch(request),
    });
  }

  /**
   * Runs one call of the generated client with retries and a deadline; returns its data or throws
   * the API's problem. `call` gets the fetch to pass to openapi-fetch.
   */
  async #run<T>(
    options: CallOptions | undefined,
    call: (
      fetch: (request: Request) => Promise<Response>,
    ) => Promise<{ data?: T; error?: unknown; response: Response }>,
  ): Promise<{ data: T; response: Response }> {
    const deadlineMs = options?.deadlineMs ?? this.#options.deadlineMs ?? 60_000;
    const deadlineAt = Date.now() + deadlineMs;
    const signal = AbortSignal.any([
      AbortSignal.timeout(deadlineMs),
      ...(options?.signal ? [options.signal] : []),
    ]);
    const { data, error, response } = await call((request) =>
      fetchWithRetry(request, {
        ...this.#options.retry,
        fetch: this.#fetch,
        deadlineAt,
        signal,
        retryable,
      }),
    );
    if (!response.ok) throw problemOf(error, response);
    return { data: data as T, response };
  }

  /** Submits one order. Safe to repeat with the same ref and body (see README "Retries"). */
  async submit(order: OrderRequest, options?: CallOptions): Promise<Submitted> {
    const { data, response } = await this.#run(options, (fetch) =>
      this.raw.POST('/v1/orders', { body: order, fetch }),
    );
    return { created: response.status === 201, order: data };
  }

  /**
   * Submits up to API_BATCH_MAX_ORDERS (500) orders: one result per order, in order, each what
   * `submit` would have answered (`status` 201/200 with the order in `body`, or a problem).
   */
  async submitBatch(orders: OrderRequest[], options?: CallOptions): Promise<BatchItemResult[]> {
    const { data } = await this.#run(options, (fetch) =>
      this.raw.POST('/v1/orders/batch', { body: { orders }, fetch }),
    );
    return data.results;
  }

  /** The order; `client` for another client's (with audit:read or as an operator). */
  async getOrder(ref: string, options?: CallOptions & { client?: string }): Promise<OrderViewWithDeliveries> {
    const query = options?.client ? { client: options.client } : {};
    const { data } = await this.#run(options, (fetch) =>
      this.raw.GET('/v1/orders/{ref}', { params: { path: { ref }, query }, fetch }),
    );
    return data;
  }

  /** One page of the list; pass its `nextPageToken` back as `pageToken` for the next. */
  async listOrdersPage(
    query: ListOrdersQuery & { pageToken?: string },
    options?: CallOptions,
  ): Promise<OrderList> {
    const { data } = await this.#run(options, (fetch) =>
      this.raw.GET('/v1/orders', { params: { query }, fetch }),
    );
    return data;
  }

  /**
   * Every order the list reaches, newest accepted first, page after page (each page one request,
   * with its own deadline). Stop iterating to stop reading.
   */
  async *listOrders(query: ListOrdersQuery = {}, options?: CallOptions): AsyncGenerator<OrderSummary> {
    let pageToken: string | undefined;
    do {
      const page = await this.listOrdersPage({ ...query, ...(pageToken ? { pageToken } : {}) }, options);
      yield* page.orders;
      pageToken = page.nextPageToken ?? undefined;
    } while (pageToken);
  }

  /**
   * The export's rows (NDJSON), parsed as they arrive: memory does not grow with the range. If the
   * stream is cut, the same call with `after` set to the last row's `position` resumes after it.
   * `deadlineMs` here bounds the whole download.
   */
  async *exportOrders(
    query: ExportQuery & { after?: string },
    options?: CallOptions,
  ): AsyncGenerator<ExportRow> {
    const { data } = await this.#run(options, (fetch) =>
      this.raw.GET('/v1/orders/export', {
        params: { query },
        headers: { Accept: 'application/x-ndjson' },
        parseAs: 'stream',
        fetch,
      }),
    );
    if (!data) return;
    const decoder = new TextDecoder();
    let buffered = '';
    for await (const chunk of data as unknown as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (line.trim()) yield JSON.parse(line) as ExportRow;
      }
    }
    // The API ends every row with a newline: anything left is a row cut short.
    if (buffered.trim()) {
      throw new Error(
        'the export was cut short mid-row: call exportOrders again with `after` set to the last row’s position',
      );
    }
  }

  /** The export as CSV text chunks (`Accept: text/csv`), to write to a file as they come. */
  async *exportOrdersCsv(
    query: ExportQuery & { after?: string },
    options?: CallOptions,
  ): AsyncGenerator<string> {
    const { data } = await this.#run(options, (fetch) =>
      this.raw.GET('/v1/orders/export', {
        params: { query },
        headers: { Accept: 'text/csv' },
        parseAs: 'stream',
        fetch,
      }),
    );
    if (!data) return;
    const decoder = new TextDecoder();
    for await (const chunk of data as unknown as AsyncIterable<Uint8Array>)
      yield decoder.decode(chunk, { stream: true });
  }

  /** Your books for the range (another client's with `client` and audit:read). */
  async statement(query: StatementQuery, options?: CallOptions): Promise<Statement> {
    const { data } = await this.#run(options, (fetch) =>
      this.raw.GET('/v1/statements', { params: { query }, fetch }),
    );
    return data;
  }

  /**
   * A decision on an order in review. Refusals throw: `decision-refused` (409, `problem.forceable`
   * says whether `force: true` with a note would apply it), `order-not-in-review` (409),
   * `decision-invalid` (422). Not retried on 503 (see `retryable`): read the order instead.
   */
  async decide(
    ref: string,
    decision: ReviewRequest,
    options?: CallOptions & { client?: string },
  ): Promise<Decided> {
    const query = options?.client ? { client: options.client } : {};
    const { data, response } = await this.#run(options, (fetch) =>
      this.raw.POST('/v1/orders/{ref}/review', { params: { path: { ref }, query }, body: decision, fetch }),
    );
    return { pending: response.status === 202, order: data };
  }

  /**
   * One decision for every order in review the filter finds, collected: while the API answers 202
   * (`running`) the same request is sent again, every `collectEveryMs`, until it answers the
   * results or `deadlineMs` (default 5 minutes) ends. The same bulkId never decides an order twice.
   */
  async decideBulk(
    request: BulkReviewRequest,
    options?: CallOptions & { collectEveryMs?: number },
  ): Promise<BulkReviewAnswer> {
    const deadlineMs = options?.deadlineMs ?? 5 * 60_000;
    const deadlineAt = Date.now() + deadlineMs;
    const everyMs = options?.collectEveryMs ?? 1_000;
    for (;;) {
      const left = deadlineAt - Date.now();
      const { data } = await this.#run({ ...options, deadlineMs: Math.max(1, left) }, (fetch) =>
        this.raw.POST('/v1/reviews/bulk', { body: request, fetch }),
      );
      if (data.state === 'done' || Date.now() + everyMs >= deadlineAt) return data;
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  }

  /** Your webhook endpoints (never a secret). */
  async webhookEndpoints(options?: CallOptions): Promise<WebhookEndpoint[]> {
    const { data } = await this.#run(options, (fetch) => this.raw.GET('/v1/webhooks', { fetch }));
    return data.endpoints;
  }

  /** Your order's events and, per endpoint, their delivery state. */
  async orderWebhooks(ref: string, options?: CallOptions): Promise<OrderWebhookDeliveries> {
    const { data } = await this.#run(options, (fetch) =>
      this.raw.GET('/v1/orders/{ref}/webhooks', { params: { path: { ref } }, fetch }),
    );
    return data;
  }

  /** Sends an event again (same id and body, a new signature), to every endpoint it was for or one. */
  async redeliver(
    ref: string,
    eventId: string,
    options?: CallOptions & { endpoint?: string },
  ): Promise<RedeliveryAccepted> {
    const query = options?.endpoint ? { endpoint: options.endpoint } : {};
    const { data } = await this.#run(options, (fetch) =>
      this.raw.POST('/v1/orders/{ref}/webhooks/{eventId}/redeliver', {
        params: { path: { ref, eventId }, query },
        fetch,
      }),
    );
    return data;
  }

  /** The provider's gift-card catalog (products, types, prices, stock). */
  async giftCardCatalog(options?: CallOptions): Promise<GiftCardCatalog> {
    const { data } = await this.#run(options, (fetch) => this.raw.GET('/v1/gift-cards/catalog', { fetch }));
    return data;
  }
}

export { ProblemError };
