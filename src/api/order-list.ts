/**
 * Listing orders from Temporal visibility: the query built from the filters and from what the
 * caller reaches (access.ts) — filtered server-side on the OrderClient search attribute, never
 * after the fact — real Temporal page tokens (sealed, see below) and one summary per workflow from
 * its search attributes: no query to each workflow, so a page of 100 costs one visibility call.
 */
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Caller, ClientRegistry } from '../clients/registry';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import {
  OrderClientAttribute,
  OrderStatusAttribute,
  OrderTypeAttribute,
  parseOrderWorkflowId,
  workflowTypeByOrderType,
  type OrderStatus,
} from '../../workflows/contract';
import type { OrderType } from '../orders/schemas';
import { grpcCode } from './error-handler';
import { ApiError } from './errors';
import type { ListOrdersQuery, workflowStatuses } from './schemas';

export interface OrderSummaryView {
  ref: string;
  /** The owner; absent only for an order from before clients when no default client is configured. */
  client?: string;
  workflowId: string;
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

type Timed = <T>(fn: () => Promise<T>) => Promise<T>;

export class OrderListing {
  readonly #client: Client;
  readonly #clients: ClientRegistry;
  readonly #timed: Timed;
  #orderBySupported = true;

  constructor(client: Client, clients: ClientRegistry, timed: Timed) {
    this.#client = client;
    this.#clients = clients;
    this.#timed = timed;
  }

  /**
   * Newest first, from Temporal visibility (the OrderType / OrderStatus / OrderClient search
   * attributes). Elasticsearch visibility sorts by `ORDER BY StartTime DESC`; SQL visibility (the
   * dev server, SQLite / PostgreSQL / MySQL) refuses ORDER BY and has its own fixed order: running
   * orders first, newest first, then closed ones by close time, newest first. We ask for the
   * explicit order and fall back, once per process, when the store refuses it.
   */
  async list(caller: Caller, query: ListOrdersQuery): Promise<OrderList> {
    const types = Object.values(workflowTypeByOrderType).map((t) => `'${t}'`);
    // Values come from zod enums and patterns, so they are safe inside the visibility query.
    const clauses = [`WorkflowType IN (${types.join(', ')})`];
    const reach = this.#reachClause(caller, query.client);
    if (reach) clauses.push(reach);
    if (query.status) clauses.push(`${OrderStatusAttribute.name} = '${query.status}'`);
    if (query.type) clauses.push(`${OrderTypeAttribute.name} = '${query.type}'`);
    const filter = clauses.join(' AND ');
    // The filter seals the token: a token of one client's list cannot page through another's.
    const nextPageToken = query.pageToken ? openPageToken(query.pageToken, filter) : undefined;

    const response = await this.#listExecutions(filter, query.pageSize, nextPageToken);
    const token = response.nextPageToken;
    const defaultClient = this.#clients.defaultClientId;
    return {
      orders: (response.executions ?? []).map((raw) => toSummary(raw, defaultClient)),
      ...(token && token.length > 0 ? { nextPageToken: sealPageToken(token, filter) } : {}),
    };
  }

  /** The orders of `client`: the default client's include those from before clients existed. */
  #ownedBy(client: string): string {
    const owned = `${OrderClientAttribute.name} = '${client}'`;
    return client === this.#clients.defaultClientId
      ? `(${owned} OR ${OrderClientAttribute.name} IS NULL)`
      : owned;
  }

  /**
   * What the caller may list (access.ts), as a visibility clause; undefined = every order. Without
   * `client`, everything the caller reaches; with it, that client's part of it — and for a caller
   * who reaches none of that client's orders a 404, whether the client exists or not.
   */
  #reachClause(caller: Caller, client: string | undefined): string | undefined {
    if (this.#clients.legacy) {
      // One client, and no OrderClient attribute to filter on (registry.ts): every order is its own.
      if (client === undefined || client === caller.id) return undefined;
      throw clientNotFound(client);
    }
    const inReview = `${OrderStatusAttribute.name} = 'NEEDS_REVIEW'`;
    if (client === undefined || client === caller.id) {
      if (client === undefined && caller.scopes.has('audit:read')) return undefined;
      if (client === undefined && caller.operator) return `(${this.#ownedBy(caller.id)} OR ${inReview})`;
      return this.#ownedBy(caller.id);
    }
    if (caller.scopes.has('audit:read')) return this.#ownedBy(client);
    if (caller.operator) return `${this.#ownedBy(client)} AND ${inReview}`;
    throw clientNotFound(client);
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

function clientNotFound(client: string): ApiError {
  return new ApiError('client-not-found', `No orders of client ${client} are visible to you.`);
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
        {
          field: 'pageToken',
          message: 'not a nextPageToken of this list (same status, type and client filters, same caller)',
        },
      ],
    });
  }
  return raw;
}

function toSummary(raw: RawExecution, defaultClient: string | undefined): OrderSummaryView {
  const fields = raw.searchAttributes?.indexedFields ?? {};
  const workflowId = raw.execution?.workflowId ?? '';
  const statusName = (raw.status && workflowStatusByCode[raw.status]) || 'UNKNOWN';
  const closedAt = timestampToIso(raw.closeTime);
  const client = keyword(fields[OrderClientAttribute.name]) ?? defaultClient;
  return {
    ref: parseOrderWorkflowId(workflowId)?.ref ?? workflowId,
    ...(client ? { client } : {}),
    workflowId,
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
