/**
 * Listing orders from Temporal visibility, newest accepted first, on every visibility store, and
 * only the orders the caller reaches (access.ts): filtered server-side on the OrderClient search
 * attribute, never after the fact.
 *
 * Why not just `ORDER BY`: SQL visibility (PostgreSQL, MySQL, SQLite — the dev server too) refuses
 * it and returns runs in its own fixed order, open runs first and closed ones by close time; and a
 * run's StartTime is not the acceptance time once an order continues as new. So each order carries
 * its acceptance time in the `AcceptedAt` search attribute, and a page is found by time windows:
 *
 * 1. count the orders accepted in the window [before − w, before] (w adapts: grown while the window
 *    holds fewer than a page, halved while it holds more than a bounded read);
 * 2. read that whole window (a bounded number of rows), sort it by (AcceptedAt, workflow ID)
 *    descending, drop what earlier pages returned, and answer the first `pageSize`;
 * 3. the page token remembers the last order's (AcceptedAt, workflow ID) — a keyset, so orders
 *    accepted while a client pages never shift or repeat a page — and the window that worked.
 *
 * A page usually costs two counts and one read. Summaries come from search attributes only — no
 * query to each workflow. Orders accepted before AcceptedAt existed carry none and are not listed.
 * Page tokens are sealed with a server key to the filter, caller's reach included (page-token.ts).
 *
 * Identical pages of one caller share one answer for a moment (read-cache.ts, API_READ_CACHE_MS):
 * the key is the caller, the filter (which holds its reach), the page size and the page token, so
 * readers asking the same page at once cost visibility one read, and no caller gets another's.
 */
import type { Client } from '@temporalio/client';
import type { Caller, ClientRegistry } from '../clients';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { z } from 'zod';
import {
  AcceptedAtAttribute,
  CompletedAtAttribute,
  OrderClientAttribute,
  OrderStatusAttribute,
  OrderTypeAttribute,
  parseOrderWorkflowId,
  type OrderStatus,
} from '../../contract/order';
import type { OrderType } from '../../contract/schemas';
import { LatestRuns, orderRunsClause, type OrderRun } from './latest-runs';
import { ApiError } from '../http';
import type { PageTokens } from './page-token';
import type { ListOrdersQuery, workflowStatuses } from '../http';
import type { Timed } from '../temporal';
import { ReadCache, readKey } from '../http';

export interface OrderSummaryView {
  ref: string;
  /** The owner; absent only for an order from before clients when no default client is configured. */
  client?: string;
  workflowId: string;
  type?: OrderType;
  status?: OrderStatus;
  workflowStatus: (typeof workflowStatuses)[number];
  acceptedAt: string;
  completedAt?: string;
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

/** Search attribute values arrive as json/plain payloads (older servers: a one-element list). */
function attributeValue(payload: Payload | undefined): string | undefined {
  if (!payload) return undefined;
  const value = defaultPayloadConverter.fromPayload<unknown>(payload);
  const first = Array.isArray(value) ? (value[0] as unknown) : value;
  return typeof first === 'string' ? first : undefined;
}

/** An order of a scan (the export): its summary, its listed run (its latest) and its position. */
export interface ScannedOrder {
  summary: OrderSummaryView;
  /** The run listed: the order's latest when it was listed. */
  runId: string;
  /** Resumes the scan after this order. */
  position: string;
}

export interface OrderList {
  orders: OrderSummaryView[];
  nextPageToken?: string;
}

/** The first window looks this far back from now; later pages start from the window that worked. */
const INITIAL_WINDOW_MS = 60_000;
/** A window is read whole: past this many orders it is narrowed first, so one page stays a bounded read. */
const MAX_WINDOW_ORDERS = 1_000;
/** Rows per visibility call when reading a window. */
const READ_BATCH = 1_000;
/** Orders per page of a scan (an export): the list's largest page. */
const SCAN_PAGE_SIZE = 100;
/** Search steps per page; the windows grow by 4× per step, so this spans any realistic history. */
const MAX_STEPS = 40;

/**
 * The latest instant a cursor may name: 9999-12-31T23:59:59.999Z, the last a four-digit-year
 * RFC 3339 timestamp (what visibility queries take) can write. Only this service makes tokens, but
 * a cursor is bounded all the same, so no token can ever make the list compute a date it cannot
 * write (a RangeError, a 500).
 */
const MAX_CURSOR_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** Where the previous page ended: the last order's acceptance time and workflow ID, and its window. */
const Cursor = z.strictObject({
  /** Epoch ms of the last order returned. */
  at: z.number().int().min(0).max(MAX_CURSOR_MS),
  /** Its workflow ID: orders accepted in the same millisecond are ordered by ID, descending. */
  id: z.string().max(200),
  /** The window that held that page, the starting guess for the next. */
  w: z.number().int().positive().max(MAX_CURSOR_MS),
});
type Cursor = z.infer<typeof Cursor>;

interface Row {
  acceptedAtMs: number;
  workflowId: string;
  raw: RawExecution;
}

export class OrderListing {
  readonly #client: Client;
  readonly #clients: ClientRegistry;
  readonly #timed: Timed;
  readonly #now: () => number;
  readonly #pageTokens: PageTokens;
  readonly #cache: ReadCache;

  constructor(
    client: Client,
    clients: ClientRegistry,
    timed: Timed,
    pageTokens: PageTokens,
    now: () => number = Date.now,
    /** Shares identical pages of one caller for a moment (read-cache.ts); default: none. */
    cache: ReadCache = new ReadCache({ ttlMs: 0 }),
  ) {
    this.#client = client;
    this.#clients = clients;
    this.#timed = timed;
    this.#pageTokens = pageTokens;
    this.#now = now;
    this.#cache = cache;
  }

  async list(caller: Caller, query: ListOrdersQuery): Promise<OrderList> {
    const filter = this.#filterOf(caller, query);
    // The filter seals the token: a token of one client's list cannot page through another's.
    const cursor = query.pageToken ? this.#openPageToken(query.pageToken, filter) : undefined;

    // The answer depends on the filter, the page size and the cursor alone (a first page's start
    // only guides the search: the filter bounds it), so those and the caller are the key.
    return this.#cache.get(readKey('list', caller.id, filter, query.pageSize, query.pageToken), async () => {
      // A first page with acceptedTo starts its search there, not at now (the filter bounds it anyway).
      const start = Math.min(this.#now(), query.acceptedTo?.getTime() ?? Number.POSITIVE_INFINITY);
      const page = await this.#page(filter, query.pageSize, cursor, start);
      const defaultClient = this.#clients.defaultClientId;
      return {
        orders: page.rows.map((row) => toSummary(row, defaultClient)),
        ...(page.next
          ? { nextPageToken: this.#pageTokens.seal(Buffer.from(JSON.stringify(page.next)), filter) }
          : {}),
      };
    });
  }

  /**
   * Every order of the filter in the list's order, a page at a time (constant memory), each with
   * its position: a token sealed to this scan's filter that resumes the scan after that order
   * (`after`). Positions are not page tokens: a list refuses them, and a scan refuses page tokens.
   */
  async *scan(
    caller: Caller,
    query: Omit<ListOrdersQuery, 'pageSize' | 'pageToken'>,
    after?: string,
  ): AsyncGenerator<ScannedOrder[]> {
    const filter = this.#filterOf(caller, query);
    const sealedTo = `scan\0${filter}`;
    let cursor: Cursor | undefined;
    if (after !== undefined) {
      const raw = this.#pageTokens.open(after, sealedTo);
      cursor = raw ? parseCursor(raw) : undefined;
      if (!cursor) {
        throw new ApiError('validation-error', 'Invalid request: after', {
          errors: [{ field: 'after', message: 'not a position of this export (same filters, same caller)' }],
        });
      }
    }
    const start = Math.min(this.#now(), query.acceptedTo?.getTime() ?? Number.POSITIVE_INFINITY);
    const defaultClient = this.#clients.defaultClientId;
    for (;;) {
      const from = cursor;
      // Shared with its summaries and positions made: readers of the same page only take them.
      const page = await this.#cache.get(
        readKey('scan', caller.id, filter, JSON.stringify(from ?? null)),
        async () => {
          const read = await this.#page(filter, SCAN_PAGE_SIZE, from, start);
          return {
            next: read.next,
            orders: read.rows.map((row): ScannedOrder => ({
              summary: toSummary(row, defaultClient),
              runId: row.raw.execution?.runId ?? '',
              position: this.#pageTokens.seal(
                Buffer.from(JSON.stringify({ at: row.acceptedAtMs, id: row.workflowId, w: read.w })),
                sealedTo,
              ),
            })),
          };
        },
      );
      yield page.orders;
      if (!page.next) return;
      cursor = page.next;
    }
  }

  #filterOf(caller: Caller, query: Omit<ListOrdersQuery, 'pageSize' | 'pageToken'>): string {
    // Values come from zod enums and patterns, so they are safe inside the visibility query. A run
    // that continued as new is the same order as its successor: list the order once.
    const clauses = [orderRunsClause()];
    const reach = this.#reachClause(caller, query.client);
    if (reach) clauses.push(reach);
    if (query.status) clauses.push(`${OrderStatusAttribute.name} = '${query.status}'`);
    if (query.type) clauses.push(`${OrderTypeAttribute.name} = '${query.type}'`);
    clauses.push(...rangeClauses(query));
    return clauses.join(' AND ');
  }

  /** The cursor of a token this service sealed for this list; a 400 naming pageToken otherwise. */
  #openPageToken(token: string, filter: string): Cursor {
    const raw = this.#pageTokens.open(token, filter);
    const cursor = raw ? parseCursor(raw) : undefined;
    if (!cursor) {
      throw new ApiError('validation-error', 'Invalid request: pageToken', {
        errors: [
          {
            field: 'pageToken',
            message: 'not a nextPageToken of this list (same status, type and client filters, same caller)',
          },
        ],
      });
    }
    return cursor;
  }

  #ownedBy(client: string): string {
    return ownedByClause(client, this.#clients.defaultClientId);
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
    // The operators' queue: orders waiting for a decision, whether in review or disputed after one.
    const inReview = `${OrderStatusAttribute.name} IN ('NEEDS_REVIEW', 'DISPUTED')`;
    if (client === undefined || client === caller.id) {
      if (client === undefined && caller.scopes.has('audit:read')) return undefined;
      if (client === undefined && caller.operator) return `(${this.#ownedBy(caller.id)} OR ${inReview})`;
      return this.#ownedBy(caller.id);
    }
    if (caller.scopes.has('audit:read')) return this.#ownedBy(client);
    if (caller.operator) return `${this.#ownedBy(client)} AND ${inReview}`;
    throw clientNotFound(client);
  }

  async #page(
    filter: string,
    pageSize: number,
    cursor: Cursor | undefined,
    start: number,
  ): Promise<{ rows: Row[]; next?: Cursor; w: number }> {
    // Orders at the cursor's millisecond count too: those after its ID in our order are still due.
    const upper = cursor ? atOrBefore(AcceptedAtAttribute.name, cursor.at) : undefined;
    const anchor = cursor?.at ?? start;
    const inWindow = (w: number) =>
      [filter, `${AcceptedAtAttribute.name} >= '${iso(anchor - w)}'`, ...(upper ? [upper] : [])].join(
        ' AND ',
      );
    const olderThan = (w: number) => `${filter} AND ${AcceptedAtAttribute.name} < '${iso(anchor - w)}'`;

    // Find a window holding a page (or everything left) without reading more than a bounded number
    // of rows: grow it while it holds too few, narrow it while it holds too many.
    let w = Math.min(anchor, cursor?.w ?? INITIAL_WINDOW_MS);
    let tooFew = 0; // widest window known to hold less than a page
    let tooMany = Number.POSITIVE_INFINITY; // narrowest window known to hold more than MAX_WINDOW_ORDERS
    let rows: Row[] = [];
    let olderExist: boolean | undefined;
    for (let step = 0; step < MAX_STEPS; step++) {
      const count = await this.#count(inWindow(w));
      if (count > MAX_WINDOW_ORDERS && w - tooFew > 1) {
        tooMany = w;
        w = Math.floor((tooFew + w) / 2);
        continue;
      }
      // The cursor's own millisecond may hold orders already returned, so read before judging.
      rows =
        count >= pageSize
          ? (await this.#readAll(inWindow(w))).filter((r) => !cursor || isAfter(r, cursor))
          : [];
      if (rows.length >= pageSize) break;
      olderExist = (await this.#count(olderThan(w))) > 0;
      if (!olderExist) {
        if (count > 0 && count < pageSize) {
          rows = (await this.#readAll(inWindow(w))).filter((r) => !cursor || isAfter(r, cursor));
        }
        break;
      }
      tooFew = w;
      // Never before 1970: the widest window holds every order, and nothing is older than it.
      w = Math.min(anchor, Number.isFinite(tooMany) ? Math.max(w + 1, Math.floor((w + tooMany) / 2)) : w * 4);
    }

    rows.sort(newestFirst);
    const pageRows = rows.slice(0, pageEnd(rows, pageSize));
    const last = pageRows.at(-1);
    olderExist ??= rows.length <= pageRows.length ? (await this.#count(olderThan(w))) > 0 : true;
    const more = rows.length > pageRows.length || olderExist;
    return {
      // An order's earlier runs (reopened, reset, resumed) are not listed: the page goes on after them.
      rows: await LatestRuns.of(this.#client, pageRows.map(orderRun), this.#timed).then((latest) =>
        latest.map(({ row }) => row),
      ),
      w,
      ...(last && more ? { next: { at: last.acceptedAtMs, id: last.workflowId, w } } : {}),
    };
  }

  async #count(query: string): Promise<number> {
    const client = this.#client;
    const { count } = await this.#timed(() =>
      client.workflowService.countWorkflowExecutions({ namespace: client.options.namespace, query }),
    );
    return Number(count ?? 0);
  }

  async #readAll(query: string): Promise<Row[]> {
    const client = this.#client;
    const rows: Row[] = [];
    let nextPageToken: Uint8Array | undefined;
    do {
      const response = await this.#timed(() =>
        client.workflowService.listWorkflowExecutions({
          namespace: client.options.namespace,
          query,
          pageSize: READ_BATCH,
          nextPageToken,
        }),
      );
      for (const raw of response.executions ?? []) {
        const acceptedAt = attributeValue(raw.searchAttributes?.indexedFields?.[AcceptedAtAttribute.name]);
        const acceptedAtMs = acceptedAt ? Date.parse(acceptedAt) : NaN;
        if (Number.isFinite(acceptedAtMs)) {
          rows.push({ acceptedAtMs, workflowId: raw.execution?.workflowId ?? '', raw });
        }
      }
      nextPageToken = response.nextPageToken?.length ? response.nextPageToken : undefined;
    } while (nextPageToken && rows.length <= MAX_WINDOW_ORDERS * 2);
    return rows;
  }
}

/** The orders of `client`: the default client's include those from before clients existed. */
export function ownedByClause(client: string, defaultClientId: string | undefined): string {
  const owned = `${OrderClientAttribute.name} = '${client}'`;
  return client === defaultClientId ? `(${owned} OR ${OrderClientAttribute.name} IS NULL)` : owned;
}

/** The date ranges as visibility clauses, both bounds inclusive (validated: forwards, bounded span). */
export function rangeClauses(
  query: Pick<ListOrdersQuery, 'acceptedFrom' | 'acceptedTo' | 'completedFrom' | 'completedTo'>,
): string[] {
  const clauses: string[] = [];
  const range = (attribute: string, from: Date | undefined, to: Date | undefined) => {
    if (from) clauses.push(`${attribute} >= '${from.toISOString()}'`);
    if (to) clauses.push(atOrBefore(attribute, to.getTime()));
  };
  range(AcceptedAtAttribute.name, query.acceptedFrom, query.acceptedTo);
  range(CompletedAtAttribute.name, query.completedFrom, query.completedTo);
  return clauses;
}

/**
 * `attribute` at or before the millisecond `ms`, written as "before the next millisecond": SQLite
 * visibility (the dev server) answers `<=` and `=` on a Datetime as `<` — an order at exactly that
 * instant is missed — while `<` and `>=` are exact on every store.
 */
function atOrBefore(attribute: string, ms: number): string {
  // Capped so the bound stays a four-digit year (the last millisecond of 9999 holds no order).
  return `${attribute} < '${iso(Math.min(ms + 1, MAX_CURSOR_MS))}'`;
}

function clientNotFound(client: string): ApiError {
  return new ApiError('client-not-found', `No orders of client ${client} are visible to you.`);
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A row as LatestRuns checks it. */
function orderRun(row: Row): OrderRun & { row: Row } {
  return {
    workflowId: row.workflowId,
    runId: row.raw.execution?.runId ?? '',
    running:
      row.raw.status !== undefined &&
      row.raw.status !== null &&
      workflowStatusByCode[row.raw.status] === 'RUNNING',
    row,
  };
}

/**
 * Where a page of `sorted` rows ends: after `pageSize` rows, and after every further run of the
 * last row's order. An order's runs share its AcceptedAt and workflow ID — the cursor — so a page
 * cut between them would leave the order on no page: this one keeps only its latest run, which
 * lies past the cut, and the next page starts after the cursor, past all of them.
 */
function pageEnd(sorted: readonly Row[], pageSize: number): number {
  let end = Math.min(pageSize, sorted.length);
  const last = sorted[end - 1];
  while (last && end < sorted.length && newestFirst(sorted[end]!, last) === 0) end++;
  return end;
}

function newestFirst(a: Row, b: Row): number {
  return (
    b.acceptedAtMs - a.acceptedAtMs ||
    (a.workflowId < b.workflowId ? 1 : a.workflowId > b.workflowId ? -1 : 0)
  );
}

/** Comes after the cursor in the list's order (newest first, then workflow ID descending). */
function isAfter(row: Row, cursor: Cursor): boolean {
  return row.acceptedAtMs < cursor.at || (row.acceptedAtMs === cursor.at && row.workflowId < cursor.id);
}

/** The cursor as JSON (it holds nothing the client did not see), within its bounds. */
function parseCursor(raw: Buffer): Cursor | undefined {
  try {
    const parsed = Cursor.safeParse(JSON.parse(raw.toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function toSummary({ raw, acceptedAtMs }: Row, defaultClient: string | undefined): OrderSummaryView {
  const fields = raw.searchAttributes?.indexedFields ?? {};
  const workflowId = raw.execution?.workflowId ?? '';
  const statusName = (raw.status && workflowStatusByCode[raw.status]) || 'UNKNOWN';
  const closedAt = timestampToIso(raw.closeTime);
  const client = attributeValue(fields[OrderClientAttribute.name]) ?? defaultClient;
  const completedAt = attributeValue(fields[CompletedAtAttribute.name]);
  return {
    ref: parseOrderWorkflowId(workflowId)?.ref ?? workflowId,
    ...(client ? { client } : {}),
    workflowId,
    type: attributeValue(fields[OrderTypeAttribute.name]) as OrderType | undefined,
    status: attributeValue(fields[OrderStatusAttribute.name]) as OrderStatus | undefined,
    workflowStatus: statusName,
    acceptedAt: iso(acceptedAtMs),
    ...(completedAt ? { completedAt: iso(Date.parse(completedAt)) } : {}),
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
