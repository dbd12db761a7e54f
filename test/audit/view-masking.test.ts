/**
 * One masking rule for every reader of an order that is not its owner (src/audit/mask.ts): phone
 * and line numbers and card codes read "[masked]", and digit runs in free text — an operator's
 * note, the provider's refund message — are masked too, on the order's view, the review's answer
 * and the audit export alike. Only `reveal=true` with audit:reveal shows them, and that is recorded
 * as an audit reveal is. The owner reads its own order in clear: it sent that data.
 *
 * End to end: real HTTP against createApp with the test clients, a real Temporal server, a worker
 * running the real workflows and the provider sandbox, whose outcome change gives a refund a
 * message that names the customer's numbers (as a real provider's free text may).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Problem } from '../../src/http/errors';
import type { OrderView } from '../../src/orders/order.service';
import { OrderView as OrderViewSchema } from '../../src/http/schemas';
import {
  apiTestConfig,
  capturingLogger,
  type ApiResponse,
  type TestApi,
  testCallerKey,
  type TestCaller,
} from '../helpers/api';
import type { OrderAudit } from '../../src/audit/order-audit';
import { PrometheusMetrics } from '../../src/observability/prometheus';
import { providerRefFor } from '../../src/orders/provider-ref';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { internetRequest, mobileRequest, scaledTimings, refsPrefixed } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const MASKED = '[masked]';
const newRef = refsPrefixed('VM');

/**
 * What the provider tells the customer's side, naming three numbers: as a note would write one,
 * spaced, and in Arabic-Indic digits (its text is Arabic).
 */
const REFUND_MESSAGE = 'تعذر الشحن، اتصلوا بالرقم 0661234567 أو 0555 12 34 56 أو ٠٧٧٠١٢٣٤٥٦';
const REFUND_MESSAGE_MASKED = `تعذر الشحن، اتصلوا بالرقم ${MASKED} أو ${MASKED} أو ${MASKED}`;
/** The numbers in it, as they must never show to a masked reader. */
const REFUND_NUMBERS = ['0661234567', '0555 12 34 56', '٠٧٧٠١٢٣٤٥٦'];
/** An operator's note naming the customer's number and a voucher, as the example. */
const NOTE = 'customer 0555123456 confirmed, voucher 1234567890123456';
const NOTE_MASKED = `customer ${MASKED} confirmed, voucher ${MASKED}`;
const NOTE_NUMBERS = ['0555123456', '1234567890123456'];
const LINE_NUMBER = internetRequest('x').number;

function assertProblem(res: ApiResponse, status: number, type: string): Problem {
  assert.equal(res.status, status, res.text);
  const problem = res.body as Problem;
  assert.equal(problem.type, `/problems/${type}`, res.text);
  return problem;
}

/** A 200 view, valid against the OpenAPI schema (a masked number included). */
function okView(res: ApiResponse<OrderView>): OrderView {
  assert.equal(res.status, 200, res.text);
  const parsed = OrderViewSchema.safeParse(res.body);
  assert.ok(parsed.success, `schema-valid view: ${parsed.error?.message ?? ''}`);
  return res.body;
}

function assertNone(text: string, secrets: string[], what: string): void {
  for (const secret of secrets) assert.ok(!text.includes(secret), `${what}: ${secret} shows`);
}

describe('every reader but the owner sees an order masked', () => {
  let stack: OrderStack<'main'>;
  let api: TestApi;
  const logs = capturingLogger();
  const metrics = new PrometheusMetrics({ processMetrics: false });
  const seed = {
    /** REFUNDED, its refund message naming numbers. */
    refunded: newRef('refunded'),
    /** In review (UNKNOWN_ERROR), then decided by the operator with a note naming numbers. */
    decided: newRef('decided'),
    /** FULFILLED with a line number and a card code. */
    internet: newRef('internet'),
  };
  const msisdn = {
    refunded: sandboxSpecialNumbers.refunded,
    decided: sandboxSpecialNumbers.unknownError,
  };
  /** What the owner read of each, in clear. */
  const owners = new Map<string, OrderView>();
  /** The operator's decision, answered with the order's view. */
  let decisionAnswer: ApiResponse<OrderView>;

  const view = (caller: TestCaller, ref: string, query = '') =>
    api.request<OrderView>('GET', `/v1/orders/${ref}${query}`, { apiKey: testCallerKey(caller) });
  const audit = (caller: TestCaller, ref: string, query = '') =>
    api.request<OrderAudit>('GET', `/v1/orders/${ref}/audit${query}`, { apiKey: testCallerKey(caller) });
  const revealLines = () => logs.lines.filter((l) => l.msg === 'audit export with secrets revealed');
  const reveals = async () =>
    Object.fromEntries(
      ((await metrics.registry.getSingleMetric('topup_audit_reveals_total')?.get())?.values ?? []).map(
        (v) => [v.labels.client, v.value],
      ),
    );

  async function waitFor(ref: string, done: (v: OrderView) => boolean): Promise<OrderView> {
    const deadline = Date.now() + 60_000;
    let last: OrderView | undefined;
    while (Date.now() < deadline) {
      const res = await view('shop', ref);
      assert.equal(res.status, 200, res.text);
      last = res.body;
      if (done(last)) return last;
      await sleep(100);
    }
    throw new Error(`${ref}: not there in time; last ${JSON.stringify(last?.timeline)}`);
  }

  before(async () => {
    stack = await startOrderStack({
      name: 'view-masking',
      workers: { main: {} },
      api: {
        timingsFor: () => scaledTimings(),
        logger: logs.logger,
        metrics,
        config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '5000' }),
      },
    });
    api = stack.api;
    // The refund's message is the provider's free text: set before the send, it is the answer's.
    await stack.sandbox.changeTopup(providerRefFor('shop', seed.refunded), {
      status: 'REFUNDED',
      refund_message: REFUND_MESSAGE,
    });
    for (const request of [
      mobileRequest(seed.refunded, msisdn.refunded),
      mobileRequest(seed.decided, msisdn.decided),
      internetRequest(seed.internet),
    ]) {
      const res = await api.request('POST', '/v1/orders', { apiKey: testCallerKey('shop'), body: request });
      assert.equal(res.status, 201, res.text);
    }
    await Promise.all([
      waitFor(seed.refunded, (v) => v.status === 'REFUNDED'),
      waitFor(seed.decided, (v) => v.status === 'NEEDS_REVIEW'),
      waitFor(seed.internet, (v) => v.status === 'FULFILLED'),
    ]);
    // Forced: the provider still answers UNKNOWN_ERROR, which a plain REFUNDED waits out.
    decisionAnswer = await api.request<OrderView>('POST', `/v1/orders/${seed.decided}/review?client=shop`, {
      apiKey: testCallerKey('operator'),
      body: { decision: 'REFUNDED', operator: 'amina', note: NOTE, force: true },
    });
    assert.equal(decisionAnswer.status, 200, decisionAnswer.text);
    await waitFor(seed.decided, (v) => v.status === 'REFUNDED');
    for (const ref of Object.values(seed)) owners.set(ref, okView(await view('shop', ref)));
  });

  after(async () => {
    await stack?.stop();
  });

  it('the owner reads its own order in clear: numbers, card code, note and the provider’s text', () => {
    const refunded = owners.get(seed.refunded)!;
    assert.equal(refunded.request.type === 'mobile_topup' && refunded.request.msisdn, msisdn.refunded);
    assert.equal(refunded.result?.refundMessage, REFUND_MESSAGE);
    const decided = owners.get(seed.decided)!;
    assert.equal(decided.review?.resolution?.note, NOTE);
    const internet = owners.get(seed.internet)!;
    assert.equal(internet.request.type === 'internet_topup' && internet.request.number, LINE_NUMBER);
    assert.ok(internet.result?.cardCode && internet.result.cardCode !== MASKED);
  });

  it('audit:read without audit:reveal: numbers, card code, note and the provider’s text masked, and nothing else', async () => {
    for (const ref of Object.values(seed)) {
      const res = await view('ledger', ref, '?client=shop');
      const masked = okView(res);
      const own = owners.get(ref)!;
      assertNone(
        res.text,
        [msisdn.refunded, msisdn.decided, LINE_NUMBER, ...NOTE_NUMBERS, ...REFUND_NUMBERS],
        ref,
      );
      if (own.result?.cardCode) assert.ok(!res.text.includes(own.result.cardCode), `${ref}: card code shows`);
      // Only those fields: the rest of the view is the owner's.
      assert.deepEqual(masked, maskedAsExpected(own), ref);
    }
  });

  it('audit:reveal without reveal=true reads masked too; reveal=true shows it in clear and is recorded', async () => {
    const before = revealLines().length;
    const masked = okView(await view('auditor', seed.refunded, '?client=shop'));
    assert.equal(masked.result?.refundMessage, REFUND_MESSAGE_MASKED);
    assert.equal(revealLines().length, before, 'a masked read is no reveal');

    const countsBefore = await reveals();
    const res = await view('auditor', seed.refunded, '?client=shop&reveal=true');
    assert.deepEqual(okView(res), owners.get(seed.refunded), 'the owner’s view, in clear');
    const lines = revealLines().slice(before);
    assert.equal(lines.length, 1, 'one reveal, logged');
    assert.deepEqual(lines[0]!.revealedBy, { client: 'auditor', keyId: 'k1' });
    assert.deepEqual(lines[0]!.auditOf, { client: 'shop', ref: seed.refunded });
    assert.ok(!Number.isNaN(Date.parse(String(lines[0]!.at))));
    assert.equal((await reveals()).auditor, (countsBefore.auditor ?? 0) + 1, 'and counted');
    assertNone(logs.raw.join('\n'), [...REFUND_NUMBERS, msisdn.refunded], 'no revealed value in the log');
  });

  it('reveal=true without audit:reveal is a 403 naming the scope, before any order is looked up', async () => {
    const before = revealLines().length;
    for (const caller of ['ledger', 'operator', 'shop'] as const) {
      const res = await view(
        caller,
        seed.refunded,
        caller === 'shop' ? '?reveal=true' : '?client=shop&reveal=true',
      );
      assert.match(assertProblem(res, 403, 'forbidden').detail, /audit:reveal/);
      assertNone(res.text, [...REFUND_NUMBERS, msisdn.refunded], caller);
    }
    assertProblem(await view('auditor', seed.refunded, '?client=shop&reveal=yes'), 400, 'validation-error');
    assert.equal(revealLines().length, before, 'a refused reveal is no reveal');
  });

  it('the operator reads an order it decided masked, and the decision’s answer was masked too', async () => {
    const res = await view('operator', seed.decided, '?client=shop');
    const masked = okView(res);
    assertNone(res.text, [...NOTE_NUMBERS, msisdn.decided], 'operator view');
    assert.deepEqual(masked, maskedAsExpected(owners.get(seed.decided)!));
    assert.equal(masked.review?.resolution?.note, NOTE_MASKED);

    okView(decisionAnswer);
    assertNone(decisionAnswer.text, [...NOTE_NUMBERS, msisdn.decided], 'the review’s answer');
    assert.equal(
      decisionAnswer.body.request.type === 'mobile_topup' && decisionAnswer.body.request.msisdn,
      MASKED,
    );
  });

  it('another back office gets 404, a client without orders:read 403, no key 401: none shows anything', async () => {
    for (const query of ['', '?client=shop']) {
      const res = await view('acme', seed.refunded, query);
      assertProblem(res, 404, 'order-not-found');
      assertNone(res.text, [...REFUND_NUMBERS, msisdn.refunded], `acme${query}`);
    }
    assert.match(
      assertProblem(await view('writer', seed.refunded, '?client=shop'), 403, 'forbidden').detail,
      /orders:read/,
    );
    assertProblem(await view('nobody', seed.refunded, '?client=shop'), 401, 'unauthorized');
  });

  it('the list shows no number to any reader (its rows come from search attributes)', async () => {
    for (const [caller, query] of [
      ['ledger', '&client=shop'],
      ['operator', '&client=shop'],
    ] as const) {
      const res = await api.request('GET', `/v1/orders?pageSize=100${query}`, {
        apiKey: testCallerKey(caller),
      });
      assert.equal(res.status, 200, res.text);
      assertNone(
        res.text,
        [...REFUND_NUMBERS, ...NOTE_NUMBERS, LINE_NUMBER, msisdn.refunded, msisdn.decided],
        caller,
      );
    }
  });

  it('the masked audit export masks the provider’s text as it masks notes; reveal=true shows it', async () => {
    const masked = await audit('ledger', seed.refunded, '?client=shop');
    assert.equal(masked.status, 200, masked.text);
    assert.equal(masked.body.secrets, 'masked');
    assertNone(masked.text, [...REFUND_NUMBERS, msisdn.refunded], 'masked audit');
    assert.ok(masked.text.includes(REFUND_MESSAGE_MASKED), 'the message, its numbers masked');
    const decided = await audit('ledger', seed.decided, '?client=shop');
    assert.equal(decided.status, 200, decided.text);
    assertNone(decided.text, NOTE_NUMBERS, 'masked audit of the decision');

    const revealed = await audit('auditor', seed.refunded, '?client=shop&reveal=true');
    assert.equal(revealed.status, 200, revealed.text);
    assert.equal(revealed.body.secrets, 'revealed');
    assert.ok(revealed.text.includes(REFUND_MESSAGE));
  });
});

/**
 * The owner's view as a masked reader must read it: every phone and line number and card code
 * "[masked]", digit runs in the note and the provider's text masked, nothing else changed.
 */
function maskedAsExpected(own: OrderView): OrderView {
  const { request, result, review, failure, watch } = own;
  const digits = (text: string) => text.replace(/\p{Nd}(?:[^\p{L}\p{Nd}]?\p{Nd}){5,}/gu, MASKED);
  return {
    ...own,
    request:
      request.type === 'mobile_topup'
        ? { ...request, msisdn: MASKED }
        : request.type === 'internet_topup'
          ? { ...request, number: MASKED }
          : request,
    ...(result && {
      result: {
        ...result,
        ...(result.msisdn !== undefined && { msisdn: MASKED }),
        ...(result.cardCode !== undefined && { cardCode: MASKED }),
        ...(result.refundMessage !== undefined && { refundMessage: digits(result.refundMessage) }),
      },
    }),
    ...(failure && { failure: { ...failure, message: digits(failure.message) } }),
    ...(watch?.lastCheck && {
      watch: { ...watch, lastCheck: { ...watch.lastCheck, answer: digits(watch.lastCheck.answer) } },
    }),
    ...(review && {
      review: {
        ...review,
        ...(review.evidence !== undefined && { evidence: digits(review.evidence) }),
        ...(review.refundMessage !== undefined && { refundMessage: digits(review.refundMessage) }),
        ...(review.resolution && {
          resolution: {
            ...review.resolution,
            note: digits(review.resolution.note),
            ...(review.resolution.provider && {
              provider: { ...review.resolution.provider, answer: digits(review.resolution.provider.answer) },
            }),
            ...(review.resolution.forcedPast !== undefined && {
              forcedPast: digits(review.resolution.forcedPast),
            }),
          },
        }),
      },
    }),
  };
}
