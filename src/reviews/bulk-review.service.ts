/**
 * POST /v1/reviews/bulk: one decision for every order in review a filter finds, run by the
 * bulk-review workflow (src/reviews/bulk-review.workflow.ts says why a workflow, not Temporal's batch
 * operations) and answered with one result per order.
 *
 * Reach is the single review route's (access.ts, purpose `decide`): a caller decides its own
 * orders, an operator every client's orders in review; a `client` the caller cannot decide for is
 * a 404. `force` is an operator's, as on the single route (access.ts assertMayForce). The filter
 * becomes a visibility query here — values from zod enums and patterns only.
 *
 * Idempotent by `bulkId` per caller: the workflow ID is `bulk-review:<caller>:<bulkId>`, so a
 * repeated request attaches to the run it started and answers its results (the way to collect a
 * bulk answered 202); the same bulkId with another request is a 409 `bulk-conflict`.
 */
import { createHash } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Caller, ClientRegistry } from '../clients';
import { ClientId } from '../clients';
import { OrderStatus, OrderType } from '../../contract/schemas';
import { reviewDecisions, reviewTextMaxLength } from '../../contract/review-decision';
import {
  decisionStatuses,
  OrderStatusAttribute,
  OrderTypeAttribute,
  ReviewSinceAttribute,
  workflowTypeByOrderType,
  type ReviewDecision,
} from '../../contract/order';
import {
  BULK_REVIEW_WORKFLOW,
  bulkReviewWorkflowId,
  type BulkReviewInput,
  type BulkReviewResult,
} from '../../contract/bulk-review';
import { maskSecrets } from '../audit';
import { assertMayForce } from '../orders';
import { ApiError } from '../http';
import { ownedByClause } from '../orders';
import { grpcCode, GrpcStatus } from '../temporal';

/** Orders one bulk decides at most: its workflow's history stays far below Temporal's limits. */
export const BULK_REVIEW_MAX_ORDERS = 1_000;
/**
 * Decisions in flight at once. Each is an order's provider check: a few at a time leave the
 * provider's rate limit to the orders' own work.
 */
export const BULK_REVIEW_CONCURRENCY = 8;

/** Text the bulk adds to each decision's note, so each order's history names its bulk. */
const bulkNote = (note: string, bulkId: string) => `${note} (bulk ${bulkId})`;
const BULK_ID_MAX = 64;
/** The note leaves room for the bulk tag within the decision's note limit. */
const NOTE_MAX = reviewTextMaxLength.note - BULK_ID_MAX - ' (bulk )'.length;

const Blank = /\S/;

export const BulkReviewRequest = z
  .strictObject({
    bulkId: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/, 'expected 1–64 letters, digits, ".", "_" or "-"')
      .meta({
        description:
          'Your ID for this bulk decision: sending it again answers the same bulk (its results once done) ' +
          'and decides nothing twice.',
        example: 'outage-2026-11-26',
      }),
    filter: z
      .strictObject({
        status: OrderStatus.refine((s) => decisionStatuses.includes(s), {
          message: `expected a status that takes decisions: ${decisionStatuses.join(', ')}`,
        })
          .optional()
          .meta({
            description: `Default: every status that takes decisions (${decisionStatuses.join(', ')}).`,
          }),
        client: ClientId.optional().meta({
          description:
            'Only this client’s orders (an operator’s default: every client’s; anyone else’s: their own).',
        }),
        type: OrderType.optional(),
        reason: z
          .string()
          .max(200)
          .regex(Blank, 'must not be blank')
          .optional()
          .meta({ description: 'Only orders whose review reason contains this text (case-insensitive).' }),
        inReviewSinceBefore: z.iso
          .datetime({ offset: true })
          .optional()
          .meta({ description: 'Only orders in review since before this time (their ReviewSince).' }),
      })
      .default({}),
    decision: z.enum(reviewDecisions),
    operator: z
      .string()
      .max(reviewTextMaxLength.operator)
      .regex(Blank, 'must not be blank')
      .trim()
      .optional()
      .meta({ description: 'Display name of the person deciding; default: the client’s name.' }),
    note: z
      .string()
      .max(NOTE_MAX)
      .regex(Blank, 'must not be blank')
      .trim()
      .meta({ description: 'Why: kept in each order’s history with the bulk ID.' }),
    force: z
      .boolean()
      .optional()
      .meta({
        description:
          'As on the single review route: FULFILLED or REFUNDED only, applied past a refusal; a client with ' +
          'the operator role only (403 naming `force` otherwise).',
      }),
  })
  .refine((value) => !(value.force === true && value.decision === 'RECHECK'), {
    path: ['force'],
    message: 'force applies to FULFILLED or REFUNDED, not RECHECK',
  })
  .meta({
    id: 'BulkReviewRequest',
    examples: [
      {
        bulkId: 'outage-2026-11-26',
        filter: { status: 'NEEDS_REVIEW' },
        decision: 'RECHECK',
        note: 'after the provider outage',
      },
    ],
  });
export type BulkReviewRequest = z.infer<typeof BulkReviewRequest>;

const BulkReviewItem = z.object({
  ref: z.string(),
  client: z.string().optional(),
  workflowId: z.string(),
  outcome: z.enum(['applied', 'rechecked', 'resumed', 'refused', 'rejected', 'not-found']).meta({
    description:
      'As the single route would answer: applied / rechecked / resumed (200 there), refused (409 ' +
      'decision-refused there: see refusal), rejected (no longer in review, or the decision cannot ' +
      'apply), not-found (the order is no longer running).',
  }),
  status: OrderStatus.optional(),
  reason: z.string().optional(),
  refusal: z
    .object({
      kind: z.string(),
      reason: z.string(),
      provider: z.object({ status: z.string().optional(), answer: z.string() }).optional(),
      forceable: z.boolean(),
    })
    .optional(),
});

export const BulkReviewAnswer = z
  .object({
    bulkId: z.string(),
    state: z.enum(['done', 'running']).meta({
      description: 'running: still deciding (202); send the same request again to collect the results.',
    }),
    matched: z.number().int().optional(),
    truncated: z.boolean().optional().meta({
      description: 'More orders matched than one bulk decides: decide the rest with another bulkId.',
    }),
    results: z.array(BulkReviewItem).optional(),
  })
  .meta({ id: 'BulkReviewAnswer' });
export type BulkReviewAnswer = z.infer<typeof BulkReviewAnswer>;

export interface BulkReviewOptions {
  client: Client;
  /** The orders' task queue: the bulk workflow runs on the order workers. */
  taskQueue: string;
  clients: ClientRegistry;
  /** How long a request waits for the bulk to finish before answering 202 `running`. */
  waitMs: number;
  /** Orders one bulk decides at most. */
  maxOrders: number;
  /** Decisions in flight at once. */
  concurrency: number;
  logger: Logger;
}

export class BulkReviewService {
  readonly #o: BulkReviewOptions;

  constructor(options: BulkReviewOptions) {
    this.#o = options;
  }

  /**
   * Starts the bulk (or attaches to the one this bulkId started) and waits for its results, at most
   * `waitMs`. With `signal` aborted (the caller is gone) a bulk not yet started is not started. One
   * that started runs to its end whether anyone waits; the wait goes on as it would for a caller
   * who stayed, so the caller's in-flight slot stays taken while its bulk decides (limits.ts).
   */
  async decide(
    caller: Caller,
    body: BulkReviewRequest,
    log: Logger = this.#o.logger,
    signal?: AbortSignal,
  ): Promise<BulkReviewAnswer> {
    if (body.force) assertMayForce(caller, this.#o.clients.legacy);
    const query = this.#query(caller, body.filter);
    const decision: ReviewDecision = {
      decision: body.decision,
      operator: body.operator ?? caller.name,
      note: bulkNote(body.note, body.bulkId),
      decidedBy: caller.id,
      ...(body.force !== undefined ? { force: body.force } : {}),
    };
    const input: BulkReviewInput = {
      bulkId: body.bulkId,
      query,
      ...(body.filter.reason ? { reason: body.filter.reason } : {}),
      decision,
      maxOrders: this.#o.maxOrders,
      concurrency: this.#o.concurrency,
    };
    const hash = createHash('sha256').update(JSON.stringify(body)).digest('base64url');
    signal?.throwIfAborted();
    const handle = await this.#startOrAttach(caller, input, hash);
    try {
      const result = await this.#o.client.withDeadline(Date.now() + this.#o.waitMs, () => handle.result());
      return {
        state: 'done',
        ...result,
        results: result.results.map((item) => this.#asSeenBy(caller, item)),
      };
    } catch (err) {
      if (grpcCode(err) !== GrpcStatus.DEADLINE_EXCEEDED) throw err;
      // The wait is over and the bulk is still deciding.
      log.info({ bulkId: body.bulkId }, 'bulk decision still running');
      return { bulkId: body.bulkId, state: 'running' };
    }
  }

  async #startOrAttach(
    caller: Caller,
    input: BulkReviewInput,
    hash: string,
  ): Promise<WorkflowHandle<(input: BulkReviewInput) => Promise<BulkReviewResult>>> {
    const workflowId = bulkReviewWorkflowId(caller.id, input.bulkId);
    try {
      return await this.#o.client.workflow.start<(input: BulkReviewInput) => Promise<BulkReviewResult>>(
        BULK_REVIEW_WORKFLOW,
        {
          workflowId,
          taskQueue: this.#o.taskQueue,
          args: [input],
          memo: { requestHash: hash },
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          workflowIdConflictPolicy: 'FAIL',
        },
      );
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
    const handle =
      this.#o.client.workflow.getHandle<(input: BulkReviewInput) => Promise<BulkReviewResult>>(workflowId);
    const { memo } = await handle.describe();
    if (memo?.requestHash !== hash) {
      throw new ApiError(
        'bulk-conflict',
        `Bulk ${input.bulkId} was already sent with another filter or decision; use a new bulkId.`,
      );
    }
    return handle;
  }

  /**
   * A result as the caller may read it: an operator's results for other clients' orders are masked
   * as their views are (src/audit/mask.ts): a refusal quotes the provider's answer, free text.
   */
  #asSeenBy<I extends BulkReviewResult['results'][number]>(caller: Caller, item: I): I {
    const owner = item.client ?? this.#o.clients.defaultClientId;
    return owner === caller.id ? item : maskSecrets(item);
  }

  /** The filter as a visibility query, within the caller's reach (as the single route's `decide`). */
  #query(caller: Caller, filter: BulkReviewRequest['filter']): string {
    const types = Object.values(workflowTypeByOrderType).map((t) => `'${t}'`);
    const statuses = (filter.status ? [filter.status] : decisionStatuses).map((s) => `'${s}'`);
    // The orders of this deployment's task queue, as the sweep takes them: another fleet's orders
    // in the namespace are checked against its own provider.
    const clauses = [
      `TaskQueue = '${this.#o.taskQueue}'`,
      `WorkflowType IN (${types.join(', ')})`,
      `ExecutionStatus = 'Running'`,
      `${OrderStatusAttribute.name} IN (${statuses.join(', ')})`,
    ];
    const reach = this.#reach(caller, filter.client);
    if (reach) clauses.push(reach);
    if (filter.type) clauses.push(`${OrderTypeAttribute.name} = '${filter.type}'`);
    if (filter.inReviewSinceBefore) {
      clauses.push(`${ReviewSinceAttribute.name} < '${new Date(filter.inReviewSinceBefore).toISOString()}'`);
    }
    return clauses.join(' AND ');
  }

  #reach(caller: Caller, client: string | undefined): string | undefined {
    const { clients } = this.#o;
    if (clients.legacy) {
      if (client === undefined || client === caller.id) return undefined;
      throw clientNotFound(client);
    }
    if (client !== undefined && client !== caller.id && !caller.operator) throw clientNotFound(client);
    if (client !== undefined) return ownedByClause(client, clients.defaultClientId);
    return caller.operator ? undefined : ownedByClause(caller.id, clients.defaultClientId);
  }
}

function clientNotFound(client: string): ApiError {
  return new ApiError('client-not-found', `No orders of client ${client} are yours to decide.`);
}
