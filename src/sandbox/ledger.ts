/**
 * The sandbox account's ledger: a list of rows, each dated: a send's debit when it commits, a
 * refund when the order's refund shows (at once for the scripted refunds, at the end of the
 * timeline for the sandbox's gift-card test types, when an outcome change falls due). The balance
 * at a time is the sum of the rows up to it, so a refund that is not due yet is not spendable yet.
 * One account: every key shares it. The store (state.ts) writes it as it applies its records.
 */
import type { Transaction } from '../provider';
import { inRange, paginate, type ListQuery, type Page } from './pages';
import { newId } from './simulation';

/** A ledger row before its running balances are known. */
interface LedgerEntry {
  id: string;
  type: string;
  /** Signed: negative for a debit. */
  delta: number;
  objid?: string;
  note?: string;
  at: number;
}

export const ledgerTypes = {
  mobile: { debit: 'FLEXY', refund: 'REFUND-FLEXY' },
  internet: { debit: 'ADSL', refund: 'REFUND-ADSL' },
  giftCard: { debit: 'ORDER', refund: 'REFUND-ORDER' },
} as const;

export type LedgerFamily = keyof typeof ledgerTypes;

export class Ledger {
  #entries: LedgerEntry[] = [];
  /** Refunded amount per order id (objid), so a refund is never credited twice. */
  readonly #refunded = new Map<string, number>();

  balance(at: number): number {
    let balance = 0;
    for (const entry of this.#entries) if (entry.at <= at) balance += entry.delta;
    return roundDinars(balance);
  }

  /** Rows up to `now`, newest first, with their running balances. */
  transactions(query: ListQuery, now: number): Page<Transaction> {
    const rows: Transaction[] = [];
    let balance = 0;
    for (const entry of [...this.#entries].filter((e) => e.at <= now).sort((a, b) => a.at - b.at)) {
      const oldBalance = balance;
      balance = roundDinars(balance + entry.delta);
      if (!inRange(entry.at, query)) continue;
      rows.push({
        _id: entry.id,
        type: entry.type,
        operation: entry.delta < 0 ? 'debit' : 'credit',
        amount: roundDinars(Math.abs(entry.delta)),
        oldBalance,
        newBalance: balance,
        ...(entry.objid && { objid: entry.objid }),
        ...(entry.note && { note: entry.note }),
        time: new Date(entry.at).toISOString(),
      });
    }
    return paginate(rows.reverse(), query, (row) => row);
  }

  /** A row of `delta` (negative: a debit) at `at`. */
  credit(
    type: string,
    delta: number,
    { at, objid, note }: { at: number; objid?: string; note?: string },
  ): void {
    this.#entries.push({ id: newId(), type, delta, at, ...(objid && { objid }), ...(note && { note }) });
  }

  /** The admin's balance: a DEPOSIT or WITHDRAW row `id` of the difference at `at`. */
  setBalance(id: string, balance: number, at: number): void {
    const delta = balance - this.balance(at);
    this.#entries.push({
      id,
      type: delta < 0 ? 'WITHDRAW' : 'DEPOSIT',
      delta,
      at,
      note: 'set by the sandbox admin',
    });
  }

  /**
   * Credits what is left of an order's `debit`, once (a second refund of one order credits nothing).
   */
  refund(family: LedgerFamily, objid: string, debit: number, amount: number, at: number): void {
    const left = Math.min(amount, debit - (this.#refunded.get(objid) ?? 0));
    if (left <= 0) return;
    this.#refunded.set(objid, (this.#refunded.get(objid) ?? 0) + left);
    this.credit(ledgerTypes[family].refund, left, { at, objid });
  }

  /** What was refunded of an order (its objid) as of `asOf`. */
  refundedAsOf(objid: string, asOf: number): number {
    let refunded = 0;
    for (const entry of this.#entries) {
      if (entry.objid === objid && entry.delta > 0 && entry.at <= asOf) refunded += entry.delta;
    }
    return refunded;
  }

  clear(): void {
    this.#entries = [];
    this.#refunded.clear();
  }
}

/** Dinars with at most two decimals (the docs allow decimals in a balance). */
export function roundDinars(value: number): number {
  return Math.round(value * 100) / 100;
}
