/**
 * Listing orders from Temporal visibility: the query built from the filters, real Temporal page
 * tokens (sealed, see below) and one summary per workflow from its search attributes — no query
 * to each workflow, so a page of 100 costs one visibility call.
 */
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import {
  OrderStatusAttribute,
  OrderTypeAttribute,
  orderWorkflowId,
  workflowTypeByOrderType,
  type OrderStatus,
} from '../../workflows/contract';
import type { OrderType } from '../orders/schemas';
import { grpcCode } from './error-handler';
import { ApiError } from './errors';
import type { ListOrdersQuery, workflowStatuses } from './schemas';

export interface OrderSummaryView {
  ref: string;
  type?: OrderType;
  status?: OrderStatus;
  workflowStatus: (typeof workflowStatuses)[number];
  acceptedAt: string;
  closedAt?: string;
}

type RawExecution = NonNullable<
  Awaited<ReturnType<Client['workflowService']['listWorkflowExecutions']>>['executions']
>[number];

interface Timestamp {
  seconds?: number | { toNumber(): number } | null;
  nanos?: number | null;
}

function timestampToIso(ts: Timestamp | null | undefined): string | undefined {
  if (!ts) return undefined;
  const seconds = typeof ts.seconds === 'number' ? ts.seconds : (ts.seconds?.toNumber() ?? 0);
  return new Date(seconds * 1_000 + Math.floor((ts.nanos ?? 0) / 1e6)).toISOString();
}

/** Keyword search attributes arrive as json/plain payloads (older servers: a one-element list). */
function keyword(payload: Payload | undefined): string | undefined {
  if (!payload) return undefined;
  const value = defaultPayloadConverter.fromPayload<unknown>(payload);
  const first = Array.isArray(value) ? (value[0] as unknown) : value;
  return typeof first === 'string' ? first : undefined;
}

export interface OrderList {
  orders: OrderSummaryView[];
  nextPageToken?: string;
}

const ORDER_WORKFLOW_ID_PREFIX = orderWorkflowId('');

type Timed = <T>(fn: () => Promise<T>) => Promise<T>;

export class OrderListing {
  readonly #client: Client;
  readonly #timed: Timed;
  #orderBySupported = true;

  constructor(client: Client, timed: Timed) {
    this.#client = client;
    this.#timed = timed;
  }

  /**
   * Newest first, from Temporal visibility (the OrderType / OrderStatus search attributes).
   * Elasticsearch visibility sorts by `ORDER BY StartTime DESC`; SQL visibility (the dev server,
   * SQLite / PostgreSQL / MySQL) refuses ORDER BY and has its own fixed order: running orders
   * first, newest first, then closed ones by close time, newest first. We ask for the explicit
   * order and fall back, once per process, when the store refuses it.
   */
  async list(query: ListOrdersQuery): Promise<OrderList> {
    const types = Object.values(workflowTypeByOrderType).map((t) => `'${t}'`);
    // Values come from zod enums, so they are safe inside the visibility query.
    const clauses = [`WorkflowType IN (${types.join(', ')})`];
    if (query.status) clauses.push(`${OrderStatusAttribute.name} = '${query.status}'`);
    if (query.type) clauses.push(`${OrderTypeAttribute.name} = '${query.type}'`);
    const filter = clauses.join(' AND ');
    const nextPageToken = query.pageToken ? openPageToken(query.pageToken, filter) : undefined;

    const response = await this.#listExecutions(filter, query.pageSize, nextPageToken);
    const token = response.nextPageToken;
    return {
      orders: (response.executions ?? []).map(toSummary),
      ...(token && token.length > 0 ? { nextPageToken: sealPageToken(token, filter) } : {}),
    };
  }

  async #listExecutions(filter: string, pageSize: number, nextPageToken: Uint8Array | undefined) {
    const client = this.#client;
    const call = (query: string) =>
      this.#timed(() =>
        client.workflowService.listWorkflowExecutions({
          namespace: client.options.namespace,
          query,
          pageSize,
          nextPageToken,
        }),
      );
    if (this.#orderBySupported) {
      try {
        return await call(`${filter} ORDER BY StartTime DESC`);
      } catch (err) {
        // INVALID_ARGUMENT "operation is not supported: 'order by' clause": SQL visibility.
        if (!(grpcCode(err) === 3 && /order by/i.test(String((err as Error).message)))) throw err;
        this.#orderBySupported = false;
      }
    }
    return call(filter);
  }
}

/**
 * Page tokens: Temporal's token, prefixed with a checksum over the token and the list's filter.
 * Temporal answers a corrupted token with a retryable UNKNOWN error (so a typo would end in a 503
 * after the deadline), and a token used with other filters would page through the wrong list;
 * the checksum turns both into a 400 before Temporal is asked.
 */
const PAGE_TOKEN_CHECKSUM_BYTES = 8;

function pageTokenChecksum(raw: Uint8Array, filter: string): Buffer {
  return createHash('sha256').update(filter).update(raw).digest().subarray(0, PAGE_TOKEN_CHECKSUM_BYTES);
}

function sealPageToken(raw: Uint8Array, filter: string): string {
  return Buffer.concat([pageTokenChecksum(raw, filter), raw]).toString('base64url');
}

function openPageToken(token: string, filter: string): Uint8Array {
  const sealed = Buffer.from(token, 'base64url');
  const raw = sealed.subarray(PAGE_TOKEN_CHECKSUM_BYTES);
  if (
    raw.length === 0 ||
    !pageTokenChecksum(raw, filter).equals(sealed.subarray(0, PAGE_TOKEN_CHECKSUM_BYTES))
  ) {
    throw new ApiError('validation-error', 'Invalid request: pageToken', {
      errors: [
        { field: 'pageToken', message: 'not a nextPageToken of this list (same status and type filters)' },
      ],
    });
  }
  return raw;
}

function toSummary(raw: RawExecution): OrderSummaryView {
  const fields = raw.searchAttributes?.indexedFields ?? {};
  const workflowId = raw.execution?.workflowId ?? '';
  const statusName = (raw.status && workflowStatusByCode[raw.status]) || 'UNKNOWN';
  const closedAt = timestampToIso(raw.closeTime);
  return {
    ref: workflowId.startsWith(ORDER_WORKFLOW_ID_PREFIX)
      ? workflowId.slice(ORDER_WORKFLOW_ID_PREFIX.length)
      : workflowId,
    type: keyword(fields[OrderTypeAttribute.name]) as OrderType | undefined,
    status: keyword(fields[OrderStatusAttribute.name]) as OrderStatus | undefined,
    workflowStatus: statusName,
    acceptedAt: timestampToIso(raw.startTime) ?? new Date(0).toISOString(),
    ...(closedAt ? { closedAt } : {}),
  };
}

/** temporal.api.enums.v1.WorkflowExecutionStatus, named as the SDK names them. */
const workflowStatusByCode: Record<number, (typeof workflowStatuses)[number]> = {
  1: 'RUNNING',
  2: 'COMPLETED',
  3: 'FAILED',
  4: 'CANCELLED',
  5: 'TERMINATED',
  6: 'CONTINUED_AS_NEW',
  7: 'TIMED_OUT',
};
