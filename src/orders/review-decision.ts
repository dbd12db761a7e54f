/**
 * The review decision check the workflows run on a `resolveReview` signal, without zod.
 *
 * Why not the API's zod schema (schemas.ts)? Inside the workflow sandbox zod is loaded into the
 * bundle and kept per cached workflow: the worker's peak RSS in `npm run bench` was 610 MB with it
 * and 335 MB without, and its CPU per order 35.8 ms against 30.7 ms. The rule is four fields, so it
 * is written out here; test/orders/review-decision.test.ts checks with fast-check that it accepts
 * and refuses exactly what the API's schema does, so the two cannot drift apart.
 */

export const reviewDecisions = ['FULFILLED', 'REFUNDED', 'RECHECK'] as const;
export type ReviewDecisionKind = (typeof reviewDecisions)[number];

/** Longest operator name, note and deciding client id, before trimming. */
export const reviewTextMaxLength = { operator: 100, note: 1_000, decidedBy: 100 } as const;

export interface CheckedReviewDecision {
  decision: ReviewDecisionKind;
  operator: string;
  note: string;
  /** The API client that sent it; absent when typed in Temporal UI or the CLI. */
  decidedBy?: string;
}

export type ReviewDecisionCheck =
  | { ok: true; decision: CheckedReviewDecision }
  /** The fields that are wrong (`payload` when it is not an object at all), for the audit note. */
  | { ok: false; fields: string[] };

const knownFields = new Set(['decision', 'operator', 'note', 'decidedBy']);

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
  const decision = fields.decision;
  const operator = text(fields.operator, reviewTextMaxLength.operator);
  const note = text(fields.note, reviewTextMaxLength.note);
  const decidedBy =
    fields.decidedBy === undefined ? undefined : text(fields.decidedBy, reviewTextMaxLength.decidedBy);
  const wrong = [
    ...(isReviewDecisionKind(decision) ? [] : ['decision']),
    ...(operator === undefined ? ['operator'] : []),
    ...(note === undefined ? ['note'] : []),
    ...(fields.decidedBy !== undefined && decidedBy === undefined ? ['decidedBy'] : []),
    ...unknownFieldNames(Object.keys(fields)),
  ];
  if (wrong.length > 0 || !isReviewDecisionKind(decision) || !operator || !note) {
    return { ok: false, fields: wrong };
  }
  // Present exactly when the payload names it, as zod's output has it.
  const by = Object.hasOwn(fields, 'decidedBy') ? { decidedBy } : {};
  return { ok: true, decision: { decision, operator, note, ...by } };
}
