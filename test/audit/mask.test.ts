/**
 * The one masking rule (src/audit/mask.ts), unit by unit: which fields are masked whole, which
 * free text has its digit runs masked, and what a digit run is. The routes that apply it are
 * tested end to end in test/audit/view-masking.test.ts and test/audit/story.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MASKED, maskCardCodes, maskDigitRuns, maskSecrets } from '../../src/audit/mask';

describe('maskDigitRuns', () => {
  for (const [text, masked] of [
    ['customer 0555123456 confirmed', `customer ${MASKED} confirmed`],
    ['call 0555 12 34 56 or 0555-123-456 or 06.61.23.45.67', `call ${MASKED} or ${MASKED} or ${MASKED}`],
    ['+213 555 12 34 56', `+${MASKED}`],
    ['اتصلوا بالرقم ٠٧٧٠١٢٣٤٥٦', `اتصلوا بالرقم ${MASKED}`],
    ['voucher 1234567890123456, ticket 4412, 12345 left', `voucher ${MASKED}, ticket 4412, 12345 left`],
    // Two characters between digits end a run: "ticket 4412, 2 cards" is two short runs.
    ['ticket 4412, 2 cards', 'ticket 4412, 2 cards'],
    // The price of catching spaced numbers: a date in free text is masked too.
    ['refunded on 2025-01-31', `refunded on ${MASKED}`],
  ] as const) {
    it(`${JSON.stringify(text)} → ${JSON.stringify(masked)}`, () =>
      assert.equal(maskDigitRuns(text), masked));
  }
});

describe('maskSecrets', () => {
  it('masks numbers and card codes whole by field, and digit runs in free text, wherever they sit', () => {
    const view = {
      ref: 'R-1234567',
      request: { type: 'mobile_topup', msisdn: '0555123456', amount: 500 },
      result: {
        msisdn: '0555123456',
        cardCode: '1234567890123456',
        transactionNumber: '998877665544',
        cards: [{ code: 'ABCD-1234-5678', serial: 'SN123456789' }],
        refundMessage: 'اتصلوا بالرقم 0555 12 34 56',
        suggestedOffers: [{ planCode: 'PIXX_500', amount: 500, typename: 'Offre 0555123456' }],
      },
      failure: { code: 'INVALID_NUMBER', message: 'number 0555123456 is not a subscriber' },
      review: {
        reason: 'the provider reports UNKNOWN_ERROR',
        evidence: 'provider status UNKNOWN_ERROR; the provider says: "0555123456"',
        resolution: {
          note: 'customer 0555123456 confirmed',
          provider: { status: 'REFUNDED', answer: 'the status check failed (0555123456 unknown)' },
          forcedPast: 'the provider answers HANDLING (0555123456)',
        },
      },
      // The provider's own names in an activity's result (the audit story).
      check: { MSSIDN: '0555123456', card_code: '1234567890123456', refund_message: 'call 0555123456' },
      providerCards: { cards: [{ value: '1234567890123456', serial: 'SN1' }] },
      timeline: [{ at: '2025-01-31T10:00:00.000Z', status: 'FULFILLED', event: 'Order accepted' }],
    };
    assert.deepEqual(maskSecrets(view), {
      ref: 'R-1234567',
      request: { type: 'mobile_topup', msisdn: MASKED, amount: 500 },
      result: {
        msisdn: MASKED,
        cardCode: MASKED,
        transactionNumber: '998877665544',
        cards: [{ code: MASKED, serial: 'SN123456789' }],
        refundMessage: `اتصلوا بالرقم ${MASKED}`,
        suggestedOffers: [{ planCode: 'PIXX_500', amount: 500, typename: `Offre ${MASKED}` }],
      },
      failure: { code: 'INVALID_NUMBER', message: `number ${MASKED} is not a subscriber` },
      review: {
        reason: 'the provider reports UNKNOWN_ERROR',
        evidence: `provider status UNKNOWN_ERROR; the provider says: "${MASKED}"`,
        resolution: {
          note: `customer ${MASKED} confirmed`,
          provider: { status: 'REFUNDED', answer: `the status check failed (${MASKED} unknown)` },
          forcedPast: `the provider answers HANDLING (${MASKED})`,
        },
      },
      check: { MSSIDN: MASKED, card_code: MASKED, refund_message: `call ${MASKED}` },
      providerCards: { cards: [{ value: MASKED, serial: 'SN1' }] },
      // Times, refs and the workflow's own timeline are no free text: left as they are.
      timeline: [{ at: '2025-01-31T10:00:00.000Z', status: 'FULFILLED', event: 'Order accepted' }],
    });
  });

  it('leaves the value it masks as it was', () => {
    const view = { request: { msisdn: '0555123456' } };
    maskSecrets(view);
    assert.equal(view.request.msisdn, '0555123456');
  });
});

describe('maskCardCodes (an owner’s webhook endpoint without cardCodes)', () => {
  it('masks the card codes and nothing else: the rest is the owner’s own data', () => {
    const view = {
      request: { msisdn: '0555123456' },
      result: { cardCode: '1234', cards: [{ code: 'C1', serial: 'S1' }], refundMessage: 'call 0555123456' },
    };
    assert.deepEqual(maskCardCodes(view), {
      request: { msisdn: '0555123456' },
      result: { cardCode: MASKED, cards: [{ code: MASKED, serial: 'S1' }], refundMessage: 'call 0555123456' },
    });
  });
});
