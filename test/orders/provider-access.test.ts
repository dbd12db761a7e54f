/**
 * When the provider will not talk to us, or says its own API is broken (issue 25, gaps 1, 2 and
 * 6), end to end: orders submitted through the API, run by the real workflows on a real Temporal
 * server against the sandbox over HTTP, whose whitelist, key scope and /v3/ping are set through
 * its admin surface. None of these is ever an order's fault. Tests share the sandbox's settings,
 * so they run in order and each puts them back.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { providerRefFor } from '../../src/orders/provider-ref';
import type { SandboxAdmin } from '../../src/sandbox/admin-client';
import type { RunningReceiver } from '../../src/webhooks/receiver';
import { mobileRequest, scaledTimings, testProvider, refsPrefixed } from '../helpers/orders';
import { clientOrders, eventually, scrapeAccountGauges } from '../helpers/webhooks';
import type { OrderStack } from '../helpers/stack';
import { startHookedClient, type HookedClientStack } from '../helpers/hooked-client';

const KEY = 'test-key-access';
const CLIENT = 'access';
const newRef = refsPrefixed('ACC');
/** An address no test process has (TEST-NET-1). */
const ELSEWHERE = '192.0.2.1';

describe('a provider that will not talk to us is never an order’s fault', { timeout: 300_000 }, () => {
  let stack: OrderStack<'orders'>;
  let receiver: RunningReceiver;
  let hooked: HookedClientStack;
  let admin: SandboxAdmin;
  let provider: ReturnType<typeof testProvider>;

  before(async () => {
    ({ stack, receiver, admin } = hooked = await startHookedClient({
      name: 'access',
      id: CLIENT,
      key: KEY,
      account: { checkMs: 500 },
      timingsFor: () => scaledTimings({ deadlineMs: 60_000 }),
    }));
    provider = testProvider(stack.sandbox.url);
  });
  afterEach(async () => {
    await admin.settings({ allowedIps: [], api: 'ok', scope: 'READ-WRITE' });
  });
  after(async () => {
    await provider?.close();
    await hooked?.stop();
  });

  const { call, viewOf, until } = clientOrders(
    () => stack,
    KEY,
    () => receiver,
  );
  const scrape = () => scrapeAccountGauges(stack, provider.client);
  interface Ready {
    status?: string;
    account?: { api?: string };
  }
  const readyz = () => stack.api.request<Ready>('GET', '/readyz', { apiKey: null });

  async function submit(ref: string, request = mobileRequest(ref)): Promise<void> {
    const res = await call('POST', '/v1/orders', request);
    assert.equal(res.status, 201, res.text);
  }

  it('the provider’s IP whitelist refuses us (403): the order is not FAILED, nothing is sent; once our address is allowed it is sent once and FULFILLED', async () => {
    await admin.settings({ allowedIps: [ELSEWHERE] });
    const ref = newRef('whitelist');
    const providerRef = providerRefFor(CLIENT, ref);
    await submit(ref);

    // The send was refused for our address, and the look-ups after it too.
    await eventually(
      () => stack.sandbox.requests('mobile.check'),
      (checks) => checks.length >= 2,
      'look-ups refused while our address is not whitelisted',
    );
    await sleep(1_000);
    const waiting = await viewOf(ref);
    assert.ok(!['FAILED', 'NEEDS_REVIEW', 'REFUNDED'].includes(waiting.status), waiting.status);
    assert.equal((await stack.sandbox.sendsOf(providerRef)).accepted, 0);
    assert.ok((await stack.sandbox.requests('mobile.send')).length >= 1, 'the send was tried');

    await admin.settings({ allowedIps: [] });
    const done = await until(ref, (v) => v.status === 'FULFILLED', 'FULFILLED', 60_000);
    assert.equal(done.failure, undefined);
    assert.equal((await stack.sandbox.sendsOf(providerRef)).accepted, 1, 'sent once');
  });

  it('/v3/ping reports the provider’s API in error: reported (/readyz account.api, topup_provider_api_up 0), the API stays ready, and sends go on', async () => {
    assert.match(await scrape(), /topup_provider_api_up 1/);
    await admin.settings({ api: 'error' });
    const ready = await eventually(
      readyz,
      (r) => r.body?.account?.api === 'error',
      '/readyz shows api error',
    );
    assert.equal(ready.status, 200);
    assert.equal(ready.body.status, 'ready');
    assert.match(await scrape(), /topup_provider_api_up 0/);

    // Decided: not a hold. The order is sent, once, and the provider's own answers settle it.
    const ref = newRef('api-error');
    await submit(ref);
    await until(ref, (v) => v.status === 'FULFILLED', 'FULFILLED', 60_000);
    assert.equal((await stack.sandbox.sendsOf(providerRefFor(CLIENT, ref))).accepted, 1);

    await admin.settings({ api: 'ok' });
    await eventually(readyz, (r) => r.body?.account?.api === 'ok', '/readyz shows api ok');
  });

  it('a READ-ONLY key: /readyz is 503 naming it; an order is never FAILED for it, nothing is sent; with the scope back to READ-WRITE it is sent once and FULFILLED', async () => {
    await admin.settings({ scope: 'READ-ONLY' });
    const unready = await eventually(readyz, (r) => r.status === 503, '/readyz 503');
    assert.match(unready.text, /read-only/);

    const ref = newRef('read-only');
    const providerRef = providerRefFor(CLIENT, ref);
    const sendsBefore = (await stack.sandbox.requests('mobile.send')).length;
    await submit(ref);
    await eventually(
      () => stack.sandbox.requests('mobile.send'),
      (sends) => sends.length > sendsBefore,
      'the send was tried (and refused: 403 READ_ONLY_KEY)',
    );
    await sleep(1_500);
    const waiting = await viewOf(ref);
    assert.ok(!['FAILED', 'NEEDS_REVIEW', 'REFUNDED'].includes(waiting.status), waiting.status);
    assert.equal((await stack.sandbox.sendsOf(providerRef)).accepted, 0);

    await admin.settings({ scope: 'READ-WRITE' });
    await until(ref, (v) => v.status === 'FULFILLED', 'FULFILLED', 60_000);
    assert.equal((await stack.sandbox.sendsOf(providerRef)).accepted, 1, 'sent once');
    await eventually(readyz, (r) => r.status === 200, '/readyz ready again');
  });
});
