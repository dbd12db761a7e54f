/**
 * The simulated provider's behaviour, as pure functions of an order's creation time and inputs:
 * the PENDING → HANDLING → FULFILLED timeline, the scripted mobile outcomes of spec section 3,
 * and the card codes. Nothing here keeps a timer or a per-order copy of derived data, so the
 * sandbox holds tens of thousands of orders at the cost of their inputs only.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { sandboxSpecialNumbers, type ProviderStatus, type SuggestedPlan } from '../provider/wire';

/** Spec section 3: "about 5 seconds" PENDING, then "about 15 seconds" HANDLING. */
export const PENDING_MS = 5_000;
export const HANDLING_MS = 15_000;

/** Where an order stands on the normal timeline, `elapsedMs` after it was created. */
export function timelineStatus(elapsedMs: number, timeScale: number): ProviderStatus {
  if (elapsedMs < PENDING_MS * timeScale) return 'PENDING';
  if (elapsedMs < (PENDING_MS + HANDLING_MS) * timeScale) return 'HANDLING';
  return 'FULFILLED';
}

/** A final outcome fixed at send time, instead of the timeline. */
export interface ScriptedOutcome {
  status: Extract<ProviderStatus, 'REFUNDED' | 'UNKNOWN_ERROR'>;
  message?: string;
  suggested_plans?: SuggestedPlan[];
}

/** Operator plans the sandbox suggests on a plan mismatch. */
const knownPlans = ['PREPAID_MOBILIS', 'PREPAID_DJEZZY', 'PREPAID_OOREDOO'] as const;

/** Spec section 3's special numbers; `undefined` for a normal number. */
export function scriptedMobileOutcome(
  msisdn: string,
  planCode: string,
  amount: number,
): ScriptedOutcome | undefined {
  switch (msisdn) {
    case sandboxSpecialNumbers.refunded:
      return { status: 'REFUNDED', message: 'The operator rejected the top-up; the amount was refunded.' };
    case sandboxSpecialNumbers.planMismatch:
      return {
        status: 'REFUNDED',
        message: `Plan ${planCode} does not match this number; the amount was refunded.`,
        suggested_plans: knownPlans
          .filter((plan) => plan !== planCode)
          .map((plan_code) => ({ plan_code, amount })),
      };
    case sandboxSpecialNumbers.unknownError:
      return { status: 'UNKNOWN_ERROR' };
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
