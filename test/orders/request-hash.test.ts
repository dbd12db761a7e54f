/**
 * The idempotency fingerprint of an order (`requestHash`, stored in the workflow memo) must not
 * change when its canonical JSON moved from a hand-written function to the `canonicalize` library:
 * a client's retry of an order accepted before the upgrade would otherwise look like a different
 * request (409). The hashes below were computed by the hand-written function (kept here as
 * `handWritten`), and the property tests compare the two over every request shape the API accepts.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { canonicalJson, requestHash } from '../../src/orders/order.service';
import { OrderRequest } from '../../contract/schemas';

/** The function the fingerprints of orders accepted so far were made with (until issue 17). */
function handWritten(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(handWritten).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${handWritten(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Requests as the API parses them, with the fingerprint the hand-written function gave them. */
const golden: [unknown, string][] = [
  [
    {
      type: 'mobile_topup',
      ref: 'ORD-2025-000123',
      planCode: 'PREPAID_DJEZZY',
      msisdn: '0551234567',
      amount: 500,
    },
    '1a5922d097f3df8dfef8ce940cc8ffb38a44e6009b38d322dca47daa115631c1',
  ],
  [
    { value: 1000, number: '021123456', lineType: 'ADSL', ref: 'ORD-2025-000124', type: 'internet_topup' },
    'c54fa97be65b3fa2141a43132218c6c37e292207da7a93202e74bc6d8ca03309',
  ],
  [
    {
      quantity: 2,
      typeId: 'GOOGLE_PLAY_1000',
      type: 'gift_card',
      productId: 'GOOGLE_PLAY',
      ref: 'ORD-2025-000125',
    },
    'f550b9bf344f264e63b9e5529fc72b31eee06417031315fb92e7a0c327ef0974',
  ],
  [
    // Non-ASCII, astral, control and escaped characters, U+2028 and a lone surrogate (zod admits it).
    {
      type: 'gift_card',
      ref: 'r.1_x-2',
      productId: 'Café ☕ 𝄞 日本',
      typeId: 'é\u0000"\\\n\u2028\ud800',
      quantity: 100,
    },
    '37cbbcf5d42d12c1cc968cf1a96a77d8322be2dbfbdbda490fc7a6f002f04281',
  ],
];

/** Any text, lone surrogates included: productId and typeId are free strings. */
const anyText = (max: number) =>
  fc
    .array(
      fc.oneof(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
        fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code)),
      ),
      { minLength: 1, maxLength: max },
    )
    .map((chars) => chars.join('').slice(0, max));

const ref = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/);
const dinars = fc.integer({ min: 1, max: 100_000 });
const orderRequest = fc.oneof(
  fc.record({
    type: fc.constant('mobile_topup'),
    ref,
    planCode: fc.stringMatching(/^PREPAID_[A-Z0-9]{1,12}$/),
    msisdn: fc.stringMatching(/^0[567]\d{8}$/),
    amount: dinars,
  }),
  fc.record({
    type: fc.constant('internet_topup'),
    ref,
    lineType: fc.constant('ADSL'),
    number: fc.stringMatching(/^0\d{8}$/),
    value: dinars,
  }),
  fc.record({
    type: fc.constant('gift_card'),
    ref,
    productId: anyText(64),
    typeId: anyText(64),
    quantity: fc.integer({ min: 1, max: 100 }),
  }),
);

/** The same fields inserted in another order, as a client's JSON may list them. */
const reordered = orderRequest.chain((request) =>
  fc
    .shuffledSubarray(Object.entries(request), { minLength: Object.keys(request).length })
    .map((entries) => [request, Object.fromEntries(entries)] as const),
);

describe('request fingerprint (canonical JSON)', () => {
  it('keeps the fingerprints orders were accepted with', () => {
    for (const [request, hash] of golden) {
      const parsed = OrderRequest.parse(request);
      assert.equal(requestHash(parsed), hash);
      assert.equal(sha256(canonicalJson(request)), hash);
    }
  });

  it('equals the hand-written canonical JSON for every request the API accepts, in any key order', () => {
    fc.assert(
      fc.property(reordered, ([request, shuffled]) => {
        const parsed = OrderRequest.parse(shuffled);
        assert.equal(canonicalJson(parsed), handWritten(request));
        assert.equal(requestHash(parsed), sha256(handWritten(request)));
      }),
      { numRuns: 2_000 },
    );
  });

  it('equals the hand-written canonical JSON for nested objects, arrays and unicode keys', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => assert.equal(canonicalJson(value), handWritten(value))),
      { numRuns: 2_000 },
    );
  });
});
