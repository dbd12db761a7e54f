/**
 * One webhook delivery without Temporal: which addresses the sender may reach (checked on the
 * address it connects to, with real sockets to a real receiver listening on every loopback
 * address), redirects, and the signatures and secrets (verified with the standardwebhooks library).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Webhook } from 'standardwebhooks';
import { createDeliveryActivities } from '../../src/webhooks/webhook.activities';
import { ClientRegistry } from '../../src/clients/registry';
import { AddressPolicy, type LookupAll } from '../../src/webhooks/address-guard';
import { signedHeaders, webhookEventId, webhookMessage } from '../../src/webhooks/message';
import { startReceiver, type RunningReceiver } from '../../src/webhooks/receiver';
import { endpointSecret, endpointSecrets } from '../../src/webhooks/secrets';
import { WebhookSender } from '../../src/webhooks/sender';
import type { DeliveryOutcome, WebhookEvent } from '../../contract/webhooks';
import { fabricatedEvent } from '../helpers/webhooks';

const SECRET = endpointSecret(randomBytes(32), 'acme', 'erp', 1);

/** Answers for names of our own, one answer after the other (DNS rebinding: public, then not). */
function scriptedDns(answers: Record<string, string[]>): LookupAll {
  const calls: Record<string, number> = {};
  return (hostname, _options, callback) => {
    const list = answers[hostname];
    if (!list) return callback(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }), []);
    const i = Math.min(calls[hostname] ?? 0, list.length - 1);
    calls[hostname] = (calls[hostname] ?? 0) + 1;
    callback(null, [{ address: list[i]!, family: list[i]!.includes(':') ? 6 : 4 }]);
  };
}

describe('which addresses a webhook may reach', () => {
  const refusedByDefault: [string, string][] = [
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.2.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fd12:3456::1', 'uniqueLocal'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'linkLocal'],
    // IPv6 forms that embed an IPv4 address: judged by the IPv4 address first.
    ['::127.0.0.1', 'loopback'], // IPv4-compatible (::/96), written ::7f00:1
    ['::7f00:1', 'loopback'],
    ['::a9fe:a9fe', 'linkLocal'],
    ['::808:808', 'ipv4Compatible'], // deprecated: refused even with a public IPv4 address
    ['::ffff:0:7f00:1', 'loopback'], // IPv4-translated (RFC 6145)
    ['64:ff9b::a00:1', 'private'], // NAT64 of 10.0.0.1
    ['64:ff9b::808:808', 'rfc6052'], // NAT64 of a public address: still a gateway, refused
    ['64:ff9b:1::a00:1', 'private'], // local-use NAT64 (RFC 8215)
    ['2002:a00:1::', 'private'], // 6to4 of 10.0.0.1
    ['2002:7f00:1::', 'loopback'],
    ['2002:808:808::', '6to4'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'], // Teredo, client 127.0.0.1 (bits inverted)
    ['2001:0:a00:1::', 'private'], // Teredo, server 10.0.0.1
    ['2001:db8::1', 'reserved'],
    ['not-an-ip', 'unparsable'],
  ];
  const policy = new AddressPolicy();
  for (const [address, range] of refusedByDefault) {
    it(`refuses ${address} (${range})`, () => assert.equal(policy.refusal(address), range));
  }
  for (const address of ['8.8.8.8', '1.1.1.1', '2001:4860:4860::8888', '::ffff:8.8.8.8']) {
    it(`allows the public ${address}`, () => assert.equal(policy.refusal(address), undefined));
  }

  it('WEBHOOK_ALLOWED_NETWORKS opens exactly the ranges it names, IPv4-mapped addresses included', () => {
    const dev = new AddressPolicy(['127.0.0.0/8', '::1/128']);
    for (const address of ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1'])
      assert.equal(dev.refusal(address), undefined, address);
    for (const address of [
      '10.0.0.1',
      '::ffff:10.0.0.1',
      'fe80::1',
      '169.254.169.254',
      '::a00:1',
      '2002:a00:1::',
    ])
      assert.notEqual(dev.refusal(address), undefined, address);
  });
});

describe('one delivery over real sockets', () => {
  let receiver: RunningReceiver;
  let redirecting: RunningReceiver;
  const senders: WebhookSender[] = [];
  const sender = (allowed: string[], lookup?: LookupAll) => {
    const s = new WebhookSender({ timeoutMs: 2_000, policy: new AddressPolicy(allowed), lookup });
    senders.push(s);
    return s;
  };
  const post = (s: WebhookSender, url: string) => {
    const body = JSON.stringify({ hello: 'world' });
    return s.post(url, body, signedHeaders('evt_test', body, [SECRET], new Date()));
  };

  before(async () => {
    // Every address, IPv4 and IPv6: a refusal below is the policy's, not the network's.
    receiver = await startReceiver({ host: '::', secrets: [SECRET], closeConnections: true });
    redirecting = await startReceiver({
      host: '127.0.0.1',
      secrets: [SECRET],
      answer: () => ({ status: 302 }),
    });
  });
  after(async () => {
    await Promise.all(senders.map((s) => s.close()));
    await Promise.all([receiver?.close(), redirecting?.close()]);
  });

  it('refuses loopback by literal IPv4, IPv6, IPv4-mapped IPv6 and by name, sending nothing; the same URLs are reached once allowed', async () => {
    const dns = scriptedDns({ 'hooks.example.test': ['127.0.0.1'] });
    const p = receiver.port;
    // The IPv4-compatible ::127.0.0.1 is refused before any connection is tried (this host may not
    // even route ::/96: a refusal, not a connection error, is what the test asks for).
    const compatible = await post(sender([]), `http://[::127.0.0.1]:${p}/compatible`);
    assert.equal(compatible.outcome, 'failed');
    assert.match(compatible.outcome === 'failed' ? compatible.error : '', /^refused: .*loopback address/);
    const urls = [
      `http://127.0.0.1:${p}/a`,
      `http://127.0.0.2:${p}/b`,
      `http://[::1]:${p}/c`,
      `http://[::ffff:127.0.0.1]:${p}/d`,
      `http://localhost:${p}/e`,
      `http://hooks.example.test:${p}/f`,
    ];
    const strict = sender([], (hostname, options, callback) =>
      hostname === 'hooks.example.test'
        ? dns(hostname, options, callback)
        : dnsLookupAll(hostname, options, callback),
    );
    for (const url of urls) {
      const result = await post(strict, url);
      assert.equal(result.outcome, 'failed', url);
      assert.match(result.outcome === 'failed' ? result.error : '', /^refused: .*loopback address/, url);
    }
    assert.equal(receiver.deliveries.length, 0, 'not one request reached the receiver');

    const open = sender(['127.0.0.0/8', '::1/128'], (hostname, options, callback) =>
      hostname === 'hooks.example.test'
        ? dns(hostname, options, callback)
        : dnsLookupAll(hostname, options, callback),
    );
    for (const url of urls)
      assert.deepEqual(await post(open, url), { outcome: 'delivered', status: 204 }, url);
    assert.deepEqual(
      receiver.deliveries.map((d) => d.path),
      ['/a', '/b', '/c', '/d', '/e', '/f'],
    );
    assert.ok(receiver.deliveries.every((d) => d.verified));
  });

  it('checks the address each connection is made to: a name that rebinds to a refused address is refused the next time', async () => {
    const before = receiver.deliveries.length;
    const rebinding = sender(
      ['127.0.0.1/32'],
      scriptedDns({ 'rebind.example.test': ['127.0.0.1', '127.0.0.2'] }),
    );
    const url = `http://rebind.example.test:${receiver.port}/rebind`;
    assert.deepEqual(await post(rebinding, url), { outcome: 'delivered', status: 204 });
    // The receiver closes every connection, so the second delivery resolves the name again.
    const second = await post(rebinding, url);
    assert.equal(second.outcome, 'failed');
    assert.match(second.outcome === 'failed' ? second.error : '', /^refused: .*loopback address/);
    assert.equal(receiver.deliveries.length, before + 1);
  });

  it('follows no redirect: a 302 is a failed attempt, and nothing reaches its Location', async () => {
    const result = await post(sender(['127.0.0.1/32']), redirecting.url);
    assert.deepEqual(result, {
      outcome: 'failed',
      status: 302,
      error: 'HTTP 302: redirects are not followed',
    });
    assert.equal(redirecting.deliveries.length, 1);
  });

  it('a name that does not resolve and a closed port fail with a reason, never a body', async () => {
    const s = sender(['127.0.0.1/32'], scriptedDns({}));
    assert.deepEqual(await post(s, 'http://nowhere.example.test/'), {
      outcome: 'failed',
      error: 'the host name does not resolve',
    });
    const closed = await startReceiver({ secrets: [SECRET] });
    await closed.close();
    assert.deepEqual(await post(s, closed.url), { outcome: 'failed', error: 'connection refused' });
  });
});

const dnsLookupAll: LookupAll = (hostname, options, callback) => lookup(hostname, options, callback);

describe('signatures and secrets', () => {
  const signingKey = randomBytes(32);

  it('an endpoint secret is stable, and differs by client, endpoint and version', () => {
    const a = endpointSecret(signingKey, 'acme', 'erp', 1);
    assert.equal(endpointSecret(signingKey, 'acme', 'erp', 1), a);
    assert.match(a, /^whsec_[A-Za-z0-9+/]{43}=$/);
    for (const other of [
      endpointSecret(signingKey, 'shop', 'erp', 1),
      endpointSecret(signingKey, 'acme', 'crm', 1),
      endpointSecret(signingKey, 'acme', 'erp', 2),
      endpointSecret(randomBytes(32), 'acme', 'erp', 1),
    ])
      assert.notEqual(other, a);
  });

  it('during a rotation, events carry both signatures: a receiver on the old secret and one on the new both verify', () => {
    const secrets = endpointSecrets(signingKey, 'acme', {
      id: 'erp',
      url: 'https://erp.example.com/hooks',
      secretVersion: 2,
      previousSecretVersion: 1,
    });
    assert.deepEqual(secrets, [
      endpointSecret(signingKey, 'acme', 'erp', 2),
      endpointSecret(signingKey, 'acme', 'erp', 1),
    ]);
    const body = '{"type":"order.fulfilled"}';
    const headers = signedHeaders('evt_x', body, secrets, new Date());
    assert.equal(headers['webhook-signature']!.split(' ').length, 2);
    for (const secret of secrets)
      assert.deepEqual(new Webhook(secret).verify(body, headers), { type: 'order.fulfilled' });
    assert.throws(() => new Webhook(endpointSecret(signingKey, 'acme', 'erp', 3)).verify(body, headers));
    // A changed body no longer verifies.
    assert.throws(() => new Webhook(secrets[0]!).verify(`${body} `, headers));
  });

  it('an event id depends only on the order and the sequence: every retry and redelivery carries the same', () => {
    assert.equal(webhookEventId('order:acme:A-1', 3), webhookEventId('order:acme:A-1', 3));
    assert.notEqual(webhookEventId('order:acme:A-1', 3), webhookEventId('order:acme:A-1', 4));
    assert.notEqual(webhookEventId('order:acme:A-1', 3), webhookEventId('order:shop:A-1', 3));
  });

  it('the body is the owner’s view; card codes only for an endpoint that opted in', () => {
    const event: WebhookEvent = {
      id: 'evt_1',
      orderWorkflowId: 'order:acme:N-1',
      targets: ['erp'],
      sequence: 3,
      type: 'order.fulfilled',
      timestamp: '2026-01-01T00:00:00.000Z',
      client: 'acme',
      providerRef: 'acme.N-1.abc',
      view: {
        ref: 'N-1',
        type: 'internet_topup',
        status: 'FULFILLED',
        request: { type: 'internet_topup', ref: 'N-1', lineType: 'ADSL', number: '021123456', value: 1000 },
        result: { cardCode: '1234567890123456', transactionNumber: 'T-9' },
        acceptedAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-01T00:00:00.000Z',
        timeline: [],
      },
    };
    const opted = webhookMessage(event, { cardCodes: true });
    assert.equal(opted.data.result?.cardCode, '1234567890123456');
    assert.equal(opted.data.client, 'acme');
    assert.equal(opted.data.workflowId, 'order:acme:N-1');
    assert.equal(opted.data.providerRef, 'acme.N-1.abc');
    assert.deepEqual(
      { id: opted.id, type: opted.type, sequence: opted.sequence, timestamp: opted.timestamp },
      { id: 'evt_1', type: 'order.fulfilled', sequence: 3, timestamp: '2026-01-01T00:00:00.000Z' },
    );
    const masked = webhookMessage(event, {});
    assert.equal(masked.data.result?.cardCode, '[masked]');
    assert.equal(masked.data.result?.transactionNumber, 'T-9');
  });

  it('the delivery activity signs what it sends with the endpoint’s secret, reads the endpoint at each attempt, and skips a removed one', async () => {
    const receiver = await startReceiver({ secrets: [endpointSecret(signingKey, 'acme', 'erp', 1)] });
    const registry = new ClientRegistry({
      clients: [
        {
          id: 'acme',
          name: 'Acme',
          scopes: [],
          keys: [],
          webhooks: [{ id: 'erp', url: `${receiver.url}/hooks` }],
        },
      ],
    });
    const sender = new WebhookSender({ timeoutMs: 2_000, policy: new AddressPolicy(['127.0.0.1/32']) });
    const activities = createDeliveryActivities({ endpoints: registry, signingKey, sender });
    // The activity logs through its context: run it in one, as a worker would.
    const deliverWebhook = (
      input: Parameters<typeof activities.deliverWebhook>[0],
      deliver = activities.deliverWebhook,
    ): Promise<DeliveryOutcome> => new MockActivityEnvironment().run(deliver, input);
    const event = fabricatedEvent({
      id: 'evt_a',
      orderWorkflowId: 'order:acme:X',
      client: 'acme',
      targets: ['erp'],
      type: 'order.submitted',
      ref: 'X',
      status: 'SUBMITTED',
    });
    try {
      assert.deepEqual(await deliverWebhook({ event, endpoint: 'erp' }), {
        outcome: 'delivered',
        status: 204,
      });
      assert.ok(receiver.deliveries[0]?.verified);
      assert.deepEqual(await deliverWebhook({ event, endpoint: 'gone' }), { outcome: 'endpoint-removed' });
      const unsigned = createDeliveryActivities({ endpoints: registry, signingKey: undefined, sender });
      const result = await deliverWebhook({ event, endpoint: 'erp' }, unsigned.deliverWebhook);
      assert.equal(result.outcome, 'failed');
      assert.equal(receiver.deliveries.length, 1, 'nothing unsigned is sent');
    } finally {
      await sender.close();
      await receiver.close();
    }
  });
  it('one endpoint has at most maxInFlightPerEndpoint attempts in flight: one more is not sent, deferred at once (no failure); another endpoint is not held', async () => {
    const slow = await startReceiver({
      secrets: [endpointSecret(signingKey, 'acme', 'slow', 1)],
      answer: () => ({ status: 204, delayMs: 1_500 }),
    });
    const prompt = await startReceiver({ secrets: [endpointSecret(signingKey, 'shop', 'erp', 1)] });
    const registry = new ClientRegistry({
      clients: [
        { id: 'acme', name: 'Acme', scopes: [], keys: [], webhooks: [{ id: 'slow', url: `${slow.url}/h` }] },
        { id: 'shop', name: 'Shop', scopes: [], keys: [], webhooks: [{ id: 'erp', url: `${prompt.url}/h` }] },
      ],
    });
    const sender = new WebhookSender({ timeoutMs: 5_000, policy: new AddressPolicy(['127.0.0.1/32']) });
    const activities = createDeliveryActivities({
      endpoints: registry,
      signingKey,
      sender,
      maxInFlightPerEndpoint: 2,
    });
    const deliver = (client: string, endpoint: string, sequence: number): Promise<DeliveryOutcome> =>
      new MockActivityEnvironment().run(activities.deliverWebhook, {
        endpoint,
        event: fabricatedEvent({
          id: `evt_${client}_${sequence}`,
          orderWorkflowId: `order:${client}:X${sequence}`,
          client,
          targets: [endpoint],
          sequence,
          type: 'order.submitted',
          ref: `X${sequence}`,
          status: 'SUBMITTED',
        }),
      });
    try {
      const held = [deliver('acme', 'slow', 1), deliver('acme', 'slow', 2)];
      await new Promise((r) => setTimeout(r, 200));
      const t0 = Date.now();
      const third = await deliver('acme', 'slow', 3);
      assert.equal(third.outcome, 'deferred');
      assert.match(third.outcome === 'deferred' ? third.reason : '', /^2 attempts at this endpoint/);
      assert.ok(Date.now() - t0 < 1_000, 'fails at once, holding no slot');
      assert.deepEqual(await deliver('shop', 'erp', 1), { outcome: 'delivered', status: 204 });
      for (const attempt of await Promise.all(held)) assert.equal(attempt.outcome, 'delivered');
      assert.deepEqual(
        slow.deliveries.map((d) => d.id).sort(),
        ['evt_acme_1', 'evt_acme_2'],
        'the third was never sent',
      );
      assert.equal((await deliver('acme', 'slow', 4)).outcome, 'delivered', 'free again once they ended');
    } finally {
      await sender.close();
      await Promise.all([slow.close(), prompt.close()]);
    }
  });
});
