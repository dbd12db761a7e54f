/**
 * What the provider activities return and how they fail: the part of the activities' contract the
 * workflows need at run time (the failure `type` strings) or as types. Free of I/O, so workflow
 * code may import it (the lint rule allows `activities/*.types`).
 */
import type { OperatorName, ProviderFailureKind } from './provider';

/** `ApplicationFailure.type` of every failure the provider activities throw. */
export const ProviderFailureType = {
  /** A definitive refusal (4xx): nothing was done, retrying cannot help. Non-retryable. */
  rejected: 'ProviderRejected',
  /** The request certainly never reached the provider: safe to repeat, even a gift-card placement. */
  notReached: 'ProviderNotReached',
  /** 429, refused before processing: safe to repeat after `retryAfterMs`. */
  rateLimited: 'ProviderRateLimited',
  /** The provider may have acted on the request: only a lookup can tell. */
  outcomeUnknown: 'ProviderOutcomeUnknown',
  /**
   * DUPLICATED_REF on a send: the provider already has a top-up under this ref. Ours, if an
   * earlier send of this order may have reached it; otherwise someone else's (a ref used before,
   * by an order we no longer hold). Never a refusal.
   */
  duplicateRef: 'ProviderDuplicateRef',
  /**
   * INSUFFICIENT_BALANCE: nothing was sent, the account cannot cover the order. Retryable after a
   * long back-off (funds must be added first); never the order's failure.
   */
  insufficientBalance: 'ProviderInsufficientBalance',
  /**
   * We cannot talk to the provider (missing or bad key, IP blocked, outside the key's whitelist,
   * key disabled): nothing was done, and it is not the order's fault. Retryable.
   */
  accessDenied: 'ProviderAccessDenied',
  /**
   * The order's operator is reported down by /v3/ping: the worker did not send (nothing was
   * sent). The order is held until the operator is up (src/orders/lifecycle/hold.workflow.ts).
   */
  operatorDown: 'ProviderOperatorDown',
  /**
   * A send asked of this worker as a local activity that it makes only through the task queue
   * (WORKER_PROVIDER_CALLS_PER_SECOND is set): nothing was sent, send it as a regular activity.
   */
  localSendDeclined: 'LocalSendDeclined',
  /** A polling attempt that found the order still open (or could not ask): the server retries it. */
  stillOpen: 'ProviderOrderStillOpen',
} as const;
export type ProviderFailureType = (typeof ProviderFailureType)[keyof typeof ProviderFailureType];

/** The first detail of every provider failure: codes only, never a request body or personal data. */
export interface ProviderFailureDetails {
  kind: ProviderFailureKind;
  /** The provider client method, e.g. `sendMobileTopup`. */
  operation: string;
  /** HTTP status, when an answer arrived. */
  status?: number;
  /** The provider's error code or the transport error code. */
  code?: string;
  retryAfterMs?: number;
  /** INSUFFICIENT_BALANCE: what the order needs and what the account holds, when the provider said. */
  balance?: { required?: number; available?: number };
  /** ProviderOperatorDown: the operator /v3/ping reports down. */
  operator?: OperatorName;
  /**
   * ProviderOutcomeUnknown: when the call ended, epoch ms on the worker's clock. A workflow's clock
   * is its task's start, which may be seconds before a call its task made (records.ts: the window
   * a lost placement's commit falls in ends after this).
   */
  endedAt?: number;
}

/** A check: what the provider says, or that it does not know the ref / order (404). */
export type CheckOutcome<C> = { found: true; check: C } | { found: false };

/** What a send or placement returns once the provider has the order. */
export interface Submission<C> {
  /** The provider's identifier (topupId, orderId); absent when an earlier attempt's send was found by ref. */
  providerReference?: string;
  /** True when an earlier attempt had already been accepted (found by ref, or a DUPLICATED_REF): nothing was sent now. */
  alreadySent: boolean;
  /** The order's state, when the activity had to look it up. */
  check?: C;
}

/** What a polling activity is told: the provider's schedule, as the workflow's timings give it. */
export interface PollPlan {
  /** The wait before the first check, from when the workflow scheduled the activity. */
  firstCheckMs: number;
  /** After HANDLING is first seen, the wait before the next check. */
  handlingCheckMs: number;
  /** Cap of the back-off between checks (and between failed checks). */
  maxIntervalMs: number;
  /** Epoch ms: the order's deadline. A check answered "still open" at or after it ends the polling. */
  until: number;
  /** The provider status the workflow saw last (HANDLING seen before is not news). */
  lastStatus?: string;
  /**
   * Check at the provider's pace, in the attempt: every `intervalMs` until `until` (epoch ms),
   * heartbeating only as the attempt's heartbeat timeout needs; then the schedule above, each
   * check handed to the server. Absent: the schedule above from the start.
   */
  pace?: { intervalMs: number; until: number; heartbeatTimeoutMs: number };
}

/**
 * The wait before the next status check of an open order, for both ways of polling (the
 * workflow's timers and the lean lifecycle's retried activity): when HANDLING has just begun, the
 * provider's HANDLING time; otherwise the last wait doubled, up to the cap.
 */
export function nextCheckDelayMs(
  timings: Pick<PollPlan, 'handlingCheckMs' | 'maxIntervalMs'>,
  lastWaitMs: number,
  status: string,
  previous: string | undefined,
): number {
  return status === 'HANDLING' && previous !== 'HANDLING'
    ? timings.handlingCheckMs
    : Math.min(timings.maxIntervalMs, lastWaitMs * 2);
}

/** One answer of the provider while polling; identical consecutive answers are folded into `times`. */
export interface PollObservation<C> {
  /** ISO time of the first of these answers. */
  at: string;
  /** The provider's status, `NOT_FOUND` (404) or `CHECK_FAILED` (no answer). */
  answer: string;
  times: number;
  /** The check itself, when the provider knew the order (the first of the folded ones). */
  check?: C;
  /** Why a failed check failed (codes, never a body). */
  failure?: string;
}

/** A polling activity's progress, carried from attempt to attempt in its heartbeat details. */
export interface PollProgress<C> {
  /** The wait before the next check. */
  nextCheckMs: number;
  /** Failed checks in a row (their back-off). */
  failuresInARow: number;
  /** Provider calls made so far, every attempt together. */
  checks: number;
  /** Heartbeats recorded so far (one per attempt that handed its progress on; billable actions). */
  heartbeats?: number;
  /** First and latest answers (bounded); the first entry is kept when older ones are dropped. */
  observed: PollObservation<C>[];
}

/** What a polling activity returns: `settled` when the provider gave a status other than PENDING / HANDLING. */
export interface PollOutcome<C> extends PollProgress<C> {
  settled: boolean;
}
