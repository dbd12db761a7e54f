/**
 * The simulated provider's behaviour, as pure functions of an order's creation time and inputs:
 * the status timelines, the scripted outcomes (spec section 3, fact sheet "Sandbox" lines) and
 * the card codes. Nothing here keeps a timer or a per-order copy of derived data, so the sandbox
 * holds tens of thousands of orders at the cost of their inputs only.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { sandboxSpecialNumbers, type SuggestedOffer } from '../provider/wire';
import type { DocumentedStatus } from '../../contract/provider';

/** Spec section 3: "about 5 seconds" PENDING, then "about 15 seconds" HANDLING. */
export const PENDING_MS = 5_000;
export const HANDLING_MS = 15_000;

/**
 * Where an order stands on the normal timeline, `elapsedMs` after it was created. Mobile top-ups
 * are PENDING first (spec); the docs show no PENDING for internet top-ups and gift-card orders, so
 * theirs are HANDLING for the same 20 s.
 */
export function timelineStatus(
  elapsedMs: number,
  timeScale: number,
  family: 'mobile' | 'internet' | 'giftCard' = 'mobile',
): 'PENDING' | 'HANDLING' | 'FULFILLED' {
  if (elapsedMs < PENDING_MS * timeScale) return family === 'mobile' ? 'PENDING' : 'HANDLING';
  if (elapsedMs < (PENDING_MS + HANDLING_MS) * timeScale) return 'HANDLING';
  return 'FULFILLED';
}

/** When an order on the normal timeline reaches its final status, ms after creation. */
export function settleAfterMs(timeScale: number): number {
  return (PENDING_MS + HANDLING_MS) * timeScale;
}

/** A final outcome fixed at send time, instead of the timeline. */
export interface ScriptedOutcome {
  status: Extract<DocumentedStatus, 'REFUNDED' | 'UNKNOWN_ERROR'>;
  refund_message?: string;
  suggested_offers?: SuggestedOffer[];
}

/** Arabic text for the end user, as the documented examples carry it. */
export const sandboxRefundMessages = {
  refunded: 'تعذر شحن الرصيد، تم استرجاع المبلغ',
  planMismatch: 'العرض غير متوافق مع هذا الرقم، تم استرجاع المبلغ. يمكنك اختيار أحد العروض المقترحة',
  unknown: 'حالة العملية غير معروفة، سيتم التحقق منها',
  reversed: 'تم إلغاء العملية من طرف المتعامل، تم استرجاع المبلغ',
  operatorDown: 'شبكة المتعامل غير متاحة حاليا، تم استرجاع المبلغ',
} as const;

/** The sandbox's special numbers; `undefined` for a normal number. */
export function scriptedMobileOutcome(msisdn: string): ScriptedOutcome | undefined {
  switch (msisdn) {
    case sandboxSpecialNumbers.refunded:
      return { status: 'REFUNDED', refund_message: sandboxRefundMessages.refunded };
    case sandboxSpecialNumbers.planMismatch:
      return {
        status: 'REFUNDED',
        refund_message: sandboxRefundMessages.planMismatch,
        // The documented list example.
        suggested_offers: [{ typename: 'Facture', plan_code: 'FACTURE_DJEZZY', amount: 500 }],
      };
    case sandboxSpecialNumbers.unknownError:
      return { status: 'UNKNOWN_ERROR', refund_message: sandboxRefundMessages.unknown };
    default:
      return undefined;
  }
}

/** 24 lowercase hex characters, the form the spec shows for topupId. */
export function newId(): string {
  return randomBytes(12).toString('hex');
}

/**
 * Codes derived from a secret and the order's id: the same on every check without being stored,
 * and not computable by a client from the public id (real card codes are secrets). The secret is
 * per process, or kept in the state file so codes survive a restart.
 */
export class CodeMaker {
  readonly #secret: Buffer;

  constructor(secret: Buffer = randomBytes(32)) {
    this.#secret = secret;
  }

  get secret(): Buffer {
    return this.#secret;
  }

  /** `length` digits (at most 32, one per HMAC byte); the modulo bias is irrelevant for fake codes. */
  digits(label: string, length: number): string {
    if (length > 32) throw new RangeError('at most 32 digits');
    const bytes = createHmac('sha256', this.#secret).update(label).digest();
    return Array.from(bytes.subarray(0, length), (byte) => byte % 10).join('');
  }
}
