/**
 * The review decision check the workflows run on a `resolveReview` signal or a `decideReview`
 * update, without zod.
 *
 * Why not the API's zod schema (schemas.ts)? Inside the workflow sandbox zod is loaded into the
 * bundle and kept per cached workflow, which costs every worker memory and CPU per order (figures:
 * docs/contributors.md, "What the code's choices cost"). The rule is a handful of fields, so it is written out here; test/contract/review-decision.test.ts checks with fast-check
 * that it accepts and refuses exactly what the zod schema of the payload does, so the two cannot
 * drift apart.
 */

export const reviewDecisions = ['FULFILLED', 'REFUNDED', 'RECHECK'] as const;
export type ReviewDecisionKind = (typeof reviewDecisions)[number];

/** Longest operator name, note and caller id, before trimming. */
export const reviewTextMaxLength = { operator: 100, note: 1_000, decidedBy: 200 } as const;

/**
 * The provider's gift-card order id, as an operator copies it from the provider: it goes into the
 * check's URL path, so only the characters of a ref.
 */
export const providerOrderIdPattern = /^[A-Za-z0-9._-]{1,64}$/;

export interface CheckedReviewDecision {
  decision: ReviewDecisionKind;
  /** Who decided, as the operator typed it: a display name. */
  operator: string;
  note: string;
  /** Apply a FULFILLED / REFUNDED decision even though the provider contradicts it or cannot confirm it. */
  force?: boolean;
  /** Gift cards: the provider's order id, found by the operator (e.g. after a placement whose answer was lost). */
  orderId?: string;
  /**
   * The authenticated caller that sent the decision, set by the intake API only (never from a
   * request body). Absent on signals from Temporal UI or the CLI, whose sender Temporal records.
   */
  decidedBy?: string;
}

export type ReviewDecisionCheck =
  | { ok: true; decision: CheckedReviewDecision }
  /** The fields that are wrong (`payload` when it is not an object at all), for the audit note. */
  | { ok: false; fields: string[] };

const knownFields = new Set(['decision', 'operator', 'note', 'force', 'orderId', 'decidedBy']);

function isReviewDecisionKind(value: unknown): value is ReviewDecisionKind {
  return (reviewDecisions as readonly unknown[]).includes(value);
}

/** A present, non-blank string no longer than `max`, else undefined. */
function text(value: unknown, max: number): string | undefined {
  return typeof value === 'string' && value.length <= max && /\S/.test(value) ? value.trim() : undefined;
}

/**
 * Unknown keys are named in the order's timeline and log, and they are typed by hand: a few, cut
 * short, so a pasted blob cannot swell the history.
 */
export const unknownFieldsNamed = { most: 5, longest: 40 } as const;

function unknownFieldNames(keys: string[]): string[] {
  const unknown = keys.filter((key) => !knownFields.has(key));
  const named = unknown
    .slice(0, unknownFieldsNamed.most)
    .map((key) =>
      key.length > unknownFieldsNamed.longest ? `${key.slice(0, unknownFieldsNamed.longest)}…` : key,
    );
  const more = unknown.length - named.length;
  return more > 0 ? [...named, `${more} more`] : named;
}

export function checkReviewDecision(payload: unknown): ReviewDecisionCheck {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    return { ok: false, fields: ['payload'] };
  }
  const fields = payload as Record<string, unknown>;
  const { decision, force, orderId } = fields;
  const operator = text(fields.operator, reviewTextMaxLength.operator);
  const note = text(fields.note, reviewTextMaxLength.note);
  const decidedBy = text(fields.decidedBy, reviewTextMaxLength.decidedBy);
  const present = (key: string) => fields[key] !== undefined;
  const wrong = [
    ...(isReviewDecisionKind(decision) ? [] : ['decision']),
    ...(operator === undefined ? ['operator'] : []),
    ...(note === undefined ? ['note'] : []),
    ...(present('force') && typeof force !== 'boolean' ? ['force'] : []),
    ...(present('orderId') && !(typeof orderId === 'string' && providerOrderIdPattern.test(orderId))
      ? ['orderId']
      : []),
    ...(present('decidedBy') && decidedBy === undefined ? ['decidedBy'] : []),
  ];
  // A cross-field rule, judged (as zod judges refinements) only when every field has the right type.
  const optionally = (key: string, type: 'boolean' | 'string') =>
    fields[key] === undefined || typeof fields[key] === type;
  const allTyped =
    isReviewDecisionKind(decision) &&
    typeof fields.operator === 'string' &&
    typeof fields.note === 'string' &&
    optionally('force', 'boolean') &&
    optionally('orderId', 'string') &&
    optionally('decidedBy', 'string');
  if (allTyped && force === true && decision === 'RECHECK') wrong.push('force');
  wrong.push(...unknownFieldNames(Object.keys(fields)));
  if (wrong.length > 0 || !isReviewDecisionKind(decision) || !operator || !note) {
    return { ok: false, fields: wrong };
  }
  return {
    ok: true,
    decision: {
      decision,
      operator,
      note,
      ...(typeof force === 'boolean' && { force }),
      ...(typeof orderId === 'string' && { orderId }),
      ...(decidedBy !== undefined && { decidedBy }),
    },
  };
}

/** Who decided, for the timeline: the display name, and the authenticated caller when known. */
export function decidedByWhom(decision: Pick<CheckedReviewDecision, 'operator' | 'decidedBy'>): string {
  return decision.decidedBy ? `${decision.operator} (${decision.decidedBy})` : decision.operator;
}
