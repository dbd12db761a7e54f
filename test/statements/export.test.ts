/**
 * GET /v1/orders/export end to end: a real Temporal dev server, a real worker and the sandbox over
 * HTTP. A client's orders of every type (one refunded, one decided by an operator after review)
 * are exported as NDJSON and CSV, resumed from a row's position, revealed only with audit:reveal,
 * and reached only as the list reaches them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Problem } from '../../src/http/errors';
import { apiTestConfig, testClients, type TestApi } from '../helpers/api';
import type { OrderView } from '../../src/orders/order.service';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import {
  giftCardRequest,
  internetRequest,
  mobileRequest,
  NORMAL_NUMBER,
  scaledTimings,
} from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const key = (client: keyof typeof testClients) => ({ apiKey: testClients[client].key });
type Row = Record<string, string | number | undefined>;

describe('GET /v1/orders/export', () => {
  let stack: OrderStack<'main'>;
  let api: TestApi;
  const run = randomUUID().slice(0, 8);
  const ref = (label: string) => `EXP-${run}-${label}`;
  const requests = [
    mobileRequest(ref('m1')),
    mobileRequest(ref('m2')),
    mobileRequest(ref('refunded'), sandboxSpecialNumbers.refunded),
    mobileRequest(ref('reviewed'), sandboxSpecialNumbers.unknownError),
    internetRequest(ref('i1')),
    giftCardRequest(ref('g1'), 2),
  ];
  const from = new Date(Date.now() - 1_000).toISOString();
  let to: string;
  const views = new Map<string, OrderView>();

  before(async () => {
    stack = await startOrderStack({
      name: 'export',
      workers: { main: {} },
      api: { timingsFor: () => scaledTimings(), config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '5000' }) },
    });
    api = stack.api;
    for (const request of requests) {
      const res = await api.request('POST', '/v1/orders', { body: request, ...key('acme') });
      assert.equal(res.status, 201, res.text);
    }
    const final = ['FULFILLED', 'REFUNDED', 'FAILED', 'CANCELLED', 'NEEDS_REVIEW'];
    for (const request of requests) {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const res = await api.request<OrderView>('GET', `/v1/orders/${request.ref}`, key('acme'));
        if (final.includes(res.body.status)) break;
        assert.ok(Date.now() < deadline, `${request.ref} settled: ${res.text}`);
        await sleep(200);
      }
    }
    const decided = await api.request('POST', `/v1/orders/${ref('reviewed')}/review?client=acme`, {
      body: { decision: 'FULFILLED', operator: 'amina', note: 'confirmed by phone', force: true },
      ...key('operator'),
    });
    assert.equal(decided.status, 200, decided.text);
    for (const request of requests) {
      const res = await api.request<OrderView>('GET', `/v1/orders/${request.ref}`, key('acme'));
      views.set(request.ref, res.body);
    }
    to = new Date(Date.now() + 60_000).toISOString();
    // Visibility trails the last changes a little.
    await sleep(1_000);
  });

  after(async () => {
    await stack?.stop();
  });

  const range = () => `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
  const ours = (rows: Row[]) => rows.filter((r) => String(r.ref).startsWith(`EXP-${run}-`));

  async function exportNdjson(
    query: string,
    as: keyof typeof testClients,
  ): Promise<{ rows: Row[]; text: string }> {
    const res = await api.request('GET', `/v1/orders/export?${query}`, { ...key(as) });
    assert.equal(res.status, 200, res.text);
    assert.match(String(res.headers['content-type']), /^application\/x-ndjson/);
    const lines = res.text.split('\n');
    assert.equal(lines.pop(), '', 'every row ends with a newline');
    return { rows: lines.map((line) => JSON.parse(line) as Row), text: res.text };
  }

  it('NDJSON by default: one row per order with the money columns, newest first, never a phone number or card code', async () => {
    const { rows, text } = await exportNdjson(range(), 'acme');
    const mine = ours(rows);
    assert.deepEqual(
      mine.map((r) => r.ref),
      requests.map((r) => r.ref).reverse(),
      'newest accepted first',
    );
    const byRef = new Map(mine.map((r) => [r.ref, r]));
    const m1 = byRef.get(ref('m1'))!;
    const v1 = views.get(ref('m1'))!;
    assert.deepEqual(
      { ...m1, position: undefined },
      {
        position: undefined,
        ref: ref('m1'),
        client: 'acme',
        type: 'mobile_topup',
        status: 'FULFILLED',
        amount: 500,
        providerRef: v1.providerRef,
        providerReference: v1.providerReference,
        acceptedAt: v1.acceptedAt,
        completedAt: v1.completedAt,
      },
    );
    assert.ok(v1.providerRef && v1.providerReference && v1.completedAt);
    assert.equal(byRef.get(ref('refunded'))?.status, 'REFUNDED');
    assert.equal(byRef.get(ref('i1'))?.value, 1000);
    assert.deepEqual(
      [byRef.get(ref('g1'))?.productId, byRef.get(ref('g1'))?.typeId, byRef.get(ref('g1'))?.quantity],
      ['GOOGLE_PLAY', 'GOOGLE_PLAY_1000', 2],
    );
    const reviewed = byRef.get(ref('reviewed'))!;
    assert.deepEqual(
      [reviewed.status, reviewed.reviewDecision, reviewed.reviewDecidedBy, reviewed.reviewOperator],
      ['FULFILLED', 'FULFILLED', 'operator', 'amina'],
    );
    assert.ok(!text.includes(NORMAL_NUMBER), 'no phone number');
    assert.ok(!text.includes('021123456'), 'no line number');
    const codes = [
      views.get(ref('i1'))?.result?.cardCode,
      ...(views.get(ref('g1'))?.result?.cards ?? []).map((c) => c.code),
    ];
    assert.equal(codes.length, 3);
    for (const code of codes) assert.ok(code && !text.includes(code), 'no card code');
  });

  it('CSV by Accept: a header and one line per order, the same rows', async () => {
    const res = await api.request('GET', `/v1/orders/export?${range()}`, {
      ...key('acme'),
      headers: { accept: 'text/csv' },
    });
    assert.equal(res.status, 200, res.text);
    assert.match(String(res.headers['content-type']), /^text\/csv/);
    const [header, ...lines] = res.text.trimEnd().split('\r\n');
    const names = header!.split(',');
    assert.deepEqual(names.slice(0, 5), ['position', 'ref', 'client', 'type', 'status']);
    const rows = lines.map((line) => Object.fromEntries(line.split(',').map((cell, i) => [names[i], cell])));
    const mine = rows.filter((r) => String(r.ref).startsWith(`EXP-${run}-`));
    assert.equal(mine.length, requests.length);
    const g1 = mine.find((r) => r.ref === ref('g1'))!;
    assert.deepEqual([g1.type, g1.status, g1.quantity, g1.amount], ['gift_card', 'FULFILLED', '2', '']);
  });

  it('resumes after a row’s position: exactly the rows after it', async () => {
    const { rows } = await exportNdjson(range(), 'acme');
    const cut = rows.findIndex((r) => r.ref === ref('refunded'));
    assert.ok(cut >= 0);
    const resumed = await exportNdjson(`${range()}&after=${String(rows[cut]!.position)}`, 'acme');
    assert.deepEqual(
      resumed.rows.map((r) => r.ref),
      rows.slice(cut + 1).map((r) => r.ref),
    );
    // A position is sealed to its filters: with another range it is a 400 naming `after`.
    const other = await api.request<Problem>(
      'GET',
      `/v1/orders/export?from=${encodeURIComponent(from)}&to=${encodeURIComponent(new Date(Date.parse(to) + 1).toISOString())}&after=${String(rows[cut]!.position)}`,
      key('acme'),
    );
    assert.equal(other.status, 400, other.text);
    assert.deepEqual(
      other.body.errors?.map((e) => e.field),
      ['after'],
    );
  });

  it('audit:reveal shows phone and line numbers and card codes; audit:read alone does not', async () => {
    const revealed = await exportNdjson(`${range()}&client=acme`, 'auditor');
    const byRef = new Map(ours(revealed.rows).map((r) => [r.ref, r]));
    assert.equal(byRef.get(ref('m1'))?.msisdn, NORMAL_NUMBER);
    assert.equal(byRef.get(ref('i1'))?.lineNumber, '021123456');
    assert.equal(byRef.get(ref('i1'))?.cardCode, views.get(ref('i1'))?.result?.cardCode);
    assert.equal(
      byRef.get(ref('g1'))?.cardCodes,
      views
        .get(ref('g1'))
        ?.result?.cards?.map((c) => c.code)
        .join(' '),
    );
    const masked = await exportNdjson(`${range()}&client=acme`, 'ledger');
    assert.equal(ours(masked.rows).length, requests.length, 'audit:read reaches every client');
    assert.ok(!masked.text.includes(NORMAL_NUMBER));
    assert.ok(!('msisdn' in ours(masked.rows)[0]!));
  });

  it('another client exports none of them, and naming the owner is a 404; no scope 403; no key 401', async () => {
    const shop = await exportNdjson(range(), 'shop');
    assert.deepEqual(ours(shop.rows), []);
    const named = await api.request<Problem>('GET', `/v1/orders/export?${range()}&client=acme`, key('shop'));
    assert.equal(named.status, 404, named.text);
    const writer = await api.request('GET', `/v1/orders/export?${range()}`, key('writer'));
    assert.equal(writer.status, 403);
    const anonymous = await api.request('GET', `/v1/orders/export?${range()}`, { apiKey: null });
    assert.equal(anonymous.status, 401);
  });

  it('bad input is a 4xx naming the field, before anything is streamed', async () => {
    const cases: [string, number, string[]][] = [
      [`to=${encodeURIComponent(to)}`, 400, ['from']],
      [`from=${encodeURIComponent(to)}&to=${encodeURIComponent(from)}`, 400, ['to']],
      [`from=2025-01-01T00:00:00Z&to=2026-01-03T00:00:00Z`, 400, ['to']],
      [`${range()}&status=SHIPPED`, 400, ['status']],
      [`${range()}&after=not-a-position`, 400, ['after']],
    ];
    for (const [query, status, fields] of cases) {
      const res = await api.request<Problem>('GET', `/v1/orders/export?${query}`, key('acme'));
      assert.equal(res.status, status, `${query}: ${res.text}`);
      assert.deepEqual(
        res.body.errors?.map((e) => e.field),
        fields,
        query,
      );
    }
    const xml = await api.request<Problem>('GET', `/v1/orders/export?${range()}`, {
      ...key('acme'),
      headers: { accept: 'application/xml' },
    });
    assert.equal(xml.status, 406, xml.text);
  });
});
