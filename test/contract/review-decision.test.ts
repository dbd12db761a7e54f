/**
 * The workflows' zod-free review decision check must agree with the zod schema of the decision
 * payload: same verdict, same cleaned value, and the same fields named when it refuses. The API's
 * body schema is the payload without `decidedBy` (the API sets that one itself).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  checkReviewDecision,
  reviewDecisions,
  reviewTextMaxLength,
  unknownFieldsNamed,
} from '../../contract/review-decision';
import { ReviewDecisionPayload, ReviewRequest } from '../../contract/schemas';

/** Strings around the interesting edges: blank, padded, exactly at and just over the limit. */
function textAround(max: number): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.constantFrom(
      '',
      ' ',
      '\t\n ',
      '  amina.b  ',
      'x'.repeat(max),
      'x'.repeat(max + 1),
      ` ${'x'.repeat(max - 1)}`,
    ),
    // Whitespace beyond ASCII: no-break space, byte-order mark, line separator, ideographic space.
    fc.constantFrom('\u00a0', '\ufeff', '\u2028x\u2028', '\u3000amina\u3000'),
    fc.string({ minLength: max - 2, maxLength: max + 2 }),
    fc.constantFrom(undefined, null, 42, ['a'], { a: 1 }),
  );
}

const decisionLike = fc.oneof(
  fc.constantFrom(...reviewDecisions),
  fc.constantFrom('fulfilled', 'FAILED', '', undefined, null, 1),
  fc.string({ maxLength: 10 }),
);

const forceLike = fc.constantFrom(true, false, undefined, null, 'true', 1, 0);

/** Provider order ids: valid ones, at and over the length limit, and characters a URL path must not get. */
const orderIdLike = fc.oneof(
  fc.constantFrom('5f1c0a9e8b7d6c5b4a392817', 'a', 'A.b_c-1', 'x'.repeat(64), 'x'.repeat(65)),
  fc.constantFrom('', ' ', 'a/b', '../x', 'a b', 'é', '%2F', undefined, null, 7),
  fc.stringMatching(/^[A-Za-z0-9._\-/ ]{0,70}$/),
);

const payloadLike: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record(
      {
        decision: decisionLike,
        operator: textAround(reviewTextMaxLength.operator),
        note: textAround(reviewTextMaxLength.note),
        force: forceLike,
        orderId: orderIdLike,
        decidedBy: textAround(reviewTextMaxLength.decidedBy),
        extra: fc.anything(),
      },
      { requiredKeys: [] },
    ),
  },
  // Mostly valid decisions, so the cross-field rule (force with RECHECK) is reached often.
  {
    weight: 2,
    arbitrary: fc.record(
      {
        decision: fc.constantFrom(...reviewDecisions),
        operator: fc.constantFrom('amina', ' amina.b '),
        note: fc.constantFrom('checked with the provider'),
        force: forceLike,
        orderId: orderIdLike,
        decidedBy: fc.constantFrom('client-ops', ' ', undefined),
      },
      { requiredKeys: ['decision', 'operator', 'note'] },
    ),
  },
  { weight: 1, arbitrary: fc.anything() },
);

/**
 * The fields zod names: a wrong field by its path, unknown keys listed in one issue. The check
 * names unknown keys too, but only a few and cut short (unknownFieldsNamed), so the same cap is
 * applied to zod's list before comparing.
 */
function zodFields(error: { issues: { path: PropertyKey[]; code: string; keys?: string[] }[] }): string[] {
  const { most, longest } = unknownFieldsNamed;
  const unknown = error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys' ? (issue.keys ?? []) : [],
  );
  const named = unknown
    .slice(0, most)
    .map((key) => (key.length > longest ? `${key.slice(0, longest)}…` : key));
  const wrong = error.issues
    .filter((issue) => issue.code !== 'unrecognized_keys')
    .map((issue) => String(issue.path[0] ?? 'payload'));
  return [
    ...new Set(wrong),
    ...named,
    ...(unknown.length > most ? [`${unknown.length - most} more`] : []),
  ].sort();
}

/** zod keeps an optional key given as `undefined`; the check leaves it out. Both mean "absent". */
function withoutUndefined(value: object): object {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}

describe('checkReviewDecision', () => {
  it('accepts, cleans and refuses exactly as the payload schema does', () => {
    fc.assert(
      fc.property(payloadLike, (payload) => {
        const byZod = ReviewDecisionPayload.safeParse(payload);
        const byCheck = checkReviewDecision(payload);
        assert.equal(byCheck.ok, byZod.success, JSON.stringify(payload));
        if (byCheck.ok && byZod.success) {
          assert.deepEqual(byCheck.decision, withoutUndefined(byZod.data));
        } else if (!byCheck.ok && !byZod.success) {
          assert.deepEqual([...byCheck.fields].sort(), zodFields(byZod.error));
        }
      }),
      { numRuns: 3_000 },
    );
  });

  it('the API body is the payload without decidedBy, which it refuses as an unknown field, and with operator optional', () => {
    fc.assert(
      fc.property(payloadLike, (payload) => {
        const hasDecidedBy = typeof payload === 'object' && payload !== null && 'decidedBy' in payload;
        const byBody = ReviewRequest.safeParse(payload);
        // A key whose value is undefined is absent (JSON cannot carry it), as withoutUndefined says.
        const hasOperator =
          typeof payload === 'object' &&
          payload !== null &&
          (payload as { operator?: unknown }).operator !== undefined;
        if (hasDecidedBy) assert.equal(byBody.success, false);
        else if (hasOperator) assert.equal(byBody.success, ReviewDecisionPayload.safeParse(payload).success);
        // The body may leave `operator` out (the API uses the client's name): as if a valid one were there.
        else {
          const withOperator = { ...(payload as Record<string, unknown>), operator: 'x' };
          assert.equal(byBody.success, ReviewDecisionPayload.safeParse(withOperator).success);
        }
      }),
      { numRuns: 1_000 },
    );
  });

  it('trims a valid decision and names each wrong field', () => {
    assert.deepEqual(
      checkReviewDecision({ decision: 'RECHECK', operator: ' amina.b ', note: ' asked again ' }),
      {
        ok: true,
        decision: { decision: 'RECHECK', operator: 'amina.b', note: 'asked again' },
      },
    );
    assert.deepEqual(
      checkReviewDecision({
        decision: 'FULFILLED',
        operator: 'amina.b',
        note: 'cards found',
        force: false,
        orderId: 'abc123',
        decidedBy: ' client-ops ',
      }),
      {
        ok: true,
        decision: {
          decision: 'FULFILLED',
          operator: 'amina.b',
          note: 'cards found',
          force: false,
          orderId: 'abc123',
          decidedBy: 'client-ops',
        },
      },
    );
    assert.deepEqual(checkReviewDecision({ decision: 'MAYBE', operator: '   ', note: 'x', by: 'me' }), {
      ok: false,
      fields: ['decision', 'operator', 'by'],
    });
    assert.deepEqual(checkReviewDecision({ decision: 'RECHECK', operator: 'a', note: 'x', force: true }), {
      ok: false,
      fields: ['force'],
    });
    assert.deepEqual(
      checkReviewDecision({ decision: 'REFUNDED', operator: 'a', note: 'x', orderId: '../x' }),
      {
        ok: false,
        fields: ['orderId'],
      },
    );
    assert.deepEqual(checkReviewDecision('FULFILLED'), { ok: false, fields: ['payload'] });
  });

  it('keeps the deciding client the API adds, and refuses a blank one', () => {
    assert.deepEqual(
      checkReviewDecision({ decision: 'REFUNDED', operator: 'Amina B.', note: 'refunded', decidedBy: 'ops' }),
      {
        ok: true,
        decision: { decision: 'REFUNDED', operator: 'Amina B.', note: 'refunded', decidedBy: 'ops' },
      },
    );
    assert.deepEqual(
      checkReviewDecision({ decision: 'REFUNDED', operator: 'amina', note: 'refunded', decidedBy: ' ' }),
      { ok: false, fields: ['decidedBy'] },
    );
    // A field given as undefined (not JSON, but possible from code): accepted as absent, as zod does
    // (whose output keeps the key with the value undefined, which JSON drops on the way).
    const undefinedBy = { decision: 'FULFILLED', operator: 'a', note: 'n', decidedBy: undefined };
    const check = checkReviewDecision(undefinedBy);
    assert.ok(check.ok);
    assert.deepEqual(check.decision, withoutUndefined(ReviewDecisionPayload.parse(undefinedBy)));
  });

  it('names a few unknown fields, cut short, however many were typed', () => {
    const pasted = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`${'k'.repeat(100)}${i}`, i]));
    const check = checkReviewDecision({ decision: 'FULFILLED', operator: 'amina.b', note: 'ok', ...pasted });
    assert.deepEqual(check, {
      ok: false,
      fields: [...Array.from({ length: 5 }, () => `${'k'.repeat(40)}…`), '45 more'],
    });
  });
});
