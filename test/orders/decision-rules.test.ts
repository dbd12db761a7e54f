/**
 * The decision table (docs/operators.md "Operator's guide: orders that need review"): what an operator's FULFILLED / REFUNDED decision
 * meets for every answer the provider can give, and when the watch reopens an order. A pure
 * module, tested alone; the workflow and API tests run the same cases against the sandbox.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  contradictsLater,
  judgeDecision,
  type DecisionAnswer,
  type DecisionCase,
  type Verdict,
} from '../../src/orders/lifecycle/decision-rules.workflow';
import type { OrderType } from '../../contract/order';

const status = (s: 'PENDING' | 'HANDLING' | 'FULFILLED' | 'REFUNDED' | 'UNKNOWN_ERROR', usable = true) =>
  ({ kind: 'status', status: s, usable, ...(usable ? {} : { problem: 'wrong number' }) }) as DecisionAnswer;

function verdictOf(
  decision: DecisionCase['decision'],
  answer: DecisionAnswer,
  orderType: OrderType = 'mobile_topup',
  bringsOrderId = false,
): string {
  const verdict: Verdict = judgeDecision({ decision, orderType, bringsOrderId, answer });
  return verdict.verdict === 'refused'
    ? `refused ${verdict.kind}${verdict.forceable ? ' (forceable)' : ''}`
    : verdict.verdict;
}

describe('judgeDecision', () => {
  it('the provider contradicts: REFUNDED against FULFILLED, FULFILLED against REFUNDED, REFUNDED while PENDING or HANDLING', () => {
    assert.equal(verdictOf('REFUNDED', status('FULFILLED')), 'refused contradicted (forceable)');
    assert.equal(verdictOf('FULFILLED', status('REFUNDED')), 'refused contradicted (forceable)');
    assert.equal(verdictOf('REFUNDED', status('PENDING')), 'refused contradicted (forceable)');
    assert.equal(verdictOf('REFUNDED', status('HANDLING')), 'refused contradicted (forceable)');
  });

  it('the provider confirms: the same final status, with a FULFILLED answer that matches the order', () => {
    assert.equal(verdictOf('FULFILLED', status('FULFILLED')), 'confirmed');
    assert.equal(verdictOf('REFUNDED', status('REFUNDED')), 'confirmed');
    assert.equal(verdictOf('FULFILLED', status('FULFILLED', false)), 'refused contradicted (forceable)');
  });

  it('FULFILLED while the provider is still PENDING or HANDLING: refused as not confirmed yet (forceable)', () => {
    for (const open of ['PENDING', 'HANDLING'] as const) {
      assert.equal(verdictOf('FULFILLED', status(open)), 'refused unconfirmed (forceable)');
      assert.equal(verdictOf('FULFILLED', status(open), 'gift_card'), 'refused unconfirmed (forceable)');
    }
  });

  it('a gift card given its orderId while the provider still processes it: polling resumes', () => {
    assert.equal(verdictOf('FULFILLED', status('HANDLING'), 'gift_card', true), 'resume');
    assert.equal(
      verdictOf('REFUNDED', status('HANDLING'), 'gift_card', true),
      'refused contradicted (forceable)',
    );
  });

  it('UNKNOWN_ERROR: FULFILLED applies unconfirmed (watched); REFUNDED waits for the provider, as it documents (forceable)', () => {
    assert.equal(verdictOf('FULFILLED', status('UNKNOWN_ERROR')), 'unconfirmed');
    assert.equal(verdictOf('REFUNDED', status('UNKNOWN_ERROR')), 'refused unconfirmed (forceable)');
    const verdict = judgeDecision({
      decision: 'REFUNDED',
      orderType: 'mobile_topup',
      bringsOrderId: false,
      answer: status('UNKNOWN_ERROR'),
    });
    assert.ok(verdict.verdict === 'refused');
    assert.match(verdict.reason, /UNKNOWN_ERROR: its support resolves it .* within 1-24 h/);
    assert.match(verdict.reason, /not to refund before it says so/);
  });

  it('a status nobody documented: FULFILLED applies unconfirmed; REFUNDED waits for the provider (forceable)', () => {
    const odd = { kind: 'status', status: 'ON_HOLD', usable: false } as DecisionAnswer;
    assert.equal(verdictOf('FULFILLED', odd), 'unconfirmed');
    assert.equal(verdictOf('REFUNDED', odd), 'refused unconfirmed (forceable)');
  });

  it('the provider does not know the top-up: REFUNDED applies (nothing was sent), FULFILLED is contradicted', () => {
    assert.equal(verdictOf('REFUNDED', { kind: 'not-found' }), 'unconfirmed');
    assert.equal(verdictOf('FULFILLED', { kind: 'not-found' }), 'refused contradicted (forceable)');
  });

  it('an orderId the provider does not know is refused whatever the decision, and force cannot apply it', () => {
    assert.equal(verdictOf('FULFILLED', { kind: 'not-found' }, 'gift_card', true), 'refused invalid');
    assert.equal(verdictOf('REFUNDED', { kind: 'not-found' }, 'gift_card', true), 'refused invalid');
  });

  it('the provider cannot be asked: refused as unconfirmed (forceable)', () => {
    assert.equal(verdictOf('FULFILLED', { kind: 'failed' }), 'refused unconfirmed (forceable)');
    assert.equal(verdictOf('REFUNDED', { kind: 'failed' }), 'refused unconfirmed (forceable)');
  });

  it('a gift card with no orderId anywhere: REFUNDED applies unchecked; FULFILLED needs the orderId (or force)', () => {
    assert.equal(verdictOf('REFUNDED', { kind: 'no-reference' }, 'gift_card'), 'unconfirmed');
    assert.equal(
      verdictOf('FULFILLED', { kind: 'no-reference' }, 'gift_card'),
      'refused invalid (forceable)',
    );
  });

  it('every refusal says why in words that name what the provider said', () => {
    const verdict = judgeDecision({
      decision: 'REFUNDED',
      orderType: 'mobile_topup',
      bringsOrderId: false,
      answer: status('HANDLING'),
    });
    assert.equal(verdict.verdict, 'refused');
    assert.match(verdict.verdict === 'refused' ? verdict.reason : '', /HANDLING: it may still fulfil/);
  });
});

describe('contradictsLater (the watch)', () => {
  it('a final status against the decision reopens the order, unless the provider already said it when the decision was taken', () => {
    assert.equal(contradictsLater('REFUNDED', 'HANDLING', 'FULFILLED'), true);
    assert.equal(contradictsLater('FULFILLED', 'UNKNOWN_ERROR', 'REFUNDED'), true);
    assert.equal(
      contradictsLater('REFUNDED', undefined, 'FULFILLED'),
      true,
      'the provider did not know the top-up',
    );
    assert.equal(
      contradictsLater('REFUNDED', 'FULFILLED', 'FULFILLED'),
      false,
      'forced past that very answer',
    );
  });

  it('PARTIALLY_FILLED reopens either decision, unless the operator forced past it', () => {
    assert.equal(contradictsLater('REFUNDED', 'HANDLING', 'PARTIALLY_FILLED'), true);
    assert.equal(contradictsLater('FULFILLED', undefined, 'PARTIALLY_FILLED'), true);
    assert.equal(contradictsLater('FULFILLED', 'PARTIALLY_FILLED', 'PARTIALLY_FILLED'), false);
  });

  it('the same final status, or one still open, is no contradiction', () => {
    assert.equal(contradictsLater('REFUNDED', 'HANDLING', 'REFUNDED'), false);
    for (const open of ['PENDING', 'HANDLING', 'UNKNOWN_ERROR'] as const) {
      assert.equal(contradictsLater('REFUNDED', 'UNKNOWN_ERROR', open), false);
    }
  });
});
