/**
 * The workflows' zod-free review decision check must agree with the API's zod schema: same
 * verdict, same cleaned value, and the same fields named when it refuses.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  checkReviewDecision,
  reviewDecisions,
  reviewTextMaxLength,
  unknownFieldsNamed,
} from '../../src/orders/review-decision';
import { ReviewDecision } from '../../src/orders/schemas';

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

const payloadLike: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record(
      {
        decision: decisionLike,
        operator: textAround(reviewTextMaxLength.operator),
        note: textAround(reviewTextMaxLength.note),
        decidedBy: textAround(reviewTextMaxLength.decidedBy),
        extra: fc.anything(),
      },
      { requiredKeys: [] },
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

describe('checkReviewDecision', () => {
  it('accepts, cleans and refuses exactly as the API schema does', () => {
    fc.assert(
      fc.property(payloadLike, (payload) => {
        const byZod = ReviewDecision.safeParse(payload);
        const byCheck = checkReviewDecision(payload);
        assert.equal(byCheck.ok, byZod.success, JSON.stringify(payload));
        if (byCheck.ok && byZod.success) {
          assert.deepEqual(byCheck.decision, byZod.data);
        } else if (!byCheck.ok && !byZod.success) {
          assert.deepEqual([...byCheck.fields].sort(), zodFields(byZod.error));
        }
      }),
      { numRuns: 2_000 },
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
    assert.deepEqual(checkReviewDecision({ decision: 'MAYBE', operator: '   ', note: 'x', by: 'me' }), {
      ok: false,
      fields: ['decision', 'operator', 'by'],
    });
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
    // A field given as undefined (not JSON, but possible from code): the same output as zod's.
    const undefinedBy = { decision: 'FULFILLED', operator: 'a', note: 'n', decidedBy: undefined };
    const check = checkReviewDecision(undefinedBy);
    assert.ok(check.ok);
    assert.deepEqual(check.decision, ReviewDecision.parse(undefinedBy));
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
