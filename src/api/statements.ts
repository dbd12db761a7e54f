/**
 * GET /v1/statements?from=&to=: one client's books for a range — per day of completion (UTC), per
 * order type, per final status: orders and sums (mobile `amount`, internet `value`, gift cards'
 * cards by product and type) — and the orders still open counted apart, by status.
 *
 * Where the numbers come from, chosen by measuring (docs/operators.md "Statements"): one
 * visibility listing of the orders, reading each order's final status (OrderStatus), completion
 * time (CompletedAt) and figures (memo `figures`, set at intake from the request: src/orders/figures.ts).
 * No history is read and no workflow is asked, so the cost is visibility's pages of 1,000 orders;
 * an export scan reads each order's view and is far slower.
 *
 * Which statuses are final and which are open comes from the contract (`finalStatuses`), so a
 * final status added later is summed, and an open one (a hold, a queue) is counted apart, unchanged.
 */
import type { Client } from '@temporalio/client';
import pLimit from 'p-limit';
import { z } from 'zod';
import type { Caller, ClientRegistry } from '../clients/registry';
import { ClientId } from '../clients/model';
import { FIGURES_MEMO, type OrderFigures } from '../orders/figures';
import { OrderStatus, OrderType } from '../../contract/schemas';
import {
  CompletedAtAttribute,
  finalStatuses,
  OrderStatusAttribute,
  OrderTypeAttribute,
  workflowTypeByOrderType,
  AcceptedAtAttribute,
  SETTLEMENT_MEMO,
  type OrderSettlement,
} from '../../contract/order';
import { ApiError } from './errors';
import { ownedByClause, rangeClauses } from './order-list';
import { checkRange, MAX_RANGE_DAYS, RangeBound } from './schemas';

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

/** Visibility rows per page: its largest. */
const PAGE_SIZE = 1_000;

/**
 * Listings of disjoint time slices read at once, each way (completed and open): one, as measured
 * on the dev server, where more did not answer sooner (docs/operators.md "Statements and
 * reconciliation"). More is for a visibility store that answers queries side by side.
 */
export const STATEMENT_SLICES = 1;

export class StatementService {
  readonly #client: Client;
  readonly #clients: ClientRegistry;
  readonly #slices: number;

  constructor(client: Client, clients: ClientRegistry, { slices = STATEMENT_SLICES } = {}) {
    this.#client = client;
    this.#clients = clients;
    this.#slices = slices;
  }

  async statement(caller: Caller, query: StatementQuery): Promise<Statement> {
    const client = query.client ?? caller.id;
    const base = this.#baseQuery(caller, client);
    const finals = finalStatuses.map((s) => `'${s}'`).join(', ');
    const from = query.from!;
    const to = query.to!;
    const completed = this.#slice(from, to).map(([sliceFrom, sliceTo]) =>
      [
        base,
        `${OrderStatusAttribute.name} IN (${finals})`,
        ...rangeClauses({ completedFrom: sliceFrom, completedTo: sliceTo }),
      ].join(' AND '),
    );
    // Sliced, open orders accepted before the range (a long review) have a slice of their own.
    const openSlices: (readonly [Date | undefined, Date])[] =
      this.#slices === 1
        ? [[undefined, to]]
        : [[undefined, new Date(from.getTime() - 1)], ...this.#slice(from, to)];
    const open = openSlices.map(([sliceFrom, sliceTo]) =>
      [
        base,
        `${OrderStatusAttribute.name} NOT IN (${finals})`,
        // Running: a closed run without a final status is stranded, and the sweep resumes it.
        `ExecutionStatus = 'Running'`,
        ...rangeClauses({ acceptedFrom: sliceFrom, acceptedTo: sliceTo }),
      ].join(' AND '),
    );

    const days = new Map<string, Line & { date: string; type: string; status: string }>();
    const opens = new Map<string, Line & { type: string; status: string }>();
    const slices = pLimit(2 * this.#slices);
    const each = (queries: string[], take: (row: Row) => void) =>
      queries.map((listing) => slices(() => this.#each(listing, take)));
    await Promise.all([
      ...each(completed, (row) => {
        if (!row.completedAt) return;
        const date = row.completedAt.toISOString().slice(0, 10);
        const key = `${date}|${row.type}|${row.status}`;
        const line = days.get(key) ?? { date, type: row.type, status: row.status, orders: 0 };
        days.set(key, add(line, row));
      }),
      ...each(open, (row) => {
        const key = `${row.type}|${row.status}`;
        const line = opens.get(key) ?? { type: row.type, status: row.status, orders: 0 };
        opens.set(key, add(line, row));
      }),
    ]);
    const byKey = <T extends { type: string; status: string }>(
      a: T & { date?: string },
      b: T & { date?: string },
    ) =>
      (a.date ?? '').localeCompare(b.date ?? '') ||
      a.type.localeCompare(b.type) ||
      a.status.localeCompare(b.status);
    return {
      client,
      from: from.toISOString(),
      to: to.toISOString(),
      days: [...days.values()].sort(byKey) as Statement['days'],
      open: [...opens.values()].sort(byKey) as Statement['open'],
    };
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

  /** The client's orders, within the caller's reach: its own, or any client's with audit:read. */
  #baseQuery(caller: Caller, client: string): string {
    const types = Object.values(workflowTypeByOrderType).map((t) => `'${t}'`);
    const clauses = [`WorkflowType IN (${types.join(', ')})`, `ExecutionStatus != 'ContinuedAsNew'`];
    if (client !== caller.id && !caller.scopes.has('audit:read')) throw clientNotFound(client);
    if (this.#clients.legacy) {
      if (client !== caller.id) throw clientNotFound(client);
    } else {
      clauses.push(ownedByClause(client, this.#clients.defaultClientId));
    }
    return clauses.join(' AND ');
  }

  async #each(query: string, take: (row: Row) => void): Promise<void> {
    for await (const execution of this.#client.workflow.list({ query, pageSize: PAGE_SIZE })) {
      const attributes = execution.typedSearchAttributes;
      const type = attributes.get(OrderTypeAttribute);
      const status = attributes.get(OrderStatusAttribute);
      if (!type || !status || attributes.get(AcceptedAtAttribute) === undefined) continue;
      take({
        type,
        status,
        completedAt: attributes.get(CompletedAtAttribute),
        figures: execution.memo?.[FIGURES_MEMO] as OrderFigures | undefined,
        settlement: execution.memo?.[SETTLEMENT_MEMO] as OrderSettlement | undefined,
      });
    }
  }
}

/** One order as a statement reads it from visibility. */
interface Row {
  type: string;
  status: string;
  completedAt?: Date;
  figures?: OrderFigures;
  settlement?: OrderSettlement;
}

/** The final statuses the provider's answer settles, with a debit to show. */
const debitedStatuses = new Set(['FULFILLED', 'PARTIALLY_FULFILLED', 'REFUNDED']);

function add<L extends Line>(line: L, { status, figures, settlement }: Row): L {
  line.orders += 1;
  if (debitedStatuses.has(status)) {
    const debit = settlement?.debit;
    if (debit) line.debited = dinars((line.debited ?? 0) + debit.amount);
    else line.debitUnrecorded = (line.debitUnrecorded ?? 0) + 1;
  }
  const partial = settlement?.partial;
  if (status === 'PARTIALLY_FULFILLED' && partial) {
    const sum = (line.partial ??= {
      orders: 0,
      cardsOrdered: 0,
      cardsDelivered: 0,
      cardsRefunded: 0,
    });
    sum.orders += 1;
    sum.cardsOrdered += partial.quantity;
    sum.cardsDelivered += partial.fulfilledQuantity;
    sum.cardsRefunded += partial.refundedQuantity;
    if (partial.fulfilledAmount !== undefined)
      sum.deliveredAmount = dinars((sum.deliveredAmount ?? 0) + partial.fulfilledAmount);
    if (partial.refundedAmount !== undefined)
      sum.refundedAmount = dinars((sum.refundedAmount ?? 0) + partial.refundedAmount);
  }
  if (!figures) line.unknown = (line.unknown ?? 0) + 1;
  else if ('planCode' in figures) {
    if (figures.amount === undefined) line.unpriced = (line.unpriced ?? 0) + 1;
    else line.amount = (line.amount ?? 0) + figures.amount;
  } else if ('value' in figures) line.value = (line.value ?? 0) + figures.value;
  else {
    line.cards = (line.cards ?? 0) + figures.quantity;
    const products = (line.products ??= []);
    const product = products.find((p) => p.productId === figures.productId && p.typeId === figures.typeId);
    if (product) {
      product.orders += 1;
      product.cards += figures.quantity;
    } else
      products.push({
        productId: figures.productId,
        typeId: figures.typeId,
        orders: 1,
        cards: figures.quantity,
      });
  }
  return line;
}

/** Sums of dinars kept to the centime: prices per card need not be whole. */
const dinars = (amount: number) => Math.round(amount * 100) / 100;

function clientNotFound(client: string): ApiError {
  return new ApiError('client-not-found', `No statement of client ${client} is visible to you.`);
}
