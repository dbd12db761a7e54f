/**
 * Outcomes that change later, for tests of what we do after an order was settled: a real provider
 * may reverse a FULFILLED top-up days later, or finish one that sat in HANDLING long after anyone
 * expected it to. An admin schedules "from `afterMs` on, this top-up (by ref) or gift-card order
 * (by orderId) has status S"; a check answers the latest change that is due, and the normal
 * timeline (or the scripted outcome) before the first one.
 *
 * Kept apart from the orders themselves: a change names its target by ref or orderId, so it does
 * not care how the books store orders.
 */
import { z } from 'zod';
import { DocumentedStatus } from '../../contract/provider';

/** A change later than a day is no longer "later" for a test; the admin surface refuses it. */
const MAX_DELAY_MS = 24 * 60 * 60_000;

export const OutcomeChangeSpec = z.strictObject({
  status: DocumentedStatus,
  /** From when (ms after this request) the new status shows; 0 = at once. Real time, not scaled. */
  afterMs: z.number().int().min(0).max(MAX_DELAY_MS).default(0),
  /** A REFUNDED top-up's `refund_message`; the sandbox writes one when unset. */
  refund_message: z.string().min(1).max(500).optional(),
  /**
   * Optional fields the answer leaves out (the docs mark them optional): `num_trans` from a
   * FULFILLED internet top-up.
   */
  without: z
    .array(z.enum(['num_trans']))
    .max(1)
    .optional(),
});
export type OutcomeChangeSpecInput = z.input<typeof OutcomeChangeSpec>;
export type OutcomeChangeSpec = z.output<typeof OutcomeChangeSpec>;

/** What a top-up is (by ref) or a gift-card order (by orderId). */
export type OutcomeTarget = { ref: string } | { orderId: string };

export interface OutcomeChange {
  id: string;
  target: OutcomeTarget;
  status: DocumentedStatus;
  refund_message?: string;
  without?: OutcomeChangeSpec['without'];
  /** ISO time from which the change shows. */
  from: string;
}

interface Scheduled {
  change: OutcomeChange;
  fromMs: number;
}

function keyOf(target: OutcomeTarget): string {
  return 'ref' in target ? `ref:${target.ref}` : `order:${target.orderId}`;
}

export class OutcomeChanges {
  readonly #byTarget = new Map<string, Scheduled[]>();
  #nextId = 1;

  add(target: OutcomeTarget, spec: OutcomeChangeSpec, now: number): OutcomeChange {
    const fromMs = now + spec.afterMs;
    const change: OutcomeChange = {
      id: `change-${this.#nextId++}`,
      target,
      status: spec.status,
      ...(spec.refund_message && { refund_message: spec.refund_message }),
      ...(spec.without?.length && { without: spec.without }),
      from: new Date(fromMs).toISOString(),
    };
    const key = keyOf(target);
    this.#byTarget.set(key, [...(this.#byTarget.get(key) ?? []), { change, fromMs }]);
    return change;
  }

  /** The latest change of `target` due at `now` (of two due at the same time, the one added last). */
  due(target: OutcomeTarget, now: number): OutcomeChange | undefined {
    let latest: Scheduled | undefined;
    for (const scheduled of this.#byTarget.get(keyOf(target)) ?? []) {
      if (scheduled.fromMs <= now && (!latest || scheduled.fromMs >= latest.fromMs)) latest = scheduled;
    }
    return latest?.change;
  }

  list(): OutcomeChange[] {
    return [...this.#byTarget.values()].flat().map(({ change }) => change);
  }

  clear(): number {
    const count = this.list().length;
    this.#byTarget.clear();
    return count;
  }
}
