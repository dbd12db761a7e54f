/**
 * The export's rows, unit by unit: CSV cells are quoted as RFC 4180 says and never run as a
 * spreadsheet formula; a row shows phone and line numbers and card codes only when revealed.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { csvCell, exportRow } from '../../src/statements/order-export.service';
import type { OrderView } from '../../src/orders/order.service';

const view = (overrides: Partial<OrderView>): OrderView =>
  ({
    ref: 'R1',
    client: 'acme',
    type: 'internet_topup',
    status: 'FULFILLED',
    request: { type: 'internet_topup', ref: 'R1', lineType: 'ADSL', number: '021123456', value: 1000 },
    result: { cardCode: '1234-5678', transactionNumber: 'T1' },
    acceptedAt: '2026-11-26T10:00:00.000Z',
    updatedAt: '2026-11-26T10:00:05.000Z',
    completedAt: '2026-11-26T10:00:05.000Z',
    timeline: [],
    workflowStatus: 'COMPLETED',
    ...overrides,
  }) as OrderView;

describe('export rows', () => {
  it('CSV cells: plain, quoted when they hold a separator, quote or line break, and never a formula', () => {
    assert.equal(csvCell(undefined), '');
    assert.equal(csvCell(1500), '1500');
    assert.equal(csvCell('GOOGLE_PLAY'), 'GOOGLE_PLAY');
    assert.equal(csvCell('a,b'), '"a,b"');
    assert.equal(csvCell('say "hi"'), '"say ""hi"""');
    assert.equal(csvCell('two\nlines'), '"two\nlines"');
    assert.equal(csvCell('=HYPERLINK("x")'), `"'=HYPERLINK(""x"")"`);
    assert.equal(csvCell('+1'), "'+1");
    assert.equal(csvCell('@SUM(A1)'), "'@SUM(A1)");
    assert.equal(csvCell('-2'), "'-2");
  });

  it('a row holds the line number and card code only when revealed', () => {
    const masked = exportRow(view({}), 'p1', false);
    assert.deepEqual(masked, {
      position: 'p1',
      ref: 'R1',
      client: 'acme',
      type: 'internet_topup',
      status: 'FULFILLED',
      amount: undefined,
      value: 1000,
      productId: undefined,
      typeId: undefined,
      quantity: undefined,
      providerRef: undefined,
      providerReference: undefined,
      acceptedAt: '2026-11-26T10:00:00.000Z',
      completedAt: '2026-11-26T10:00:05.000Z',
      reviewDecision: undefined,
      reviewDecidedBy: undefined,
      reviewOperator: undefined,
    });
    assert.ok(!JSON.stringify(masked).includes('021123456'));
    assert.ok(!JSON.stringify(masked).includes('1234-5678'));
    const revealed = exportRow(view({}), 'p1', true);
    assert.equal(revealed.lineNumber, '021123456');
    assert.equal(revealed.cardCode, '1234-5678');
  });
});
