/**
 * How a statement sums orders (src/statements/statement.service.ts) and how a closed day's summary is summed
 * (statement-days.ts): one order as visibility lists it, added to a line; two lines of the same
 * day, type and status merged. Both give the same figures whichever way the orders are grouped:
 * counts and whole dinars add exactly, and sums of centimes are rounded to the centime at each step.
 */
import type { WorkflowExecutionInfo } from '@temporalio/client';
import {
  AcceptedAtAttribute,
  CompletedAtAttribute,
  DebitAmountAttribute,
  OrderClientAttribute,
  OrderStatusAttribute,
  OrderTypeAttribute,
  SETTLEMENT_MEMO,
  type OrderSettlement,
} from '../../contract/order';
import { NO_CLIENT_KEY, type StatementSums } from '../../contract/statement';
import { FIGURES_MEMO, type OrderFigures } from '../orders';

/** One order as a statement reads it from visibility. */
export interface StatementRow {
  /** Its workflow ID and run: an order's runs share the ID, and only its latest run counts. */
  workflowId: string;
  runId: string;
  /** Still running: then it is its workflow ID's latest run (one run of an ID runs at a time). */
  running: boolean;
  type: string;
  status: string;
  completedAt?: Date;
  /** Its `OrderClient`, or NO_CLIENT_KEY. */
  key: string;
  figures?: OrderFigures;
  /** What the provider debited: the DebitAmount attribute, else the settlement memo's debit. */
  debited?: number;
  /** A partial order's split (the settlement memo). */
  settlement?: OrderSettlement;
}

/** A listed order run as a statement row; undefined for a run the API did not start as an order. */
export function statementRow(execution: WorkflowExecutionInfo): StatementRow | undefined {
  const attributes = execution.typedSearchAttributes;
  const type = attributes.get(OrderTypeAttribute);
  const status = attributes.get(OrderStatusAttribute);
  if (!type || !status || attributes.get(AcceptedAtAttribute) === undefined) return undefined;
  const settlement = execution.memo?.[SETTLEMENT_MEMO] as OrderSettlement | undefined;
  return {
    workflowId: execution.workflowId,
    runId: execution.runId,
    running: execution.status.name === 'RUNNING',
    type,
    status,
    completedAt: attributes.get(CompletedAtAttribute),
    key: attributes.get(OrderClientAttribute) ?? NO_CLIENT_KEY,
    figures: execution.memo?.[FIGURES_MEMO] as OrderFigures | undefined,
    debited: attributes.get(DebitAmountAttribute) ?? settlement?.debit?.amount,
    settlement,
  };
}

/** The final statuses the provider's answer settles, with a debit to show. */
const debitedStatuses = new Set(['FULFILLED', 'PARTIALLY_FULFILLED', 'REFUNDED']);

/** Adds one order to a line of its type and status. */
export function addRow<L extends StatementSums>(
  line: L,
  { status, figures, debited, settlement }: StatementRow,
): L {
  line.orders += 1;
  if (debitedStatuses.has(status)) {
    if (debited !== undefined) line.debited = dinars((line.debited ?? 0) + debited);
    else line.debitUnrecorded = (line.debitUnrecorded ?? 0) + 1;
  }
  const partial = settlement?.partial;
  if (status === 'PARTIALLY_FULFILLED' && partial) {
    mergePartial(line, {
      orders: 1,
      cardsOrdered: partial.quantity,
      cardsDelivered: partial.fulfilledQuantity,
      cardsRefunded: partial.refundedQuantity,
      ...(partial.fulfilledAmount !== undefined && { deliveredAmount: partial.fulfilledAmount }),
      ...(partial.refundedAmount !== undefined && { refundedAmount: partial.refundedAmount }),
    });
  }
  if (!figures) line.unknown = (line.unknown ?? 0) + 1;
  else if ('planCode' in figures) {
    if (figures.amount === undefined) line.unpriced = (line.unpriced ?? 0) + 1;
    else line.amount = (line.amount ?? 0) + figures.amount;
  } else if ('value' in figures) line.value = (line.value ?? 0) + figures.value;
  else {
    line.cards = (line.cards ?? 0) + figures.quantity;
    mergeProduct(line, {
      productId: figures.productId,
      typeId: figures.typeId,
      orders: 1,
      cards: figures.quantity,
    });
  }
  return line;
}

/** Adds `from`'s sums to `line` (same day, type and status): as if its orders had been added one by one. */
export function mergeLines<L extends StatementSums>(line: L, from: StatementSums): L {
  line.orders += from.orders;
  const counts = ['amount', 'unpriced', 'value', 'cards', 'unknown', 'debitUnrecorded'] as const;
  for (const field of counts) {
    if (from[field] !== undefined) line[field] = (line[field] ?? 0) + from[field];
  }
  if (from.debited !== undefined) line.debited = dinars((line.debited ?? 0) + from.debited);
  if (from.partial) mergePartial(line, from.partial);
  for (const product of from.products ?? []) mergeProduct(line, product);
  return line;
}

/** Products in a stable order (by product, then type), whatever order the orders were listed in. */
export function sortProducts(line: StatementSums): void {
  line.products?.sort((a, b) => a.productId.localeCompare(b.productId) || a.typeId.localeCompare(b.typeId));
}

function mergePartial(line: StatementSums, from: NonNullable<StatementSums['partial']>): void {
  const sum = (line.partial ??= { orders: 0, cardsOrdered: 0, cardsDelivered: 0, cardsRefunded: 0 });
  sum.orders += from.orders;
  sum.cardsOrdered += from.cardsOrdered;
  sum.cardsDelivered += from.cardsDelivered;
  sum.cardsRefunded += from.cardsRefunded;
  if (from.deliveredAmount !== undefined)
    sum.deliveredAmount = dinars((sum.deliveredAmount ?? 0) + from.deliveredAmount);
  if (from.refundedAmount !== undefined)
    sum.refundedAmount = dinars((sum.refundedAmount ?? 0) + from.refundedAmount);
}

function mergeProduct(line: StatementSums, from: NonNullable<StatementSums['products']>[number]): void {
  const products = (line.products ??= []);
  const product = products.find((p) => p.productId === from.productId && p.typeId === from.typeId);
  if (product) {
    product.orders += from.orders;
    product.cards += from.cards;
  } else products.push({ ...from });
}

/** Sums of dinars kept to the centime: prices per card need not be whole. */
const dinars = (amount: number) => Math.round(amount * 100) / 100;
