/**
 * The provider account's contract (docs/operators.md "Orders on hold"): a hold as the account
 * workflow finds it, what the account workflow tells a held order, and what it answers about the
 * account. One account workflow per order task queue (one task queue = one provider key = one
 * account). Safe to import from workflow code (no I/O).
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { OperatorName } from './provider';

export type { OperatorName };

/** Why an order is held: the account's balance cannot cover it, or its operator is reported down. */
export type HoldReason = 'balance' | 'operator';

export const ACCOUNT_WORKFLOW_TYPE = 'providerAccountWorkflow';

/** The account workflow of an order task queue. */
export function accountWorkflowId(taskQueue: string): string {
  return `provider-account:${taskQueue}`;
}

/** A held order as the account's round finds it (visibility: its hold's search attributes). */
export interface ListedHold {
  workflowId: string;
  /** ISO time the order was accepted: held orders resume in this order. */
  acceptedAt: string;
  reason: HoldReason;
  /** `operator`: the operator reported down. */
  operator?: OperatorName;
  /** `balance`: what the order needs (the provider's `required`, or the order's own amount), DZD. */
  required?: number;
}

/** What a held order tells its worker's account activity (holdOrder): its hold, and until when. */
export interface HeldOrder extends ListedHold {
  /** Epoch ms: the order gives up then by itself. */
  until: number;
}

export interface AccountInput {
  /** How often the account's balance and operators are read while orders are held. */
  checkMs: number;
}

/** What one of the account's rounds did: the reading, the held orders it found, those it let go. */
export interface AccountRound {
  reading: AccountReading;
  /** Orders still held after the round (the ones it let go are not counted). */
  held: AccountState['held'];
  /** Orders the round let go (signalled `resumeHeld`). */
  released: number;
  /** The listing failed: why (codes only); nothing was let go. */
  listFailure?: string;
}

/** What the account workflow knows, for /readyz, metrics and the worker's send gate. */
export interface AccountState {
  /** The last balance read, DZD, and when. */
  balance?: number;
  balanceAt?: string;
  /** Each operator's state per /v3/ping, at the last read. */
  operators?: Partial<Record<OperatorName, 'up' | 'down'>>;
  /** Orders held, by reason; `byOperator` for `operator` holds. */
  held: { balance: number; operator: number; byOperator: Partial<Record<OperatorName, number>> };
  /** The last read failed: why (codes only). */
  lastReadFailure?: string;
}

/** What the account activity reads. */
export interface AccountReading {
  balance?: number;
  operators?: Partial<Record<OperatorName, 'up' | 'down'>>;
  failure?: string;
}

/**
 * The held orders the account can take now, oldest first: those held for the balance in
 * acceptance order as far as the balance read covers them (the first one it does not cover stops
 * the line, so a later, smaller order does not pass it); those held for an operator once /v3/ping
 * reports it up. An order whose need is unknown (a gift card refused without `required`) goes when
 * the balance is positive.
 */
export function resumableHeld<T extends ListedHold>(held: Iterable<T>, read: AccountReading): T[] {
  const line = [...held].sort((a, b) => a.acceptedAt.localeCompare(b.acceptedAt));
  const go: T[] = [];
  let budget = read.balance;
  for (const order of line) {
    if (order.reason === 'operator') {
      if (order.operator && read.operators?.[order.operator] === 'up') go.push(order);
      continue;
    }
    if (budget === undefined) continue;
    const need = order.required ?? Math.min(budget, 1);
    if (budget <= 0 || need > budget) budget = undefined;
    else {
      budget -= need;
      go.push(order);
    }
  }
  return go;
}

/** Orders held, by reason and operator. */
export function heldCounts(held: Iterable<ListedHold>): AccountState['held'] {
  const counts: AccountState['held'] = { balance: 0, operator: 0, byOperator: {} };
  for (const order of held) {
    counts[order.reason]++;
    if (order.operator) counts.byOperator[order.operator] = (counts.byOperator[order.operator] ?? 0) + 1;
  }
  return counts;
}

export const accountStateQuery = defineQuery<AccountState>('accountState');
/** To a held order, from the account workflow: send now. */
export const resumeHeldSignal = defineSignal('resumeHeld');
