/**
 * What the order routes do with Temporal: start an order idempotently, read its view, list orders
 * from visibility (order-list.ts) and put a review decision to the order (a Workflow Update) —
 * each for an authenticated caller, on the orders it reaches (access.ts). Routes stay thin; this
 * module knows the workflow contract (contract/order.ts) and turns Temporal's errors and the
 * workflow's refusals into ApiErrors.
 *
 * An order belongs to the client that submitted it. Its workflow ID derives from (client, ref)
 * (orderWorkflowId), and ownership is also read back from the workflow itself (its OrderClient
 * search attribute) before anything is shown or changed: the ID alone is not trusted, since the
 * default client's `order-<ref>` form is shared with orders started before clients existed.
 */
import type { IntakeCheck } from './intake';
import { createHash } from 'node:crypto';
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  WorkflowUpdateStage,
  type Client,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import canonicalize from 'canonicalize';
import type { Logger } from 'pino';
import {
  AcceptedAtAttribute,
  OrderClientAttribute,
  decideReviewUpdate,
  DecisionRejection,
  OrderStatusAttribute,
  OrderTypeAttribute,
  orderWorkflowId,
  PROVIDER_REF_MEMO,
  workflowTypeByOrderType,
  type DecisionRefusal,
  type OrderInput,
  type OrderTimings,
  type OrderView as WorkflowOrderView,
} from '../../contract/order';
import type { Caller, ClientRegistry } from '../clients';
import type { OrderRequest, OrderType, ReviewDecision, ReviewRequest } from '../../contract/schemas';
import { providerRefFor } from './provider-ref';
import { orderPriority, type OrderOrigin } from './priority';
import { accessTo, assertMayForce, inOperatorReach, type Purpose } from './access';
import { ApiError, type FieldError } from '../http';
import { isTemporalUnavailable, temporarilyUnavailable } from '../http';
import { StartNotRun, type FairStartGate } from './start-gate';
import { FIGURES_MEMO, orderFigures } from './figures';
import { OrderListing, type OrderList, type ScannedOrder } from './order-list.service';
import { ReadCache } from '../http';
import { pageTokensFromConfig, type PageTokens } from './page-token';
import { acceptedView, OrderReader, type ReadView } from './order-read.service';
import { workflowStatuses, type ListOrdersQuery, type OrderView as DocumentedView } from '../http';
import type { OrderIdentity, WorkflowStatusName } from '../../contract/order-identity';
import type { z } from 'zod';
import { metricCatalog } from '../../contract/metrics';
import { noMetrics, type Counter, type Metrics } from '../observability';
import { workflowUiUrl } from '../temporal';
import { auditOrder, type OrderAudit } from '../audit';
import { maskSecrets } from '../audit';
import { REVEAL_SCOPE, revealRecorder, type RevealedThrough, type RevealRecorder } from '../audit';
import { orderSummary } from '../../contract/ui-metadata';

export interface OrderServiceOptions {
  /** Refuses (422) what the provider would refuse, before anything starts (intake.ts); none: formats only. */
  intake?: IntakeCheck;
  client: Client;
  taskQueue: string;
  /** Who owns what: the clients, and which one keeps the `order-<ref>` workflow IDs. */
  clients: ClientRegistry;
  /** Deadline of each Temporal call: a slow Temporal answers 503, it does not hold the request. */
  timeoutMs: number;
  /**
   * How long a review waits for the decision's outcome (the workflow asks the provider first)
   * before answering that it is still being checked. Default: `timeoutMs`.
   */
  decisionTimeoutMs?: number;
  clock: () => Date;
  /** Polling timings put in each new order's input (tests scale them down). */
  timingsFor: (type: OrderType) => Partial<OrderTimings> | undefined;
  /** For calls made outside a request; routes pass the request's logger (with its request ID). */
  logger: Logger;
  /** Orders accepted are counted here. */
  metrics?: Metrics;
  /** Temporal UI (TEMPORAL_UI_URL) and the namespace, for the view's link to the workflow. */
  temporalUi?: { baseUrl: string; namespace: string };
  /** After a status query no worker answered, how long reads skip the query (order-read.ts QueryGate). */
  queryRetryMs?: number;
  /**
   * Asked when Temporal refuses a start as INVALID_ARGUMENT: why the namespace is not set up for
   * orders yet (health.ts searchAttributesNotReady), or undefined when it is.
   */
  notSetUp?: () => Promise<string | undefined>;
  /**
   * Hands out the workflow starts in flight towards Temporal, fairly across clients, singles first
   * (start-gate.ts, API_START_CONCURRENCY); none: every start goes at once.
   */
  startGate?: FairStartGate;
  /** Seals and opens list page tokens (page-token.ts); default: a random key of this process. */
  pageTokens?: PageTokens;
  /**
   * How long identical list and export pages of one caller share one answer (read-cache.ts,
   * API_READ_CACHE_MS); default 0: every read asks Temporal.
   */
  readCacheMs?: number;
}

/** List and export pages kept at most (read-cache.ts): a page holds up to 100 summaries. */
const CACHED_PAGES = 1_000;

/** The order's URL for its owner (another client, even one that reaches it, adds `?client=`). */
export function orderLocation(ref: string): string {
  return `/v1/orders/${encodeURIComponent(ref)}`;
}

/** An order as a client names it: its owner and its ref. */
export interface OrderAddress {
  client: string;
  ref: string;
}

function workflowStatusOf(description: WorkflowExecutionDescription): WorkflowStatusName {
  const name = description.status.name;
  return (workflowStatuses as readonly string[]).includes(name) ? (name as WorkflowStatusName) : 'UNKNOWN';
}

export type OrderView = WorkflowOrderView & OrderIdentity;
export type { OrderIdentity, WorkflowStatusName };

// The compiler keeps the documented view (schemas.ts, the OpenAPI document) and the view the API
// answers with identical. Here rather than in schemas.ts, so the schemas need nothing of this module.
type Assignable<A, B> = [A] extends [B] ? true : false;
const viewMatches: [
  Assignable<z.infer<typeof DocumentedView>, OrderView>,
  Assignable<OrderView, z.infer<typeof DocumentedView>>,
] = [true, true];
void viewMatches;

/** The memo keys: the hash of the order's canonical request (never the request: personal data) and its provider ref. */
export const REQUEST_HASH_MEMO = 'requestHash';
export { PROVIDER_REF_MEMO };

/**
 * RFC 8785 (JCS) canonical JSON, so the same request always hashes the same whatever its key order.
 * Its output for every request the API accepts is that of the hand-written function the stored
 * fingerprints were made with (test/orders/request-hash.test.ts).
 */
export function canonicalJson(value: unknown): string {
  return canonicalize(value) ?? 'null';
}

/** sha256 of the *parsed* request's canonical JSON: the idempotency fingerprint of an order. */
export function requestHash(request: OrderRequest): string {
  return createHash('sha256').update(canonicalJson(request)).digest('hex');
}

/** Top-ups carry a ref to the provider; a gift-card placement takes none (the provider assigns an orderId). */
function sendsRef(type: OrderType): boolean {
  return type !== 'gift_card';
}

export class OrderService {
  readonly #o: OrderServiceOptions;
  readonly #listing: OrderListing;
  readonly #accepted: Counter<'order_type' | 'client'>;
  readonly #reader: OrderReader;
  readonly #reveals: RevealRecorder;
  #setupAsked = false;

  constructor(options: OrderServiceOptions) {
    this.#o = options;
    this.#accepted = (options.metrics ?? noMetrics).counter(metricCatalog.ordersAccepted);
    this.#reveals = revealRecorder(options.metrics ?? noMetrics, options.clients.holdersOf(REVEAL_SCOPE));
    this.#listing = new OrderListing(
      options.client,
      options.clients,
      (fn) => this.#timed(fn),
      options.pageTokens ?? pageTokensFromConfig({}).pageTokens,
      Date.now,
      new ReadCache({ ttlMs: options.readCacheMs ?? 0, maxEntries: CACHED_PAGES }),
    );
    this.#reader = new OrderReader(options.client, (fn) => this.#timed(fn), options.queryRetryMs);
  }

  /** Every Temporal call under one deadline; a missed deadline surfaces as a gRPC error (→ 503). */
  #timed<T>(fn: () => Promise<T>): Promise<T> {
    return this.#o.client.withDeadline(Date.now() + this.#o.timeoutMs, fn);
  }

  /** The default client keeps `order-<ref>`; every other client's IDs name it (contract/order.ts). */
  workflowIdOf({ client, ref }: OrderAddress): string {
    return orderWorkflowId(ref, client === this.#o.clients.defaultClientId ? undefined : client);
  }

  /** Whose order, its workflow ID and its link in Temporal UI. */
  #identity(address: OrderAddress): Pick<OrderIdentity, 'client' | 'workflowId' | 'temporalUiUrl'> {
    const workflowId = this.workflowIdOf(address);
    const ui = this.#o.temporalUi;
    return {
      client: address.client,
      workflowId,
      ...(ui ? { temporalUiUrl: workflowUiUrl(ui.baseUrl, ui.namespace, workflowId) } : {}),
    };
  }

  #handle(address: OrderAddress): WorkflowHandle {
    return this.#o.client.workflow.getHandle(this.workflowIdOf(address));
  }

  /** The order's owner as the workflow records it; orders from before clients belong to the default client. */
  #ownerOf(description: WorkflowExecutionDescription): string | undefined {
    return description.typedSearchAttributes.get(OrderClientAttribute) ?? this.#o.clients.defaultClientId;
  }

  /** The workflow's view with what the API adds: owner, workflow ID, provider ref, how it was read. */
  #withIdentity(read: ReadView, address: OrderAddress, description: WorkflowExecutionDescription): OrderView {
    const fromMemo = description.memo?.[PROVIDER_REF_MEMO];
    // Every top-up started since clients exist has it; one from before sent its own ref (the
    // workflow still falls back to it the same way).
    const providerRef =
      typeof fromMemo === 'string' ? fromMemo : sendsRef(read.view.type) ? read.view.ref : undefined;
    return this.#identified(read, address, workflowStatusOf(description), providerRef);
  }

  #identified(
    { view, live }: ReadView,
    address: OrderAddress,
    workflowStatus: WorkflowStatusName,
    providerRef: string | undefined,
  ): OrderView {
    return {
      ...view,
      ...this.#identity(address),
      ...(providerRef ? { providerRef } : {}),
      workflowStatus,
      ...(live ? {} : { live: false as const }),
    };
  }

  /**
   * Whether the workflow ID alone names the owner: `order:<client>:<ref>`, which only the API
   * starts, for the authenticated client, with that client in OrderClient and the provider ref
   * derived from (client, ref) in the memo. The default client's `order-<ref>` does not: it is
   * shared with orders from before clients and from an earlier default client (OrderClient says).
   */
  #idNamesOwner(address: OrderAddress): boolean {
    return address.client !== this.#o.clients.defaultClientId;
  }

  /**
   * Starts the caller's order, or finds the one this ref already started for it. The workflow ID
   * is the idempotency key: Temporal refuses a second workflow with the same ID (REJECT_DUPLICATE
   * for closed ones, FAIL for a running one), so concurrent submissions start exactly one.
   * `origin` sets the order's place in the task queue (src/orders/priority.ts) and in the start
   * gate (start-gate.ts). A single order waits for a start slot up to the Temporal call deadline,
   * then answers 503; a batch item waits until `wait.startBy` (or until `wait.signal` aborts) and
   * then throws StartNotRun, for the batch to answer that it was not tried.
   */
  async submit(
    caller: Caller,
    request: OrderRequest,
    log: Logger = this.#o.logger,
    origin: OrderOrigin = 'single',
    wait: { startBy?: number; signal?: AbortSignal } = {},
  ): Promise<{ created: boolean; view: OrderView }> {
    await this.#o.intake?.check(request);
    // Off the hot path: the first submission learns, in the background, whether the namespace is
    // set up (kept once it is), so a start Temporal answers late need not wait on probes.
    if (!this.#setupAsked) {
      this.#setupAsked = true;
      this.#o.notSetUp?.().catch(() => undefined);
    }
    const address = { client: caller.id, ref: request.ref };
    const hash = requestHash(request);
    const providerRef = sendsRef(request.type) ? providerRefFor(caller.id, request.ref) : undefined;
    // Accepted when its start goes to Temporal, not when it began waiting for a slot.
    const inputNow = (): OrderInput => ({
      request,
      acceptedAt: this.#o.clock().toISOString(),
      clientId: caller.id,
      ...(providerRef ? { providerRef } : {}),
      timings: this.#o.timingsFor(request.type),
      // The workflow announces its status changes only for a client with endpoints (docs/integrators.md "Webhooks").
      ...(this.#o.clients.webhooksOf(caller.id).length > 0 ? { webhooks: true } : {}),
    });
    const start = async (): Promise<OrderInput> => {
      const input = inputNow();
      await this.#timed(() =>
        this.#o.client.workflow.start(workflowTypeByOrderType[request.type], {
          workflowId: this.workflowIdOf(address),
          taskQueue: this.#o.taskQueue,
          args: [input],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          workflowIdConflictPolicy: 'FAIL',
          // Fair share across clients, singles before batch items; inherited by all the order's work.
          priority: orderPriority(caller, origin),
          // Temporal UI's one-line summary of the order (no phone or line number, no card code).
          staticSummary: orderSummary(request),
          memo: {
            [REQUEST_HASH_MEMO]: hash,
            ...(providerRef ? { [PROVIDER_REF_MEMO]: providerRef } : {}),
            // Statements sum these from visibility (src/statements/statement.service.ts).
            [FIGURES_MEMO]: orderFigures(request),
          },
          typedSearchAttributes: [
            { key: OrderTypeAttribute, value: request.type },
            { key: OrderStatusAttribute, value: 'ACCEPTED' },
            // API_KEYS (one client): none, as before clients; such orders are the default client's.
            ...(this.#o.clients.legacy ? [] : [{ key: OrderClientAttribute, value: caller.id }]),
            // The list's order (order-list.ts); continue-as-new carries it over to the next run.
            { key: AcceptedAtAttribute, value: new Date(input.acceptedAt) },
          ],
        }),
      );
      return input;
    };
    try {
      const waitMs =
        origin === 'batch' && wait.startBy !== undefined ? wait.startBy - Date.now() : this.#o.timeoutMs;
      const input = this.#o.startGate
        ? await this.#o.startGate.run(
            caller.id,
            origin,
            { waitMs, ...(wait.signal && { signal: wait.signal }) },
            start,
          )
        : await start();
      this.#accepted.add({ order_type: request.type, client: caller.id });
      return {
        created: true,
        view: {
          ...acceptedView(input),
          ...this.#identity(address),
          ...(providerRef ? { providerRef } : {}),
          workflowStatus: 'RUNNING',
        },
      };
    } catch (err) {
      if (err instanceof StartNotRun && origin === 'single')
        throw temporarilyUnavailable(
          'Too many orders are being started right now; submit this order again.',
          err,
        );
      if (err instanceof StartNotRun) throw err;
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw await this.#startRefused(err);
    }

    const handle = this.#handle(address);
    const description = await this.#timed(() => handle.describe());
    // Another owner under this ID is possible only in the default client's `order-<ref>` form
    // (the default client was changed): the ref is taken there all the same.
    if (this.#ownerOf(description) !== caller.id || description.memo?.[REQUEST_HASH_MEMO] !== hash) {
      throw new ApiError(
        'ref-conflict',
        `An order with ref ${request.ref} exists with a different request; use a new ref for a new order.`,
      );
    }
    return { created: false, view: await this.#read(address, log, description) };
  }

  /**
   * A start refused as an invalid argument while the namespace lacks the order's search attributes
   * (a fresh cluster before its setup ran) is the service not being ready, not a bad request: the
   * 503 /readyz gives, in its words, with Retry-After. Whether that is the cause is asked of
   * Temporal again rather than read from the error's wording; any other refusal stays as it is.
   */
  async #startRefused(err: unknown): Promise<unknown> {
    // Whatever the error's code: a cluster with SQL visibility refuses such a start otherwise than the dev server.
    // Temporal slow or away: that is the answer (503), and probes would only add to the load.
    if (!this.#o.notSetUp || isTemporalUnavailable(err)) return err;
    const reason = await this.#o.notSetUp().catch(() => undefined);
    return reason ? temporarilyUnavailable(`Not ready: ${reason}.`, err) : err;
  }

  /**
   * The order's view for this caller: 404 when the caller does not reach it (access.ts). Its owner
   * reads it in clear; anyone else (an auditor, an operator) reads it masked (src/audit/mask.ts),
   * unless `reveal` names the route that asked for it in clear for a caller holding audit:reveal
   * (the view's `reveal=true`, the orders export): then it is in clear, and the reveal is recorded
   * as the audit export's is. `log` is the request's logger.
   */
  async view(
    caller: Caller,
    address: OrderAddress,
    purpose: Purpose = 'read',
    log: Logger = this.#o.logger,
    reveal?: Exclude<RevealedThrough, 'audit'>,
  ): Promise<OrderView> {
    // Refused before Temporal is asked: the answer cannot depend on whether the order exists.
    const access = accessTo(caller, address.client, purpose);
    if (!access) throw orderNotFound(address.ref);
    const view = await this.#read(address, log);
    if (access === 'operator' && !inOperatorReach(view)) throw orderNotFound(address.ref);
    // Recorded once the order is known to be within reach (a 404 revealed nothing), and for the
    // owner too: asking for a reveal is recorded whoever asks, as the audit export records it.
    if (reveal && caller.scopes.has(REVEAL_SCOPE)) {
      this.#reveals.record(caller, address, reveal, log);
      return view;
    }
    return access === 'owner' ? view : maskSecrets(view);
  }

  /**
   * The view of one completed run of the order, for this caller (access and masking as `view`'s,
   * for reading), or undefined when that run did not complete with a view (read the order with
   * `view`). A completed run's view never changes: the export keeps it (order-export.ts) for the
   * run its listing names as the order's latest.
   */
  async completedRunView(
    caller: Caller,
    address: OrderAddress,
    runId: string,
  ): Promise<OrderView | undefined> {
    const access = accessTo(caller, address.client, 'read');
    if (!access) throw orderNotFound(address.ref);
    let closed;
    try {
      closed = await this.#reader.closedView(this.workflowIdOf(address), address.ref, runId);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
    if (closed.kind !== 'completed') return undefined;
    const { view: workflowView } = closed;
    // The owner as the workflow names it, as `view` reads it (its ID, or the view's own client).
    if (!this.#idNamesOwner(address) && workflowView.client !== address.client) return undefined;
    const providerRef = sendsRef(workflowView.type)
      ? providerRefFor(address.client, workflowView.ref)
      : undefined;
    const view = this.#identified({ view: workflowView, live: true }, address, 'COMPLETED', providerRef);
    if (access === 'operator' && !inOperatorReach(view)) throw orderNotFound(address.ref);
    return access === 'owner' ? view : maskSecrets(view);
  }

  /**
   * The order's current view, whoever asks; 404 unless the workflow itself says `address.client`
   * owns it. `described`: the current run, if the caller has just described it.
   */
  async #read(
    address: OrderAddress,
    log: Logger,
    described?: WorkflowExecutionDescription,
  ): Promise<OrderView> {
    const handle = this.#handle(address);
    let asked = false;
    if (!described) {
      const read = await this.#readWithoutDescribe(address, handle, log);
      if (read.view) return read.view;
      asked = read.asked;
    }
    let description = described ?? (await this.#describe(address, handle));
    try {
      return await this.#viewOf(address, handle, description, log, asked);
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
    // The run described continued as new (or was reset, or deleted) meanwhile: read the current one.
    description = await this.#describe(address, handle);
    try {
      return await this.#viewOf(address, handle, description, log, asked);
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      throw temporarilyUnavailable('The order is changing runs right now; retry.', err);
    }
  }

  /**
   * An order read without describing it, when the workflow ID names its owner (another client's
   * `order:<client>:<ref>`) or the workflow's own view does (`view.client`): a completed one from
   * its last event alone (one RPC), a running one from the status query. No view when it needs
   * Temporal's records (no worker answered, it ended without a view, or its view does not name the
   * owner: an order from before views did); `asked` when the query was put already and unanswered.
   */
  async #readWithoutDescribe(
    address: OrderAddress,
    handle: WorkflowHandle,
    log: Logger,
  ): Promise<{ view?: OrderView; asked: boolean }> {
    const owned = (view: WorkflowOrderView) => this.#idNamesOwner(address) || view.client === address.client;
    const providerRefOf = (view: WorkflowOrderView) =>
      sendsRef(view.type) ? providerRefFor(address.client, view.ref) : undefined;
    try {
      const closed = await this.#reader.closedView(handle.workflowId, address.ref);
      if (closed.kind === 'completed') {
        const view = closed.view;
        if (!owned(view)) return { asked: false };
        return {
          view: this.#identified({ view, live: true }, address, 'COMPLETED', providerRefOf(view)),
          asked: false,
        };
      }
      if (closed.kind === 'other') return { asked: false };
      const view = await this.#reader.queried(handle, log);
      if (!view) return { asked: true };
      // Answered, but the owner is for the records to say: read again once they have.
      if (!owned(view)) return { asked: false };
      return {
        view: this.#identified({ view, live: true }, address, 'RUNNING', providerRefOf(view)),
        asked: true,
      };
    } catch (err) {
      throw err instanceof WorkflowNotFoundError ? orderNotFound(address.ref) : err;
    }
  }

  async #describe(address: OrderAddress, handle: WorkflowHandle): Promise<WorkflowExecutionDescription> {
    try {
      return await this.#timed(() => handle.describe());
    } catch (err) {
      throw err instanceof WorkflowNotFoundError ? orderNotFound(address.ref) : err;
    }
  }

  /** The order's current run, if the workflow itself names `address.client` its owner (404 otherwise). */
  async #describeOwned(address: OrderAddress): Promise<WorkflowExecutionDescription> {
    const description = await this.#describe(address, this.#handle(address));
    if (this.#ownerOf(description) !== address.client) throw orderNotFound(address.ref);
    return description;
  }

  /**
   * The view of the run `description` describes, for its owner only: the workflow's result once it
   * completed, its answer to the `status` query while it runs, or, when it cannot give either (no
   * worker answers, or it ended without a view), rebuilt from Temporal's records (order-read.ts).
   */
  async #viewOf(
    address: OrderAddress,
    handle: WorkflowHandle,
    description: WorkflowExecutionDescription,
    log: Logger,
    asked = false,
  ): Promise<OrderView> {
    if (this.#ownerOf(description) !== address.client) throw orderNotFound(address.ref);
    if (description.status.name === 'CONTINUED_AS_NEW') {
      throw new WorkflowNotFoundError('the run continued as new', description.workflowId, description.runId);
    }
    const read = await this.#reader.read(handle, description, address.ref, log, { asked });
    return this.#withIdentity(read, address, description);
  }

  /**
   * The workflow ID of the caller's own order, after the workflow itself confirmed the owner
   * (404 otherwise, as for any order the caller does not reach): for routes about an order that
   * only its owner may use, such as its webhook deliveries.
   */
  async ownOrder(caller: Caller, ref: string): Promise<string> {
    const address = { client: caller.id, ref };
    await this.#describeOwned(address);
    return this.workflowIdOf(address);
  }

  /** Newest accepted first, from Temporal visibility, only the orders the caller reaches: see order-list.ts. */
  list(caller: Caller, query: ListOrdersQuery): Promise<OrderList> {
    return this.#listing.list(caller, query);
  }

  /** Every order of the filter, a page at a time, each with its resumable position (order-list.ts). */
  scan(
    caller: Caller,
    query: Omit<ListOrdersQuery, 'pageSize' | 'pageToken'>,
    after?: string,
  ): AsyncGenerator<ScannedOrder[]> {
    return this.#listing.scan(caller, query, after);
  }

  /**
   * The order's story from its history, every run joined. Only for callers with audit:read (the
   * route's scope), which reaches every client's orders; the order must still be `address.client`'s,
   * as the workflow records it (404 otherwise). Secrets masked unless `reveal`.
   */
  async audit(
    address: OrderAddress,
    { reveal, by, log = this.#o.logger }: { reveal: boolean; by: Caller; log?: Logger },
  ): Promise<OrderAudit> {
    const description = await this.#describeOwned(address);
    // Recorded once the order is known to exist: a 404 revealed nothing.
    if (reveal) this.#reveals.record(by, address, 'audit', log);
    const { temporalUiUrl } = this.#identity(address);
    return auditOrder(this.#o.client, description, {
      ref: address.ref,
      client: address.client,
      reveal,
      ...(temporalUiUrl ? { temporalUiUrl } : {}),
      timed: (fn) => this.#timed(fn),
    });
  }

  /**
   * Puts an operator's decision to the order through its `decideReview` update, recorded under the
   * caller's client id (`decidedBy`, never from the body) with the body's `operator` (or the
   * client's name) as display name. `force` is an operator's (403 otherwise: assertMayForce). The
   * caller must reach the order (404 otherwise). The
   * workflow's validator rejects a malformed decision or an order not in review (nothing is
   * recorded); then the workflow asks the provider and applies the decision or refuses it, and
   * this answers with the outcome.
   *
   * A decision whose check outlasts `decisionTimeoutMs` is answered `pending` with the current
   * view: it was accepted and its outcome will be in the order's timeline.
   */
  async review(
    caller: Caller,
    address: OrderAddress,
    body: ReviewRequest,
    log: Logger = this.#o.logger,
  ): Promise<{ pending: boolean; view: OrderView }> {
    if (body.force) assertMayForce(caller, this.#o.clients.legacy);
    await this.view(caller, address, 'decide', log);
    const decision: ReviewDecision = {
      ...body,
      operator: body.operator ?? caller.name,
      decidedBy: caller.id,
    };
    const handle = this.#handle(address);
    let update;
    try {
      update = await this.#timed(() =>
        handle.startUpdate(decideReviewUpdate, {
          args: [decision],
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        }),
      );
    } catch (err) {
      // No running workflow: a closed order (409), or gone since it was read.
      if (err instanceof WorkflowNotFoundError) throw await this.#closedOrMissing(address);
      throw err;
    }
    const deadline = Date.now() + (this.#o.decisionTimeoutMs ?? this.#o.timeoutMs);
    try {
      const { outcome, refusal } = await this.#o.client.withDeadline(deadline, () => update.result());
      // The refusal quotes the provider's answer: free text, masked for an operator as the view is.
      const owner = caller.id === address.client;
      if (outcome === 'refused')
        throw refused(address.ref, owner || !refusal ? refusal : maskSecrets(refusal));
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) throw rejected(address.ref, err);
      if (!(err instanceof WorkflowUpdateRPCTimeoutOrCancelledError)) throw err;
      log.info({ ref: address.ref }, 'review decision accepted, still being checked against the provider');
      return { pending: true, view: await this.view(caller, address, 'decide', log) };
    }
    // The caller's view of it: owner, workflow ID and provider ref added, masked for an operator.
    return { pending: false, view: await this.view(caller, address, 'decide', log) };
  }

  async #closedOrMissing(address: OrderAddress): Promise<ApiError> {
    try {
      const description = await this.#timed(() => this.#handle(address).describe());
      const status = description.typedSearchAttributes.get(OrderStatusAttribute) ?? 'closed';
      return notInReview(address.ref, status);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return orderNotFound(address.ref);
      throw err;
    }
  }
}

/** The validator's rejection: a decision that does not fit the order, or an order not in review. */
function rejected(ref: string, err: WorkflowUpdateFailedError): unknown {
  const cause = err.cause;
  if (!(cause instanceof ApplicationFailure)) return err;
  const details = (cause.details?.[0] ?? {}) as { status?: string; errors?: FieldError[] };
  if (cause.type === DecisionRejection.notInReview)
    return notInReview(ref, details.status ?? 'not in review');
  if (cause.type === DecisionRejection.invalid) {
    return new ApiError('decision-invalid', `The decision cannot apply to order ${ref}: ${cause.message}.`, {
      errors: details.errors ?? [],
    });
  }
  return err;
}

/** The workflow's refusal, after asking the provider. */
function refused(ref: string, refusal: DecisionRefusal | undefined): ApiError {
  if (!refusal || refusal.kind === 'not-in-review') {
    return new ApiError(
      'order-not-in-review',
      `Order ${ref} was settled before this decision was taken: ${refusal?.reason ?? 'not in review'}.`,
    );
  }
  const extensions = {
    refusal: refusal.kind,
    ...(refusal.provider && { provider: refusal.provider }),
    forceable: refusal.forceable,
  };
  const said = refusal.provider ? ` (${refusal.provider.answer})` : '';
  if (refusal.kind === 'invalid') {
    return new ApiError(
      'decision-invalid',
      `The decision cannot apply to order ${ref}: ${refusal.reason}${said}.`,
      {
        extensions,
      },
    );
  }
  const force = refusal.forceable
    ? ' To apply it anyway, send it again with force: true and a note saying why.'
    : '';
  return new ApiError('decision-refused', `Decision refused: ${refusal.reason}${said}.${force}`, {
    extensions,
  });
}

function orderNotFound(ref: string): ApiError {
  return new ApiError('order-not-found', `No order with ref ${ref}.`);
}

function notInReview(ref: string, status: string): ApiError {
  return new ApiError(
    'order-not-in-review',
    `Order ${ref} is ${status}; only an order in NEEDS_REVIEW or DISPUTED takes a decision.`,
  );
}
