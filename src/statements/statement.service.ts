/**
 * GET /v1/statements?from=&to=: one client's books for a range — per day of completion (UTC), per
 * order type, per final status: orders and sums (mobile `amount`, internet `value`, gift cards'
 * cards by product and type) — and the orders still open counted apart, by status.
 *
 * Where the numbers come from (docs/operators.md "Statements and reconciliation"): Temporal
 * visibility, each order's final status (OrderStatus), completion time (CompletedAt), figures
 * (memo `figures`, set at intake: src/orders/figures.ts) and what the provider debited (DebitAmount;
 * a partial order's split in memo `settlement`). No history is read and no workflow is asked.
 *
 * Whole past days are not listed order by order: each client's closed orders of a day are summed
 * once and kept (src/statements/statement-days.ts), checked by one count before they are trusted, and
 * summed again when missing or out of date. What is left is listed live: the parts of days at the
 * range's ends, today, and the runs still open (a watch after a decision, orders not final yet).
 * Listing everything (`stored: false`) gives the same figures, slower.
 *
 * A kept day is a workflow start, so a statement's writing is bounded (issue 36: a year's
 * statements, abandoned at once, started thousands ahead of every client's batch orders): no day
 * before the client's first order in the range is kept (a client without orders, or asking for
 * years before it existed, costs one count), at most `maxStoredDays` days are written per
 * statement (the figures are complete all the same: the rest are summed, not kept, and a later
 * statement keeps them), an unknown client is a 404, and the work stops when the caller is gone.
 *
 * An order is counted once, by its workflow ID's latest run (src/orders/latest-runs.ts): a run an order has superseded (reopened by the reconciliation, reset, resumed)
 * stays in visibility and is left out, live and in the kept days.
 *
 * Which statuses are final and which are open comes from the contract (`finalStatuses`), so a
 * final status added later is summed, and an open one (a hold, a queue) is counted apart, unchanged.
 */
import { setMaxListeners } from 'node:events';
import type { Client } from '@temporalio/client';
import pLimit from 'p-limit';
import { z } from 'zod';
import type { Caller, ClientRegistry } from '../clients';
import { ClientId } from '../clients';
import { OrderStatus, OrderType } from '../../contract/schemas';
import { CompletedAtAttribute, finalStatuses, OrderStatusAttribute } from '../../contract/order';
import { NO_CLIENT_KEY, statementDayWorkflowId, type StatementDaySummary } from '../../contract/statement';
import { addRow, mergeLines, sortProducts, statementRow, type StatementRow } from './statement-lines';
import { dateOf, DAY_MS, finalStatusesClause, PAGE_SIZE, StatementDays } from './statement-days';
import { LatestRuns, orderRunsClause } from '../orders';
import { ApiError } from '../http';
import { ownedByClause, rangeClauses } from '../orders';
import { checkRange, MAX_RANGE_DAYS, RangeBound } from '../http';
import { ReadCache, readKey } from '../http';

export const StatementQuery = z
  .strictObject({
    from: RangeBound('Orders completed (or, for open ones, accepted) at or after this time. Required.'),
    to: RangeBound(`At or before this time; at most ${MAX_RANGE_DAYS} days after from. Required.`),
    client: ClientId.optional().meta({
      description: 'Whose statement: default yours; another client’s needs audit:read (404 otherwise).',
    }),
  })
  .superRefine((query, ctx) => checkRange(query, ctx, 'from', 'to', { required: true }));
export type StatementQuery = z.infer<typeof StatementQuery>;

const Sums = {
  orders: z.number().int(),
  amount: z
    .number()
    .int()
    .optional()
    .meta({ description: 'Mobile: dinars asked for (fixed plans: see unpriced).' }),
  unpriced: z.number().int().optional().meta({
    description: 'Mobile orders of a fixed plan, whose amount is the plan’s own (not in `amount`).',
  }),
  value: z.number().int().optional().meta({ description: 'Internet: dinars.' }),
  cards: z.number().int().optional().meta({ description: 'Gift cards: cards ordered.' }),
  products: z
    .array(
      z.object({
        productId: z.string(),
        typeId: z.string(),
        orders: z.number().int(),
        cards: z.number().int(),
      }),
    )
    .optional(),
  unknown: z
    .number()
    .int()
    .optional()
    .meta({ description: 'Orders accepted before figures were recorded: counted, not summed.' }),
  debited: z
    .number()
    .optional()
    .meta({
      description:
        'FULFILLED, PARTIALLY_FULFILLED, REFUNDED: DZD the provider debited for these orders, as each recorded it ' +
        'from the provider’s answer when it settled (top-ups: `balance_amount`; gift cards: `fulfilled_amount`, ' +
        'else the price per card × the cards delivered).',
    }),
  debitUnrecorded: z
    .number()
    .int()
    .optional()
    .meta({
      description:
        'Of those, orders with no debit recorded (not in `debited`): settled before debits were recorded, by an ' +
        'operator’s decision the provider did not confirm, or by an answer that gives none (internet top-ups).',
    }),
  partial: z
    .object({
      orders: z.number().int(),
      cardsOrdered: z.number().int(),
      cardsDelivered: z.number().int(),
      cardsRefunded: z.number().int(),
      deliveredAmount: z
        .number()
        .optional()
        .meta({ description: 'DZD, of the orders whose answer gave it.' }),
      refundedAmount: z.number().optional().meta({ description: 'DZD, of the orders whose answer gave it.' }),
    })
    .optional()
    .meta({ description: 'PARTIALLY_FULFILLED gift cards: what was delivered and what was refunded.' }),
};

export const Statement = z
  .object({
    client: z.string(),
    from: z.string(),
    to: z.string(),
    days: z.array(
      z.object({ date: z.string(), type: OrderType, status: OrderStatus, ...Sums }).meta({
        description: 'Orders that reached a final status that day (UTC).',
      }),
    ),
    open: z.array(z.object({ type: OrderType, status: OrderStatus, ...Sums })).meta({
      description:
        'Orders accepted by `to` that have no final status yet (in review, held, in flight), by status.',
    }),
  })
  .meta({ id: 'Statement' });
export type Statement = z.infer<typeof Statement>;
type Line = Omit<Statement['open'][number], 'type' | 'status'>;

/**
 * Listings of disjoint time slices read at once, each way (completed and open): one, as measured
 * on the dev server, where more did not answer sooner (docs/operators.md "Statements and
 * reconciliation"). More is for a visibility store that answers queries side by side.
 */
export const STATEMENT_SLICES = 1;

/**
 * A day is summed and kept only once it ended this long ago: visibility trails each change by a
 * moment, and an order that closed at the day's last second must be in its count.
 */
export const STORE_AFTER_MS = 10 * 60_000;

/** Kept days one statement writes at most (API_STATEMENT_DAYS_PER_REQUEST): a month's. */
export const MAX_STORED_DAYS = 31;

/** Listings of missing days' runs at once, per statement. */
const SUMS_AT_ONCE = 4;

export interface StatementOptions {
  /** Time slices of the live listings (STATEMENT_SLICES). */
  slices?: number;
  /**
   * Where kept days' workflows run (the orders' task queue). Without it every order is listed
   * (the slow path: what the kept days are tested against).
   */
  taskQueue?: string;
  now?: () => number;
  /**
   * LATER_RUNS_MARGIN_MS but in tests that seed orders of past days just before a statement: their
   * first runs started seconds ago, and within the margin they count as later runs.
   */
  laterRunsMarginMs?: number;
  /** Kept days one statement writes at most (MAX_STORED_DAYS). */
  maxStoredDays?: number;
  /**
   * How long the same caller's identical statements share one answer (read-cache.ts,
   * API_READ_CACHE_MS); default 0: each statement reads Temporal.
   */
  readCacheMs?: number;
}

/** Statements kept at most (read-cache.ts). */
const CACHED_STATEMENTS = 1_000;

type DayLine = Line & { date: string; type: string; status: string };
type OpenLine = Line & { type: string; status: string };

export class StatementService {
  readonly #client: Client;
  readonly #clients: ClientRegistry;
  readonly #slices: number;
  readonly #days: StatementDays | undefined;
  readonly #now: () => number;
  readonly #maxStoredDays: number;
  readonly #cache: ReadCache;

  constructor(client: Client, clients: ClientRegistry, options: StatementOptions = {}) {
    this.#client = client;
    this.#clients = clients;
    this.#slices = options.slices ?? STATEMENT_SLICES;
    this.#days =
      options.taskQueue === undefined
        ? undefined
        : new StatementDays(client, options.taskQueue, options.laterRunsMarginMs);
    this.#now = options.now ?? Date.now;
    this.#maxStoredDays = options.maxStoredDays ?? MAX_STORED_DAYS;
    this.#cache = new ReadCache({ ttlMs: options.readCacheMs ?? 0, maxEntries: CACHED_STATEMENTS });
  }

  /**
   * The statement. `signal`: the caller is gone (hung up, or its request's deadline answered for
   * it): every Temporal call in flight for it is cancelled and none is started, so an abandoned
   * statement stops its listings and writes within one call.
   *
   * The same caller's identical statements (same client, from and to) share one answer for a
   * moment (read-cache.ts): one read of Temporal for readers asking at once, stopped only once all
   * of them are gone.
   */
  async statement(caller: Caller, query: StatementQuery, signal?: AbortSignal): Promise<Statement> {
    // Who may read which client's statement is checked before anything is shared or read.
    this.#baseQuery(caller, query.client ?? caller.id);
    const key = readKey(
      'statement',
      caller.id,
      query.client ?? caller.id,
      iso(+query.from!),
      iso(+query.to!),
    );
    return this.#cache.get(
      key,
      (shared) => {
        // The SDK adds one listener per call to the signal (never removed): a statement makes hundreds.
        setMaxListeners(0, shared);
        return this.#client.withAbortSignal(shared, () => this.#statement(caller, query, shared));
      },
      signal,
    );
  }

  async #statement(caller: Caller, query: StatementQuery, signal?: AbortSignal): Promise<Statement> {
    const client = query.client ?? caller.id;
    const base = this.#baseQuery(caller, client);
    const from = query.from!;
    const to = query.to!;
    const days = new Map<string, DayLine>();
    const opens = new Map<string, OpenLine>();
    const addCompleted = (row: StatementRow) => {
      if (!row.completedAt) return;
      const date = row.completedAt.toISOString().slice(0, 10);
      const key = `${date}|${row.type}|${row.status}`;
      days.set(key, addRow(days.get(key) ?? { date, type: row.type, status: row.status, orders: 0 }, row));
    };
    const addOpen = (row: StatementRow) => {
      const key = `${row.type}|${row.status}`;
      opens.set(key, addRow(opens.get(key) ?? { type: row.type, status: row.status, orders: 0 }, row));
    };

    // Whole UTC days in the range that ended a while ago are kept (not in a legacy single-client deployment).
    const kept = this.#days && !this.#clients.legacy ? this.#keptSpan(from, to) : undefined;
    const limit = pLimit(2 * this.#slices);
    const each = (listing: string, take: (row: StatementRow) => void) =>
      limit(() => this.#each(listing, take, signal));
    const listings: Promise<void>[] = this.#openListings(base, from, to).map((listing) =>
      each(listing, addOpen),
    );
    if (!kept) {
      listings.push(...this.#completedListings(base, from, to).map((listing) => each(listing, addCompleted)));
    } else {
      // Live: the range's ends outside the kept days, and the runs still open in them.
      const live = [
        base,
        finalStatusesClause(),
        ...rangeClauses({ completedFrom: from, completedTo: to }),
        `(ExecutionStatus = 'Running' OR ${CompletedAtAttribute.name} < '${iso(kept.from)}' OR ` +
          `${CompletedAtAttribute.name} >= '${iso(kept.to)}')`,
      ].join(' AND ');
      listings.push(each(live, addCompleted));
      listings.push(
        this.#keptDays(client, kept, signal).then((summaries) => {
          for (const summary of summaries) {
            for (const { type, status, ...sums } of summary.lines) {
              const key = `${summary.date}|${type}|${status}`;
              const line = days.get(key) ?? { date: summary.date, type, status, orders: 0 };
              days.set(key, mergeLines(line, sums));
            }
          }
        }),
      );
    }
    await Promise.all(listings);

    const byKey = <T extends { type: string; status: string }>(
      a: T & { date?: string },
      b: T & { date?: string },
    ) =>
      (a.date ?? '').localeCompare(b.date ?? '') ||
      a.type.localeCompare(b.type) ||
      a.status.localeCompare(b.status);
    const sorted = <T extends Line & { type: string; status: string }>(lines: Iterable<T>) => {
      const all = [...lines].sort(byKey);
      all.forEach(sortProducts);
      return all;
    };
    return {
      client,
      from: from.toISOString(),
      to: to.toISOString(),
      days: sorted(days.values()) as Statement['days'],
      open: sorted(opens.values()) as Statement['open'],
    };
  }

  /** The whole UTC days of [from, to] that ended STORE_AFTER_MS ago or more; undefined if none. */
  #keptSpan(from: Date, to: Date): { from: number; to: number } | undefined {
    const start = Math.ceil(from.getTime() / DAY_MS) * DAY_MS;
    const end = Math.min(
      Math.floor((to.getTime() + 1) / DAY_MS) * DAY_MS,
      Math.floor((this.#now() - STORE_AFTER_MS) / DAY_MS) * DAY_MS,
    );
    return end > start ? { from: start, to: end } : undefined;
  }

  /**
   * The client's kept days of the span: read, each checked by a count, and those missing or out of
   * date summed again (one listing per run of consecutive days); of these, the days from the
   * client's first order in the span on are kept, `maxStoredDays` at most, oldest first.
   *
   * Why not before the first order: those days are empty, and keeping them is work anyone with
   * `orders:read` can ask for (a year of 1981 is 365 workflow starts), while listing them again
   * costs nothing — one listing of an empty run of days. The clients file records no creation
   * date, so the client's own orders set the floor; days after it that are empty are kept, since
   * their count is what tells a later statement nothing changed.
   */
  async #keptDays(
    client: string,
    span: { from: number; to: number },
    signal: AbortSignal | undefined,
  ): Promise<StatementDaySummary[]> {
    const store = this.#days!;
    const call = { signal };
    const keys = client === this.#clients.defaultClientId ? [client, NO_CLIENT_KEY] : [client];
    // No closed order in the span: nothing to read, sum or keep.
    if ((await store.closedRuns(keys, span.from, span.to, call)) === 0) return [];
    const dates: string[] = [];
    for (let day = span.from; day < span.to; day += DAY_MS) dates.push(dateOf(day));
    const stored = await store.stored(keys, dates, call);
    const valid = await store.stillValid([...stored.values()], call);
    const validIds = new Set(valid.map((s) => statementDayWorkflowId(s.key, s.date)));
    const limit = pLimit(SUMS_AT_ONCE);
    const summed = await Promise.all(
      keys.flatMap((key) =>
        missingRuns(dates, (date) => validIds.has(statementDayWorkflowId(key, date))).map(([first, last]) =>
          limit(() =>
            store.sum(Date.parse(`${first}T00:00:00Z`), Date.parse(`${last}T00:00:00Z`) + DAY_MS, key, call),
          ),
        ),
      ),
    );
    const fresh = summed.flat();
    const firstOrder = new Map<string, string>();
    for (const summary of [...valid, ...fresh]) {
      const first = firstOrder.get(summary.key);
      if (summary.orders > 0 && (first === undefined || summary.date < first))
        firstOrder.set(summary.key, summary.date);
    }
    const worthKeeping = fresh
      .filter((summary) => {
        const first = firstOrder.get(summary.key);
        return first !== undefined && summary.date >= first;
      })
      .sort((a, b) => a.date.localeCompare(b.date) || a.key.localeCompare(b.key));
    await store.store(worthKeeping, { ...call, max: this.#maxStoredDays });
    return [...valid, ...fresh];
  }

  #completedListings(base: string, from: Date, to: Date): string[] {
    return this.#slice(from, to).map(([sliceFrom, sliceTo]) =>
      [base, finalStatusesClause(), ...rangeClauses({ completedFrom: sliceFrom, completedTo: sliceTo })].join(
        ' AND ',
      ),
    );
  }

  #openListings(base: string, from: Date, to: Date): string[] {
    const finals = finalStatuses.map((s) => `'${s}'`).join(', ');
    // Sliced, open orders accepted before the range (a long review) have a slice of their own.
    const openSlices: (readonly [Date | undefined, Date])[] =
      this.#slices === 1
        ? [[undefined, to]]
        : [[undefined, new Date(from.getTime() - 1)], ...this.#slice(from, to)];
    return openSlices.map(([sliceFrom, sliceTo]) =>
      [
        base,
        `${OrderStatusAttribute.name} NOT IN (${finals})`,
        // Running: a closed run without a final status is stranded, and the sweep resumes it.
        `ExecutionStatus = 'Running'`,
        ...rangeClauses({ acceptedFrom: sliceFrom, acceptedTo: sliceTo }),
      ].join(' AND '),
    );
  }

  /** [from, to] cut into this.#slices disjoint ranges of equal length, each with its last millisecond. */
  #slice(from: Date, to: Date): [Date, Date][] {
    const step = Math.ceil((to.getTime() - from.getTime() + 1) / this.#slices);
    const slices: [Date, Date][] = [];
    for (let start = from.getTime(); start <= to.getTime(); start += step) {
      slices.push([new Date(start), new Date(Math.min(start + step - 1, to.getTime()))]);
    }
    return slices;
  }

  /**
   * The client's orders, within the caller's reach: its own, or with audit:read any client's that
   * the clients file names. Naming one it does not is a 404, as naming another client is without
   * audit:read: nothing is read or kept for a client that does not exist.
   */
  #baseQuery(caller: Caller, client: string): string {
    const clauses = [orderRunsClause()];
    if (client !== caller.id && !caller.scopes.has('audit:read')) throw clientNotFound(client);
    if (this.#clients.legacy) {
      if (client !== caller.id) throw clientNotFound(client);
    } else {
      // The caller itself is known: its key was found in the clients file.
      if (client !== caller.id && !this.#clients.client(client)) throw clientNotFound(client);
      clauses.push(ownedByClause(client, this.#clients.defaultClientId));
    }
    return clauses.join(' AND ');
  }

  /** Each order run the query lists that is its order's latest run (LatestRuns). */
  async #each(query: string, take: (row: StatementRow) => void, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const latest = new LatestRuns(this.#client, take);
    for await (const execution of this.#client.workflow.list({ query, pageSize: PAGE_SIZE })) {
      signal?.throwIfAborted();
      const row = statementRow(execution);
      if (row) await latest.add(row);
    }
    await latest.flush();
  }
}

/** Runs of consecutive dates (first and last of each) that are not `present`. */
function missingRuns(dates: readonly string[], present: (date: string) => boolean): [string, string][] {
  const runs: [string, string][] = [];
  for (const date of dates) {
    if (present(date)) continue;
    const last = runs.at(-1);
    const previous = last && dateOf(Date.parse(`${date}T00:00:00Z`) - DAY_MS);
    if (last && last[1] === previous) last[1] = date;
    else runs.push([date, date]);
  }
  return runs;
}

const iso = (ms: number) => new Date(ms).toISOString();

function clientNotFound(client: string): ApiError {
  return new ApiError('client-not-found', `No statement of client ${client} is visible to you.`, {
    errors: [{ field: 'client', message: 'no client of this id whose statement you may read' }],
  });
}
