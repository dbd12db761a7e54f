/**
 * The simulated provider's behaviour, as pure functions of an order's creation time and inputs:
 * the status timelines, the scripted outcomes (spec section 3, fact sheet "Sandbox" lines) and
 * the card codes. Nothing here keeps a timer or a per-order copy of derived data, so the sandbox
 * holds tens of thousands of orders at the cost of their inputs only.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { sandboxSpecialNumbers, type SuggestedOffer } from '../provider';
import type { DocumentedStatus } from '../../contract/provider';

/** Spec section 3: "about 5 seconds" PENDING, then "about 15 seconds" HANDLING. */
export const PENDING_MS = 5_000;
export const HANDLING_MS = 15_000;

/**
 * How long one order stays in each open status, unscaled ms. Absent on an order: the spec's fixed
 * timeline (PENDING 5 s, HANDLING until 20 s; internet top-ups and gift cards HANDLING for the whole
 * 20 s, as the docs show them no PENDING).
 */
export interface Timeline {
  pendingMs: number;
  handlingMs: number;
}

export type TimelineFamily = 'mobile' | 'internet' | 'giftCard';

const specTimeline: Record<TimelineFamily, Timeline> = {
  mobile: { pendingMs: PENDING_MS, handlingMs: HANDLING_MS },
  internet: { pendingMs: 0, handlingMs: PENDING_MS + HANDLING_MS },
  giftCard: { pendingMs: 0, handlingMs: PENDING_MS + HANDLING_MS },
};

/**
 * The provider's documented ranges (fact sheet: mobile PENDING "typically 2–15 s" then HANDLING
 * "typically 3–8 s"; internet HANDLING 3–45 s; gift cards "most settle within 30 s", read here as
 * HANDLING 3–30 s: the docs give no lower bound, 3 s is the shortest HANDLING they give anywhere).
 */
export const documentedRanges: Readonly<
  Record<TimelineFamily, { pending: [number, number]; handling: [number, number] }>
> = {
  mobile: { pending: [2_000, 15_000], handling: [3_000, 8_000] },
  internet: { pending: [0, 0], handling: [3_000, 45_000] },
  giftCard: { pending: [0, 0], handling: [3_000, 30_000] },
};

/**
 * The `index`-th draw of `family` from the documented ranges under `seed`: uniform in each range,
 * a pure function of its arguments, so a run with the same seed and the same order of sends
 * draws the same timelines.
 */
export function documentedTimeline(family: TimelineFamily, seed: number, index: number): Timeline {
  const { pending, handling } = documentedRanges[family];
  const at = (range: [number, number], salt: string) => {
    const bytes = createHmac('sha256', String(seed)).update(`${family}:${index}:${salt}`).digest();
    return Math.round(range[0] + (bytes.readUInt32BE(0) / 0x1_0000_0000) * (range[1] - range[0]));
  };
  return { pendingMs: at(pending, 'pending'), handlingMs: at(handling, 'handling') };
}

/**
 * Where an order stands on its timeline, `elapsedMs` after it was created (the spec's fixed one
 * unless `timeline` says otherwise).
 */
export function timelineStatus(
  elapsedMs: number,
  timeScale: number,
  family: TimelineFamily = 'mobile',
  timeline: Timeline = specTimeline[family],
): 'PENDING' | 'HANDLING' | 'FULFILLED' {
  if (elapsedMs < timeline.pendingMs * timeScale) return 'PENDING';
  if (elapsedMs < (timeline.pendingMs + timeline.handlingMs) * timeScale) return 'HANDLING';
  return 'FULFILLED';
}

/** When an order on its timeline reaches its final status, ms after creation. */
export function settleAfterMs(timeScale: number, timeline: Timeline = specTimeline.mobile): number {
  return (timeline.pendingMs + timeline.handlingMs) * timeScale;
}

/** When an order on its timeline is first HANDLING, ms after creation. */
export function handlingAfterMs(timeScale: number, timeline: Timeline = specTimeline.mobile): number {
  return timeline.pendingMs * timeScale;
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
