/**
 * Webhooks end to end: orders submitted through the API, run by the real workflows against the
 * sandbox over HTTP, their events delivered by the delivery workflows to real receivers over HTTP
 * that verify every signature with the standardwebhooks library's own verifier. Retry timings are
 * scaled down (test/helpers/webhooks.ts); waits are generous, so a loaded machine is only slower.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { lookup as dnsLookup } from 'node:dns';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowNotFoundError } from '@temporalio/client';
import { Webhook } from 'standardwebhooks';
import type { Problem } from '../../src/http/errors';
import type { OrderView } from '../../src/orders/order.service';
import type { EndpointDeliverySummary, EndpointView } from '../../src/webhooks/webhook.service';
import type { ClientsFile } from '../../src/clients/model';
import { announcedOutcomes } from '../../src/webhooks/webhook-records.service';
import { endpointSecret } from '../../src/webhooks/secrets';
import { startReceiver, type ReceivedWebhook, type RunningReceiver } from '../../src/webhooks/receiver';
import type { LookupAll } from '../../src/webhooks/address-guard';
import { orderWorkflowId } from '../../contract/order';
import { webhookDeliveryWorkflowId, type WebhookDeliveryState } from '../../contract/webhooks';
import { internetRequest, mobileRequest, scaledTimings, refsPrefixed } from '../helpers/orders';
import { clientsWith, eventually, statusEvents } from '../helpers/webhooks';
import { startOrderStack, type OrderStack } from '../helpers/stack';
import { freePort } from '../../src/temporal/dev-server';

const newRef = refsPrefixed('WH');
const KEYS = {
  hooked: 'test-key-hooked',
  flaky: 'test-key-flaky',
  downtime: 'test-key-downtime',
  slow: 'test-key-slow',
  private_ip: 'test-key-private-ip',
  private_name: 'test-key-private-name',
  named: 'test-key-named',
  moving: 'test-key-moving',
  plain: 'test-key-plain',
  acme: 'test-key-acme',
  sluggish: 'test-key-sluggish',
  prompt: 'test-key-prompt',
  reader: 'test-key-reader',
};
type Caller = keyof typeof KEYS | 'nobody';
const keyOf = (caller: Caller) => (caller === 'nobody' ? null : KEYS[caller]);

/** Test DNS: two names of our own; anything else as the system resolves it. */
const fakeDns: LookupAll = (hostname, options, callback) => {
  const table: Record<string, string> = {
    'receiver.hooks.test': '127.0.0.1', // allowed (WEBHOOK_ALLOWED_NETWORKS = 127.0.0.1/32)
    'internal.hooks.test': '127.0.0.2', // loopback, not allowed
  };
  const address = table[hostname];
  if (address) return callback(null, [{ address, family: 4 }]);
  dnsLookup(hostname, options, callback);
};

const ofRef = (receiver: RunningReceiver, ref: string): ReceivedWebhook[] =>
  receiver.deliveries.filter((d) => d.message?.data.ref === ref);

/**
 * The sandbox at a quarter of the spec's timings (PENDING 1.25 s, HANDLING until 5 s) and polling
 * to match: the dev server fires timers on a ~1 s tick, so a faster sandbox would often be past
 * HANDLING at the first check, and an order would never be PROCESSING.
 */
const SANDBOX_TIME_SCALE = 0.25;
const orderTimings = () =>
  scaledTimings({ firstCheckMs: 1_250, handlingCheckMs: 3_750, maxIntervalMs: 5_000, deadlineMs: 120_000 });

describe('webhooks end to end', { timeout: 600_000 }, () => {
  const signingKey = randomBytes(32);
  const secret = (client: string, endpoint: string, version = 1) =>
    endpointSecret(signingKey, client, endpoint, version);
  let stack: OrderStack<'orders'>;
  const receivers: Record<string, RunningReceiver> = {};
  let downPort: number;
  let movedFromPort: number;
  let clients: ClientsFile;
  /** Orders of the first test, reused by the route and redelivery tests. */
  let normalRef = '';

  before(async () => {
    // One receiver per endpoint, each knowing only its endpoint's secret.
    const flakySeen = new Set<string>();
    const slowSeen = new Set<string>();
    const [main, fulfilledOnly, flaky, slow, named, moved, sluggish, prompt] = await Promise.all([
      startReceiver({ secrets: [secret('hooked', 'main')] }),
      startReceiver({ secrets: [secret('hooked', 'fulfilled_only')] }),
      startReceiver({
        secrets: [secret('flaky', 'main')],
        // The first delivery of each event fails with a 500; the next succeeds.
        answer: (d) => {
          const first = !flakySeen.has(d.id);
          flakySeen.add(d.id);
          return { status: first ? 500 : 200 };
        },
      }),
      startReceiver({
        secrets: [secret('slow', 'main')],
        // The first delivery of each event is answered after the sender's 1 s timeout.
        answer: (d) => {
          const first = !slowSeen.has(d.id);
          slowSeen.add(d.id);
          return { status: 204, delayMs: first ? 2_500 : 0 };
        },
      }),
      startReceiver({ secrets: [secret('named', 'main')] }),
      startReceiver({ secrets: [secret('moving', 'main')] }),
      // Always slower than the sender's timeout: an endpoint that never keeps up.
      startReceiver({
        secrets: [secret('sluggish', 'main')],
        answer: () => ({ status: 204, delayMs: 3_000 }),
      }),
      startReceiver({ secrets: [secret('prompt', 'main')] }),
    ]);
    Object.assign(receivers, { main, fulfilledOnly, flaky, slow, named, moved, sluggish, prompt });
    [downPort, movedFromPort] = await Promise.all([freePort(), freePort()]);
    clients = clientsWith({
      hooked: {
        key: KEYS.hooked,
        webhooks: [
          { id: 'main', url: `${main.url}/hooks`, cardCodes: true },
          { id: 'fulfilled_only', url: `${fulfilledOnly.url}/hooks`, events: ['order.fulfilled'] },
        ],
      },
      flaky: { key: KEYS.flaky, webhooks: [{ id: 'main', url: flaky.url }] },
      downtime: { key: KEYS.downtime, webhooks: [{ id: 'main', url: `http://127.0.0.1:${downPort}/hooks` }] },
      slow: { key: KEYS.slow, webhooks: [{ id: 'main', url: slow.url }] },
      private_ip: { key: KEYS.private_ip, webhooks: [{ id: 'main', url: 'http://10.11.12.13:8080/hooks' }] },
      private_name: {
        key: KEYS.private_name,
        webhooks: [{ id: 'main', url: `http://internal.hooks.test:${main.port}/private` }],
      },
      named: {
        key: KEYS.named,
        webhooks: [{ id: 'main', url: `http://receiver.hooks.test:${named.port}/hooks` }],
      },
      moving: { key: KEYS.moving, webhooks: [{ id: 'main', url: `http://127.0.0.1:${movedFromPort}/old` }] },
      sluggish: { key: KEYS.sluggish, webhooks: [{ id: 'main', url: sluggish.url }] },
      prompt: { key: KEYS.prompt, webhooks: [{ id: 'main', url: prompt.url }] },
      plain: { key: KEYS.plain },
    });
    stack = await startOrderStack({
      name: 'webhooks',
      sandbox: { timeScale: SANDBOX_TIME_SCALE },
      workers: { orders: {} },
      api: { timingsFor: orderTimings },
      webhooks: {
        clients,
        signingKey,
        lookup: fakeDns,
      },
    });
  });

  after(async () => {
    await stack?.stop();
    await Promise.all(Object.values(receivers).map((r) => r.close()));
  });

  const call = <T = unknown>(caller: Caller, method: string, path: string, body?: unknown) =>
    stack.api.request<T>(method, path, { body, apiKey: keyOf(caller) });

  async function submit(caller: Caller, body: unknown): Promise<void> {
    const res = await call(caller, 'POST', '/v1/orders', body);
    assert.equal(res.status, 201, res.text);
  }

  async function finalView(caller: Caller, ref: string, status = 'FULFILLED'): Promise<OrderView> {
    return eventually(
      async () => (await call<OrderView>(caller, 'GET', `/v1/orders/${ref}`)).body,
      (view) => view.status === status,
      `order ${ref} ${status}`,
      60_000,
    );
  }

  const stateOf = (client: string, ref: string) => stack.webhooks.deliveryState(orderWorkflowId(ref, client));

  async function deliveriesAt(
    receiver: RunningReceiver,
    ref: string,
    count: number,
  ): Promise<ReceivedWebhook[]> {
    return eventually(
      () => ofRef(receiver, ref),
      (list) => list.length >= count,
      `${count} deliveries of ${ref}`,
    );
  }

  it('a normal mobile top-up: its endpoint receives signed order.submitted, order.processing, order.fulfilled in sequence, each verified by the library, carrying the owner’s view', async (t) => {
    normalRef = newRef('normal');
    const request = mobileRequest(normalRef);
    await submit('hooked', request);
    const view = await finalView('hooked', normalRef);
    const got = await deliveriesAt(receivers.main!, normalRef, 3);

    assert.deepEqual(statusEvents(view), ['order.submitted', 'order.processing', 'order.fulfilled']);
    assert.deepEqual(
      got.map((d) => [d.message!.type, d.message!.sequence]),
      [
        ['order.submitted', 1],
        ['order.processing', 2],
        ['order.fulfilled', 3],
      ],
    );
    for (const d of got) {
      assert.ok(d.verified, d.verificationError);
      assert.equal(d.message!.id, d.id, 'the body’s id is the webhook-id header');
      assert.match(d.id, /^evt_[A-Za-z0-9_-]+$/);
      // Verified again here with the library: by this endpoint's secret, not by another endpoint's.
      const headers = {
        'webhook-id': d.id,
        'webhook-timestamp': String(d.signedAt),
        'webhook-signature': d.signature,
      };
      assert.deepEqual(new Webhook(secret('hooked', 'main')).verify(d.rawBody, headers), d.message);
      assert.throws(
        () => new Webhook(secret('hooked', 'fulfilled_only')).verify(d.rawBody, headers),
        /No matching signature/,
      );
      t.diagnostic(
        `${d.message!.type}: delivered ${d.receivedAt - Date.parse(d.message!.timestamp)} ms after the change`,
      );
    }
    assert.equal(new Set(got.map((d) => d.id)).size, 3, 'one id per event');
    // The last event carries the order as its owner reads it.
    const last = got[2]!.message!.data;
    assert.equal(last.status, 'FULFILLED');
    assert.equal(last.client, 'hooked');
    assert.equal(last.workflowId, view.workflowId);
    assert.equal(last.providerRef, view.providerRef);
    assert.deepEqual(last.request, request);
    assert.deepEqual(last.result, view.result);
    assert.equal(got[0]!.message!.data.status, 'SUBMITTED');

    // The endpoint subscribed to order.fulfilled only gets that one, with the order's own numbering.
    const only = await deliveriesAt(receivers.fulfilledOnly!, normalRef, 1);
    await sleep(500);
    assert.deepEqual(
      ofRef(receivers.fulfilledOnly!, normalRef).map((d) => [d.message!.type, d.message!.sequence]),
      [['order.fulfilled', 3]],
    );
    assert.equal(only[0]!.id, got[2]!.id, 'one event, one id, whichever endpoint gets it');

    // The owner's order view shows each endpoint's delivery state.
    const withDeliveries = await eventually(
      async () =>
        (
          await call<OrderView & { webhooks?: EndpointDeliverySummary[] }>(
            'hooked',
            'GET',
            `/v1/orders/${normalRef}`,
          )
        ).body,
      (v) => v.webhooks?.find((w) => w.endpoint === 'main')?.delivered === 3,
      'the view shows 3 delivered',
    );
    const main = withDeliveries.webhooks!.find((w) => w.endpoint === 'main')!;
    assert.equal(main.attempts, 3);
    assert.equal(main.events, 3);
    assert.equal(main.pending + main.failed, 0);
    assert.equal(main.lastError, undefined);
    assert.equal(withDeliveries.webhooks!.find((w) => w.endpoint === 'fulfilled_only')?.delivered, 1);

    const detail = await call<{
      events: { id: string; sequence: number; deliveries: { state: string }[] }[];
    }>('hooked', 'GET', `/v1/orders/${normalRef}/webhooks`);
    assert.equal(detail.status, 200, detail.text);
    assert.deepEqual(
      detail.body.events.map((e) => [e.sequence, e.id, e.deliveries.map((d) => d.state).join()]),
      [
        [1, got[0]!.id, 'delivered'],
        [2, got[1]!.id, 'delivered'],
        [3, got[2]!.id, 'delivered,delivered'],
      ],
    );
  });

  it('card codes reach an endpoint that opted in; another endpoint reads [masked]', async () => {
    const ref = newRef('card');
    await submit('hooked', { ...internetRequest(ref), number: '021123456' });
    const view = await finalView('hooked', ref);
    assert.match(view.result?.cardCode ?? '', /^\d+$/);
    const got = await deliveriesAt(receivers.main!, ref, statusEvents(view).length);
    const fulfilled = got.find((d) => d.message!.type === 'order.fulfilled');
    assert.equal(fulfilled!.message!.data.result?.cardCode, view.result!.cardCode);
    const [masked] = await deliveriesAt(receivers.fulfilledOnly!, ref, 1);
    assert.equal(masked!.message!.data.result?.cardCode, '[masked]');
    assert.equal(masked!.message!.data.result?.transactionNumber, view.result!.transactionNumber);
  });

  it('history: an order of a client without endpoints gets no extra event; with endpoints, one marker per status change', async (t) => {
    const plainRef = newRef('plain');
    const hookedRef = newRef('hist');
    await submit('plain', mobileRequest(plainRef));
    await submit('hooked', mobileRequest(hookedRef));
    const [, hookedView] = await Promise.all([finalView('plain', plainRef), finalView('hooked', hookedRef)]);
    const history = async (client: string, ref: string) =>
      (await stack.client.workflow.getHandle(orderWorkflowId(ref, client)).fetchHistory()).events ?? [];
    const [plain, hooked] = await Promise.all([history('plain', plainRef), history('hooked', hookedRef)]);
    const markers = (events: typeof plain, name: string) =>
      events.filter((e) => e.markerRecordedEventAttributes?.markerName === name).length;
    assert.equal(markers(hooked, 'core_patch') + markers(plain, 'core_patch'), 0, 'no patch asked');
    const upserts = (events: typeof plain) =>
      events.filter((e) => e.upsertWorkflowSearchAttributesEventAttributes).length;
    assert.equal(upserts(hooked), upserts(plain), 'the same search-attribute updates');
    // Counted by the marker's activity, not as every local-activity marker: the send is one too
    // only when it ran in the first workflow task, and a loaded worker can miss that task.
    const [plainAnnounced, hookedAnnounced] = await Promise.all([
      announcedOutcomes(stack.client, orderWorkflowId(plainRef, 'plain')),
      announcedOutcomes(stack.client, orderWorkflowId(hookedRef, 'hooked')),
    ]);
    assert.equal(plainAnnounced.length, 0, 'no announcement for a client without endpoints');
    assert.deepEqual(
      hookedAnnounced.map((a) => a.event?.type),
      statusEvents(hookedView),
      'one announcement per status change, in order',
    );
    t.diagnostic(
      `history events of a normal mobile top-up: ${plain.length} without an endpoint, ${hooked.length} with`,
    );
    // Both endpoints answered the announcements' own tries: no delivery workflow at all, and the
    // order's markers are the record (one per status change, each with its deliveries).
    await assert.rejects(
      stack.client.workflow
        .getHandle(webhookDeliveryWorkflowId(orderWorkflowId(hookedRef, 'hooked')))
        .describe(),
      WorkflowNotFoundError,
      'no delivery workflow when every endpoint took its events at once',
    );
    const state = await stateOf('hooked', hookedRef);
    assert.deepEqual(
      state?.events.map((e) => e.deliveries.map((d) => `${d.endpoint}:${d.state}:${d.attempts}`).join()),
      statusEvents(hookedView).map((type) =>
        type === 'order.fulfilled' ? 'main:delivered:1,fulfilled_only:delivered:1' : 'main:delivered:1',
      ),
    );
    await assert.rejects(
      stack.client.workflow
        .getHandle(webhookDeliveryWorkflowId(orderWorkflowId(plainRef, 'plain')))
        .describe(),
      WorkflowNotFoundError,
      'no delivery workflow for a client without endpoints',
    );
  });

  it('a receiver answering 500, then 200: every event is delivered on its second attempt, with the same id and body', async () => {
    const ref = newRef('flaky');
    await submit('flaky', mobileRequest(ref));
    const events = statusEvents(await finalView('flaky', ref));
    const got = await deliveriesAt(receivers.flaky!, ref, 2 * events.length);
    const byId = new Map<string, ReceivedWebhook[]>();
    for (const d of got) byId.set(d.id, [...(byId.get(d.id) ?? []), d]);
    assert.equal(byId.size, events.length);
    for (const [, tries] of byId) {
      assert.equal(tries.length, 2, 'two attempts per event');
      assert.ok(tries.every((d) => d.verified));
      assert.equal(tries[0]!.rawBody, tries[1]!.rawBody, 'the same body on the retry');
    }
    const state = await eventually(
      () => stateOf('flaky', ref),
      (s) =>
        s?.events.length === events.length && s.events.every((e) => e.deliveries[0]!.state === 'delivered'),
      'all delivered',
    );
    for (const record of state!.events) {
      assert.equal(record.deliveries[0]!.attempts, 2, 'the direct try, then one retry');
      assert.equal(record.deliveries[0]!.lastError, 'HTTP 500', 'why the first attempt failed');
      assert.equal(record.deliveries[0]!.lastStatus, 200);
    }
    // Handed off: the delivery workflow's attempts take turns per endpoint (<client>:<endpoint>),
    // and the workflow itself per client, on the delivery queue.
    const delivery = stack.client.workflow.getHandle(
      webhookDeliveryWorkflowId(orderWorkflowId(ref, 'flaky')),
    );
    const history = (await delivery.fetchHistory()).events ?? [];
    const keys = history.flatMap((e) => {
      const scheduled = e.activityTaskScheduledEventAttributes;
      return scheduled ? [scheduled.priority?.fairnessKey] : [];
    });
    assert.ok(keys.length > 0, 'delivery attempts scheduled');
    assert.deepEqual([...new Set(keys)], ['flaky:main']);
    assert.equal(history[0]?.workflowExecutionStartedEventAttributes?.priority?.fairnessKey, 'flaky');
  });

  it('a receiver down for a while: the order is FULFILLED meanwhile, and once it is back every event arrives, in sequence', async () => {
    const ref = newRef('down');
    await submit('downtime', mobileRequest(ref));
    const events = statusEvents(await finalView('downtime', ref)); // not held by the dead receiver
    const failing = await eventually(
      () => stateOf('downtime', ref),
      (s) => (s?.events[0]?.deliveries[0]?.attempts ?? 0) >= 2,
      'two failed attempts',
    );
    const first = failing!.events[0]!.deliveries[0]!;
    assert.equal(first.state, 'pending');
    assert.equal(first.lastError, 'connection refused');
    assert.ok(first.nextAttemptAt);
    // Later events wait behind the first, so they arrive in order once the receiver is back.
    assert.ok(failing!.events.slice(1).every((e) => e.deliveries[0]!.attempts === 0));

    const back = await startReceiver({ port: downPort, secrets: [secret('downtime', 'main')] });
    receivers.back = back;
    const got = await deliveriesAt(back, ref, events.length);
    assert.deepEqual(
      got.map((d) => [d.message!.sequence, d.message!.type]),
      events.map((type, i) => [i + 1, type]),
    );
    assert.ok(got.every((d) => d.verified));
  });

  it('a receiver slower than the timeout: that attempt fails as a timeout, and the event comes again with the same id (at least once)', async () => {
    const ref = newRef('slow');
    await submit('slow', mobileRequest(ref));
    const events = statusEvents(await finalView('slow', ref));
    const got = await deliveriesAt(receivers.slow!, ref, 2 * events.length);
    const ids = got.map((d) => d.id);
    assert.equal(new Set(ids).size, events.length);
    for (const id of new Set(ids))
      assert.equal(ids.filter((x) => x === id).length, 2, 'received twice, same id');
    const state = await eventually(
      () => stateOf('slow', ref),
      (s) =>
        s?.events.length === events.length && s.events.every((e) => e.deliveries[0]!.state === 'delivered'),
      'all delivered',
    );
    for (const { deliveries } of state!.events) {
      assert.equal(deliveries[0]!.attempts, 2);
      assert.equal(deliveries[0]!.lastError, 'no answer within 1000 ms', 'the first attempt timed out');
    }
  });

  it('a slow endpoint of one client does not hold another’s: its events go to its delivery workflows, the other’s arrive on the first try', async () => {
    const slowRefs = Array.from({ length: 6 }, (_, i) => newRef(`sluggish${i}`));
    const promptRefs = Array.from({ length: 2 }, (_, i) => newRef(`prompt${i}`));
    await Promise.all(slowRefs.map((ref) => submit('sluggish', mobileRequest(ref))));
    await Promise.all(promptRefs.map((ref) => submit('prompt', mobileRequest(ref))));
    const promptViews = await Promise.all(promptRefs.map((ref) => finalView('prompt', ref)));
    await Promise.all(slowRefs.map((ref) => finalView('sluggish', ref)));
    for (const [i, ref] of promptRefs.entries()) {
      const events = statusEvents(promptViews[i]!);
      const got = await deliveriesAt(receivers.prompt!, ref, events.length);
      assert.deepEqual(
        got.map((d) => [d.message!.sequence, d.message!.type]),
        events.map((type, n) => [n + 1, type]),
      );
      const state = await stateOf('prompt', ref);
      assert.ok(
        state?.events.every((e) => e.deliveries[0]!.state === 'delivered' && e.deliveries[0]!.attempts === 1),
        `every event of ${ref} delivered on its first try: ${JSON.stringify(state?.events.map((e) => e.deliveries))}`,
      );
      await assert.rejects(
        stack.client.workflow.getHandle(webhookDeliveryWorkflowId(orderWorkflowId(ref, 'prompt'))).describe(),
        WorkflowNotFoundError,
        'nothing of the prompt client waited in a delivery workflow',
      );
    }
    // The slow endpoint's events wait in its own orders' delivery workflows, none given up yet.
    for (const ref of slowRefs) {
      const state = await stateOf('sluggish', ref);
      assert.ok(state && state.events.length > 0);
      assert.ok(
        state.events.every((e) => e.deliveries[0]!.state !== 'delivered'),
        'no attempt at the slow endpoint succeeds within the timeout',
      );
      assert.equal(
        (
          await stack.client.workflow
            .getHandle(webhookDeliveryWorkflowId(orderWorkflowId(ref, 'sluggish')))
            .describe()
        ).status.name,
        'RUNNING',
      );
    }
  });

  it('a private address, literal or behind a DNS name, is refused: nothing is sent, the order is not held, and the state says why', async () => {
    const literal = newRef('private');
    const named = newRef('private-name');
    const allowed = newRef('named');
    await submit('private_ip', mobileRequest(literal));
    await submit('private_name', mobileRequest(named));
    await submit('named', mobileRequest(allowed));
    const [, , allowedView] = await Promise.all([
      finalView('private_ip', literal),
      finalView('private_name', named),
      finalView('named', allowed),
    ]);
    const refused = await eventually(
      () => stateOf('private_ip', literal),
      (s) => (s?.events[0]?.deliveries[0]?.attempts ?? 0) >= 2,
      'refused attempts',
    );
    assert.match(refused!.events[0]!.deliveries[0]!.lastError!, /^refused: .*a private address/);
    const byName = await eventually(
      () => stateOf('private_name', named),
      (s) => (s?.events[0]?.deliveries[0]?.attempts ?? 0) >= 1,
      'refused attempt',
    );
    assert.match(byName!.events[0]!.deliveries[0]!.lastError!, /^refused: .*a loopback address/);
    // The same receiver's port under a name resolving to an allowed address is reached.
    const reached = await deliveriesAt(receivers.named!, allowed, statusEvents(allowedView).length);
    assert.ok(reached.every((d) => d.verified));
    assert.deepEqual(
      receivers.main!.deliveries.filter((d) => d.path === '/private'),
      [],
      'nothing reached the receiver through the refused name',
    );
    // After the retry window (8 s here) the refused event is given up, and the order view says why.
    const view = await eventually(
      async () =>
        (
          await call<OrderView & { webhooks?: EndpointDeliverySummary[] }>(
            'private_ip',
            'GET',
            `/v1/orders/${literal}`,
          )
        ).body,
      (v) => (v.webhooks?.[0]?.failed ?? 0) >= 1,
      'given up',
    );
    assert.match(view.webhooks![0]!.lastError!, /private address/);
  });

  it('an operator decision: order.needs_review, then order.fulfilled with the resolution, then order.review_decision', async () => {
    const ref = newRef('review');
    await submit('hooked', mobileRequest(ref, '0600000003'));
    await finalView('hooked', ref, 'NEEDS_REVIEW');
    const decided = await call('hooked', 'POST', `/v1/orders/${ref}/review`, {
      decision: 'FULFILLED',
      note: 'confirmed by the provider',
    });
    assert.equal(decided.status, 200, decided.text); // applied: the provider does not contradict it
    const got = await deliveriesAt(receivers.main!, ref, 4);
    assert.deepEqual(
      got.map((d) => [d.message!.sequence, d.message!.type, d.message!.data.status]),
      [
        [1, 'order.submitted', 'SUBMITTED'],
        [2, 'order.needs_review', 'NEEDS_REVIEW'],
        [3, 'order.fulfilled', 'FULFILLED'],
        [4, 'order.review_decision', 'FULFILLED'],
      ],
    );
    assert.equal(got[2]!.message!.data.review?.resolution?.decidedBy, 'hooked');
    assert.deepEqual(
      { ...got[3]!.message!.decision },
      {
        decision: 'FULFILLED',
        operator: 'Test client hooked',
        note: 'confirmed by the provider',
        decidedBy: 'hooked',
        outcome: 'FULFILLED',
      },
    );
  });

  it('a changed endpoint URL applies to the next attempt of events already waiting; a removed endpoint gets nothing more', async () => {
    const ref = newRef('moving');
    await submit('moving', mobileRequest(ref));
    const events = statusEvents(await finalView('moving', ref));
    await eventually(
      () => stateOf('moving', ref),
      (s) => (s?.events[0]?.deliveries[0]?.attempts ?? 0) >= 1,
      'a failed attempt at the old URL',
    );
    const movedTo = (
      file: ClientsFile,
      webhooks: ClientsFile['clients'][number]['webhooks'],
    ): ClientsFile => ({
      ...file,
      clients: file.clients.map((c) => (c.id === 'moving' ? { ...c, webhooks } : c)),
    });
    stack.webhooks.registry.replace(movedTo(clients, [{ id: 'main', url: `${receivers.moved!.url}/new` }]));
    const got = await deliveriesAt(receivers.moved!, ref, events.length);
    assert.ok(got.every((d) => d.verified && d.path === '/new'));

    const next = newRef('removed');
    stack.webhooks.registry.replace(
      movedTo(clients, [{ id: 'main', url: `http://127.0.0.1:${movedFromPort}/old` }]),
    );
    await submit('moving', mobileRequest(next));
    await finalView('moving', next);
    await eventually(
      () => stateOf('moving', next),
      (s) => (s?.events[0]?.deliveries[0]?.attempts ?? 0) >= 1,
      'a failed attempt',
    );
    stack.webhooks.registry.replace(movedTo(clients, []));
    const skipped = await eventually(
      () => stateOf('moving', next),
      (s) => s?.events.every((e) => e.deliveries[0]!.state === 'skipped') ?? false,
      'skipped once removed',
    );
    assert.equal(skipped!.events[0]!.deliveries[0]!.lastError, 'the endpoint is no longer configured');
    stack.webhooks.registry.replace(clients);
  });

  it('a redelivery sends the same id and body again, while the delivery workflow runs and after it has closed', async () => {
    const first = ofRef(receivers.main!, normalRef)[0]!;
    const deliveryWorkflow = stack.client.workflow.getHandle(
      webhookDeliveryWorkflowId(orderWorkflowId(normalRef, 'hooked')),
    );
    // Every event went directly: the redelivery is the first the delivery workflow hears of it.
    await assert.rejects(deliveryWorkflow.describe(), WorkflowNotFoundError);
    const res = await call<{ eventId: string; endpoints: string[] }>(
      'hooked',
      'POST',
      `/v1/orders/${normalRef}/webhooks/${first.id}/redeliver`,
    );
    assert.equal(res.status, 202, res.text);
    assert.deepEqual(res.body.endpoints, ['main']);
    const again = await eventually(
      () => receivers.main!.deliveries.filter((d) => d.id === first.id),
      (list) => list.length === 2,
      'redelivered',
    );
    assert.equal(again[1]!.rawBody, first.rawBody, 'same body');
    assert.ok(again[1]!.verified);
    const state = await eventually(
      () => stateOf('hooked', normalRef),
      (s) =>
        s?.events[0]?.deliveries[0]?.redeliveries === 1 && s.events[0].deliveries[0].state === 'delivered',
      'counted',
    );
    assert.equal(
      state!.events.length,
      ofRef(receivers.main!, normalRef).length - 1,
      'every event is still listed',
    );

    // After it closed: a redelivery starts it again with what it had.
    await eventually(
      async () => (await deliveryWorkflow.describe()).status.name,
      (status) => status === 'COMPLETED',
      'the delivery workflow closed',
    );
    // To one endpoint only, and only one the event was for.
    const fulfilled = ofRef(receivers.fulfilledOnly!, normalRef)[0]!;
    const one = await call(
      'hooked',
      'POST',
      `/v1/orders/${normalRef}/webhooks/${fulfilled.id}/redeliver?endpoint=fulfilled_only`,
    );
    assert.equal(one.status, 202, one.text);
    await eventually(
      () => receivers.fulfilledOnly!.deliveries.filter((d) => d.id === fulfilled.id),
      (list) => list.length === 2,
      'redelivered to fulfilled_only',
    );
    const both = await eventually(
      () => stateOf('hooked', normalRef),
      (s) =>
        s?.events[0]?.deliveries[0]?.redeliveries === 1 &&
        s.events[2]?.deliveries.find((d) => d.endpoint === 'fulfilled_only')?.redeliveries === 1,
      'both redeliveries counted',
    );
    assert.deepEqual(
      both!.events[2]!.deliveries.map((d) => [d.endpoint, d.state, d.redeliveries ?? 0]),
      [
        ['main', 'delivered', 0],
        ['fulfilled_only', 'delivered', 1],
      ],
    );
    const notFor = await call<Problem>(
      'hooked',
      'POST',
      `/v1/orders/${normalRef}/webhooks/${first.id}/redeliver?endpoint=fulfilled_only`,
    );
    assert.equal(notFor.status, 404);
    assert.equal(notFor.body.type, '/problems/webhook-event-not-found');
    const unknown = await call<Problem>(
      'hooked',
      'POST',
      `/v1/orders/${normalRef}/webhooks/evt_nosuchevent/redeliver`,
    );
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.type, '/problems/webhook-event-not-found');
  });

  it('no webhook from a refused request: an invalid body, a conflicting ref, no scope and no key send nothing', async () => {
    const invalid = newRef('invalid');
    const bad = await call('hooked', 'POST', '/v1/orders', { ...mobileRequest(invalid), msisdn: '12' });
    assert.equal(bad.status, 400);
    const conflictRef = newRef('conflict');
    await submit('hooked', mobileRequest(conflictRef));
    const events = statusEvents(await finalView('hooked', conflictRef));
    await deliveriesAt(receivers.main!, conflictRef, events.length);
    const conflict = await call('hooked', 'POST', '/v1/orders', {
      ...mobileRequest(conflictRef),
      amount: 999,
    });
    assert.equal(conflict.status, 409);
    const forbidden = newRef('forbidden');
    assert.equal((await call('reader', 'POST', '/v1/orders', mobileRequest(forbidden))).status, 403);
    const anonymous = newRef('anonymous');
    assert.equal((await call('nobody', 'POST', '/v1/orders', mobileRequest(anonymous))).status, 401);

    await sleep(1_500);
    for (const ref of [invalid, forbidden, anonymous]) {
      assert.deepEqual(ofRef(receivers.main!, ref), [], `nothing for ${ref}`);
      for (const client of ['hooked', 'reader', 'shop']) {
        await assert.rejects(
          stack.client.workflow.getHandle(webhookDeliveryWorkflowId(orderWorkflowId(ref, client))).describe(),
          WorkflowNotFoundError,
        );
      }
    }
    assert.deepEqual(
      ofRef(receivers.main!, conflictRef).map((d) => d.message!.type),
      events,
      'the 409 added no event to the order it conflicted with',
    );
  });

  describe('every webhook route: the owner, another client (404), no scope (403), no key (401)', () => {
    it('GET /v1/webhooks lists the caller’s own endpoints, never a secret', async () => {
      const own = await call<{ endpoints: EndpointView[] }>('hooked', 'GET', '/v1/webhooks');
      assert.equal(own.status, 200, own.text);
      assert.deepEqual(
        own.body.endpoints.map((e) => [e.id, e.events, e.cardCodes, e.secretVersion]),
        [
          ['main', undefined, true, 1],
          ['fulfilled_only', ['order.fulfilled'], false, 1],
        ],
      );
      assert.doesNotMatch(own.text, /whsec_/);
      for (const endpoint of ['main', 'fulfilled_only'])
        assert.ok(!own.text.includes(secret('hooked', endpoint)));
      const other = await call<{ endpoints: EndpointView[] }>('acme', 'GET', '/v1/webhooks');
      assert.equal(other.status, 200);
      assert.deepEqual(other.body.endpoints, [], 'another client sees its own (none), not hooked’s');
      assert.equal((await call('reader', 'GET', '/v1/webhooks')).status, 403);
      assert.equal((await call('nobody', 'GET', '/v1/webhooks')).status, 401);
    });

    it('GET /v1/orders/{ref}/webhooks', async () => {
      const path = `/v1/orders/${normalRef}/webhooks`;
      assert.equal((await call('hooked', 'GET', path)).status, 200);
      const other = await call<Problem>('acme', 'GET', path);
      assert.equal(other.status, 404);
      assert.equal(other.body.type, '/problems/order-not-found');
      const noScope = await call<Problem>('reader', 'GET', path);
      assert.equal(noScope.status, 403);
      assert.match(noScope.body.detail, /webhooks:read/);
      assert.equal((await call('nobody', 'GET', path)).status, 401);
    });

    it('POST /v1/orders/{ref}/webhooks/{eventId}/redeliver: a refusal sends nothing', async () => {
      const event = ofRef(receivers.main!, normalRef)[1]!;
      const path = `/v1/orders/${normalRef}/webhooks/${event.id}/redeliver`;
      const before = receivers.main!.deliveries.filter((d) => d.id === event.id).length;
      const other = await call<Problem>('acme', 'POST', path);
      assert.equal(other.status, 404);
      assert.equal(other.body.type, '/problems/order-not-found');
      const noScope = await call<Problem>('reader', 'POST', path);
      assert.equal(noScope.status, 403);
      assert.match(noScope.body.detail, /webhooks:write/);
      assert.equal((await call('nobody', 'POST', path)).status, 401);
      await sleep(1_500);
      assert.equal(
        receivers.main!.deliveries.filter((d) => d.id === event.id).length,
        before,
        'nothing sent',
      );
      assert.equal((await call('hooked', 'POST', path)).status, 202);
      await eventually(
        () => receivers.main!.deliveries.filter((d) => d.id === event.id),
        (list) => list.length === before + 1,
        'the owner’s redelivery arrives',
      );
    });

    it('another client’s order view has no deliveries, and an order with no endpoint shows none', async () => {
      const plain = newRef('plain-view');
      await submit('plain', mobileRequest(plain));
      const view = await call<OrderView & { webhooks?: unknown }>('plain', 'GET', `/v1/orders/${plain}`);
      assert.equal(view.status, 200);
      assert.equal(view.body.webhooks, undefined);
      const detail = await call<{ events: unknown[] }>('plain', 'GET', `/v1/orders/${plain}/webhooks`);
      assert.equal(detail.status, 200);
      assert.deepEqual(detail.body.events, []);
    });
  });

  it('the delivery state of a finished order is kept after its workflow closed (its result)', async () => {
    const state: WebhookDeliveryState | undefined = await stateOf('hooked', normalRef);
    assert.equal(state?.events.length, 3, 'submitted, processing, fulfilled');
    assert.equal(state?.orderFinal, true);
  });
});
