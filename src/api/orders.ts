/**
 * What the order routes do with Temporal: start an order idempotently, read its view, list orders
 * from visibility (order-list.ts) and put a review decision to the order (a Workflow Update).
 * Routes stay thin; this module knows the workflow contract (workflows/contract.ts) and turns
 * Temporal's errors and the workflow's refusals into ApiErrors.
 */
import { createHash } from 'node:crypto';
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  WorkflowUpdateStage,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Logger } from 'pino';
import {
  decideReviewUpdate,
  DecisionRejection,
  OrderStatusAttribute,
  OrderTypeAttribute,
  orderWorkflowId,
  statusQuery,
  workflowTypeByOrderType,
  type DecisionRefusal,
  type OrderInput,
  type OrderTimings,
  type OrderView,
} from '../../workflows/contract';
import type { OrderRequest, OrderType, ReviewDecision, ReviewDecisionBody } from '../orders/schemas';
import { temporarilyUnavailable } from './error-handler';
import { ApiError, type FieldError } from './errors';
import { OrderListing, type OrderList } from './order-list';
import type { ListOrdersQuery } from './schemas';

export interface OrderServiceOptions {
  client: Client;
  taskQueue: string;
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
}

/** The memo key holding the hash of the order's canonical request (never the request: personal data). */
export const REQUEST_HASH_MEMO = 'requestHash';

/** JSON with sorted keys, so the same request always hashes the same whatever its key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** sha256 of the *parsed* request's canonical JSON: the idempotency fingerprint of an order. */
export function requestHash(request: OrderRequest): string {
  return createHash('sha256').update(canonicalJson(request)).digest('hex');
}

/** The view of an order just started: the workflow may not have run its first task yet. */
export function acceptedView(input: OrderInput): OrderView {
  const { request, acceptedAt } = input;
  return {
    ref: request.ref,
    type: request.type,
    status: 'ACCEPTED',
    request,
    acceptedAt,
    updatedAt: acceptedAt,
    timeline: [{ at: acceptedAt, status: 'ACCEPTED', event: 'Order accepted' }],
  };
}

/** A workflow result is trusted as a view only if it has a view's shape. */
function looksLikeView(value: unknown, ref: string): value is OrderView {
  const v = value as Partial<OrderView> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    v.ref === ref &&
    typeof v.status === 'string' &&
    Array.isArray(v.timeline)
  );
}

export class OrderService {
  readonly #o: OrderServiceOptions;
  readonly #listing: OrderListing;

  constructor(options: OrderServiceOptions) {
    this.#o = options;
    this.#listing = new OrderListing(options.client, (fn) => this.#timed(fn));
  }

  /** Every Temporal call under one deadline; a missed deadline surfaces as a gRPC error (→ 503). */
  #timed<T>(fn: () => Promise<T>): Promise<T> {
    return this.#o.client.withDeadline(Date.now() + this.#o.timeoutMs, fn);
  }

  #handle(ref: string): WorkflowHandle {
    return this.#o.client.workflow.getHandle(orderWorkflowId(ref));
  }

  /**
   * Starts the order's workflow, or finds the one this ref already started. The workflow ID is the
   * idempotency key: Temporal refuses a second workflow with the same ID (REJECT_DUPLICATE for
   * closed ones, FAIL for a running one), so concurrent submissions start exactly one.
   */
  async submit(
    request: OrderRequest,
    log: Logger = this.#o.logger,
  ): Promise<{ created: boolean; view: OrderView }> {
    const hash = requestHash(request);
    const input: OrderInput = {
      request,
      acceptedAt: this.#o.clock().toISOString(),
      timings: this.#o.timingsFor(request.type),
    };
    try {
      await this.#timed(() =>
        this.#o.client.workflow.start(workflowTypeByOrderType[request.type], {
          workflowId: orderWorkflowId(request.ref),
          taskQueue: this.#o.taskQueue,
          args: [input],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          workflowIdConflictPolicy: 'FAIL',
          memo: { [REQUEST_HASH_MEMO]: hash },
          typedSearchAttributes: [
            { key: OrderTypeAttribute, value: request.type },
            { key: OrderStatusAttribute, value: 'ACCEPTED' },
          ],
        }),
      );
      return { created: true, view: acceptedView(input) };
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }

    const description = await this.#timed(() => this.#handle(request.ref).describe());
    if (description.memo?.[REQUEST_HASH_MEMO] !== hash) {
      throw new ApiError(
        'ref-conflict',
        `An order with ref ${request.ref} exists with a different request; use a new ref for a new order.`,
      );
    }
    try {
      return { created: false, view: await this.view(request.ref, log) };
    } catch (err) {
      if (!(err instanceof ApiError && err.key === 'temporarily-unavailable')) throw err;
      // No worker answers the status query right now (all restarting, say). The order exists and
      // is this very request, so a repeat still gets its 200 with what Temporal itself knows.
      const status = description.typedSearchAttributes.get(OrderStatusAttribute) as
        OrderView['status'] | undefined;
      const accepted = acceptedView({ ...input, acceptedAt: description.startTime.toISOString() });
      return { created: false, view: { ...accepted, status: status ?? accepted.status } };
    }
  }

  /**
   * The order's current view from the workflow's `status` query. A closed workflow answers the
   * query too while a worker runs; without one, a completed workflow's result is its final view.
   * `log` is the request's logger, so what goes wrong is logged with the request ID.
   */
  async view(ref: string, log: Logger = this.#o.logger): Promise<OrderView> {
    const handle = this.#handle(ref);
    let queryError: unknown;
    try {
      return await this.#timed(() => handle.query(statusQuery));
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw orderNotFound(ref);
      queryError = err;
    }
    try {
      const description = await this.#timed(() => handle.describe());
      if (description.status.name === 'COMPLETED') {
        const result: unknown = await this.#timed(() => handle.result());
        if (looksLikeView(result, ref)) return result;
      }
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw orderNotFound(ref);
      log.warn({ err, ref }, 'order view: fallback to the workflow result failed');
    }
    log.warn({ err: queryError, ref }, 'order view: status query failed');
    throw temporarilyUnavailable(
      'The order exists but its status cannot be read right now; retry later.',
      queryError,
    );
  }

  /** Newest first, from Temporal visibility: see order-list.ts. */
  list(query: ListOrdersQuery): Promise<OrderList> {
    return this.#listing.list(query);
  }

  /**
   * Puts an operator's decision to the order through its `decideReview` update. The workflow's
   * validator rejects a malformed decision or an order not in review (nothing is recorded); then
   * the workflow asks the provider and applies the decision or refuses it, and this answers with
   * the outcome. `decidedBy` is the authenticated caller, set by the route, never by the body.
   *
   * A decision whose check outlasts `decisionTimeoutMs` is answered `pending` with the current
   * view: it was accepted and its outcome will be in the order's timeline.
   */
  async review(
    ref: string,
    body: ReviewDecisionBody,
    { decidedBy }: { decidedBy?: string } = {},
    log: Logger = this.#o.logger,
  ): Promise<{ pending: boolean; view: OrderView }> {
    const decision: ReviewDecision = { ...body, ...(decidedBy !== undefined && { decidedBy }) };
    const handle = this.#handle(ref);
    let update;
    try {
      update = await this.#timed(() =>
        handle.startUpdate(decideReviewUpdate, {
          args: [decision],
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        }),
      );
    } catch (err) {
      // No running workflow: none at all (404), or a closed order (409).
      if (err instanceof WorkflowNotFoundError) throw await this.#closedOrMissing(ref);
      throw err;
    }
    const deadline = Date.now() + (this.#o.decisionTimeoutMs ?? this.#o.timeoutMs);
    try {
      const { outcome, refusal, view } = await this.#o.client.withDeadline(deadline, () => update.result());
      if (outcome === 'refused') throw refused(ref, refusal);
      return { pending: false, view };
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) throw rejected(ref, err);
      if (!(err instanceof WorkflowUpdateRPCTimeoutOrCancelledError)) throw err;
      log.info({ ref }, 'review decision accepted, still being checked against the provider');
      return { pending: true, view: await this.view(ref, log) };
    }
  }

  async #closedOrMissing(ref: string): Promise<ApiError> {
    try {
      const description = await this.#timed(() => this.#handle(ref).describe());
      const status = description.typedSearchAttributes.get(OrderStatusAttribute) ?? 'closed';
      return notInReview(ref, status);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return orderNotFound(ref);
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
