/**
 * The audit export in clear (`reveal=true`) needs `audit:reveal`, a scope of its own: `audit:read`
 * alone reads every client's audit masked, never its card codes. Every reveal is recorded — who,
 * which order, when — in the log and in a counter by client, never what was revealed. Real HTTP
 * against createApp and a real Temporal server; no worker (the order's first event is enough).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Problem } from '../../src/http/errors';
import type { ProviderPort } from '../../src/api/health';
import { capturingLogger, testClients, type TestApi } from '../helpers/api';
import { ClientsFile } from '../../src/clients/model';
import { PrometheusMetrics } from '../../src/observability/prometheus';
import { mobileRequest } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const provider: ProviderPort = {
  getGiftCardCatalog: () => Promise.reject(new Error('not used')),
  validateKey: () => Promise.reject(new Error('not used')),
};
const PHONE = '0551239876';

describe('GET /v1/orders/{ref}/audit?reveal=true needs audit:reveal', () => {
  let stack: OrderStack;
  let api: TestApi;
  const logs = capturingLogger();
  const metrics = new PrometheusMetrics({ processMetrics: false });
  const ref = `REVEAL-${randomUUID().slice(0, 8)}`;

  const audit = (key: string | null, query: string) =>
    api.request<Problem & { secrets?: string }>('GET', `/v1/orders/${ref}/audit${query}`, { apiKey: key });
  const reveals = async () =>
    (await metrics.registry.getSingleMetric('topup_audit_reveals_total')?.get())?.values ?? [];

  before(async () => {
    stack = await startOrderStack({
      name: 'audit-reveal',
      sandbox: false,
      api: {
        taskQueue: `audit-reveal-${randomUUID()}`,
        provider,
        logger: logs.logger,
        metrics,
      },
    });
    api = stack.api;
    const res = await api.request('POST', '/v1/orders', { body: mobileRequest(ref, PHONE) });
    assert.equal(res.status, 201, res.text);
  });
  after(async () => {
    await stack?.stop();
  });

  it('audit:read without audit:reveal: masked 200, reveal=true 403 naming the scope, nothing recorded', async () => {
    assert.deepEqual(testClients.ledger.scopes.includes('audit:reveal' as never), false);
    const masked = await audit(testClients.ledger.key, '?client=shop');
    assert.equal(masked.status, 200, masked.text);
    assert.ok(!masked.text.includes(PHONE));
    const refused = await audit(testClients.ledger.key, '?client=shop&reveal=true');
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.type, '/problems/forbidden');
    assert.match(refused.body.detail, /audit:reveal/);
    assert.match(String(refused.headers['www-authenticate']), /insufficient_scope.*scope="audit:reveal"/);
    assert.ok(!refused.text.includes(PHONE));
    assert.equal(
      logs.lines.filter((l) => l.msg === 'audit export with secrets revealed').length,
      0,
      'a refused reveal is no reveal',
    );
  });

  it('the owner without audit:read, an operator and no key are refused as before', async () => {
    assert.equal((await audit(testClients.shop.key, '?reveal=true')).status, 403);
    assert.equal((await audit(testClients.operator.key, '?client=shop&reveal=true')).status, 403);
    assert.equal((await audit(null, '?client=shop&reveal=true')).status, 401);
  });

  it('audit:reveal: the export in clear, and the reveal recorded — who, which order, when — in the log and the counter, never what', async () => {
    const before = await reveals();
    assert.deepEqual(
      before.map((v) => [v.labels.client, v.value]),
      [['auditor', 0]],
      'counted from zero for every holder, before the first reveal',
    );
    const revealed = await audit(testClients.auditor.key, '?client=shop&reveal=true');
    assert.equal(revealed.status, 200, revealed.text);
    assert.equal(revealed.body.secrets, 'revealed');
    assert.ok(revealed.text.includes(PHONE));

    const line = logs.lines.find((l) => l.msg === 'audit export with secrets revealed');
    assert.ok(line, 'the reveal is logged');
    assert.deepEqual(line.revealedBy, { client: 'auditor', keyId: 'k1' });
    assert.deepEqual(line.auditOf, { client: 'shop', ref });
    assert.ok(!Number.isNaN(Date.parse(String(line.at))));
    assert.ok(!logs.raw.some((l) => l.includes(PHONE)), 'no revealed value in any log line');
    assert.deepEqual(
      (await reveals()).map((v) => [v.labels.client, v.value]),
      [['auditor', 1]],
    );
    // An order that does not exist reveals nothing: a 404, not counted.
    const missing = await api.request(
      'GET',
      `/v1/orders/NO-SUCH-${randomUUID().slice(0, 8)}/audit?reveal=true`,
      {
        apiKey: testClients.auditor.key,
      },
    );
    assert.equal(missing.status, 404);
    assert.deepEqual(
      (await reveals()).map((v) => [v.labels.client, v.value]),
      [['auditor', 1]],
    );
  });

  it('the clients file refuses audit:reveal without audit:read', () => {
    const file = (scopes: string[]) => ({
      clients: [{ id: 'x', name: 'X', scopes, keys: [{ id: 'k1', hash: `sha256:${'0'.repeat(64)}` }] }],
    });
    const alone = ClientsFile.safeParse(file(['orders:read', 'audit:reveal']));
    assert.equal(alone.success, false);
    assert.match(
      JSON.stringify(alone.error?.issues),
      /audit:reveal reveals the audit export: add audit:read/,
    );
    assert.equal(ClientsFile.safeParse(file(['orders:read', 'audit:read', 'audit:reveal'])).success, true);
  });
});
