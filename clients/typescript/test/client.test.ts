/**
 * The client library against the real API: a Temporal dev server, the sandbox over HTTP, the
 * order and webhook workers and the intake API (test/helpers/webhooks.ts), and a real receiver.
 * Every call the library wraps, paging across pages, the export's stream, the retry path on a
 * real 429 (a client's concurrency limit) and a real 503 (a namespace whose search attributes are
 * registered while the client waits), and real deliveries verified, replayed and tampered with.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { startTestApi, apiTestConfig, testClients } from '../../../test/helpers/api';
import type { ClientsFile } from '../../../src/clients/model';
import { ClientRegistry } from '../../../src/clients/registry';
import { hashApiKey } from '../../../src/clients/keys';
import { ensureTemporalSetup } from '../../../src/temporal/setup';
import { startReceiver, type ReceivedWebhook, type RunningReceiver } from '../../../src/webhooks/receiver';
import { mobileRequest, scaledTimings, testProvider } from '../../../test/helpers/orders';
import { clientsWith, eventually } from '../../../test/helpers/webhooks';
import { startOrderStack, type OrderStack } from '../../../test/helpers/stack';
import {
  isProblem,
  ProblemError,
  TopupClient,
  WebhookReplayError,
  WebhookVerificationError,
  WebhookVerifier,
  type OrderRequest,
} from '../src';

const KEYS = {
  bo: 'test-key-bo',
  throttled: 'test-key-throttled',
  slowpoke: 'test-key-slowpoke',
  auditor: 'test-key-auditor',
};
const newRef = (label: string) => `CL-${label}-${randomUUID().slice(0, 8)}`;
const FINAL = new Set(['FULFILLED', 'PARTIALLY_FULFILLED', 'REFUNDED', 'FAILED', 'CANCELLED']);
/** The sandbox's number whose top-up answers UNKNOWN_ERROR: the order goes to review. */
const UNKNOWN_NUMBER = '0600000003';

/** The headers a delivery came with, as a receiver would pass them on. */
const headersOf = (d: ReceivedWebhook) => ({
  'webhook-id': d.id,
  'webhook-timestamp': String(d.signedAt),
  'webhook-signature': d.signature,
});

describe('the TypeScript client library against the API', { timeout: 600_000 }, () => {
  const signingKey = randomBytes(32);
  let stack: OrderStack<'orders'>;
  let receiver: RunningReceiver;
  let bo: TopupClient;
  let secret: string;
  const startedAt = new Date(Date.now() - 1_000).toISOString();

  before(async () => {
    receiver = await startReceiver({ secrets: [], answer: () => ({ status: 204 }) });
    const base = clientsWith({
      bo: { key: KEYS.bo, webhooks: [{ id: 'main', url: `${receiver.url}/hooks` }] },
    });
    const extra = (
      id: string,
      key: string,
      limits: object,
      scopes: ClientsFile['clients'][number]['scopes'] = ['orders:write', 'orders:read'],
    ) => ({ id, name: id, scopes, keys: [{ id: 'k1', hash: hashApiKey(key) }], limits });
    const clients: ClientsFile = {
      ...base,
      clients: [
        ...base.clients,
        // One request at a time: a second one at once is a 429 with Retry-After: 1.
        extra('throttled', KEYS.throttled, { concurrentRequests: 1 }),
        // One read a minute: the second waits most of a minute, past any test deadline.
        extra('slowpoke', KEYS.slowpoke, { requestsPerMinute: 1 }),
        // Reads any client's order, masked unless it asks to see it in clear.
        extra('auditor', KEYS.auditor, {}, ['orders:read', 'audit:read', 'audit:reveal']),
      ],
    };
    stack = await startOrderStack({
      name: 'client-lib',
      sandbox: { timeScale: 0.25 },
      workers: { orders: {} },
      api: {
        timingsFor: () =>
          scaledTimings({
            firstCheckMs: 1_250,
            handlingCheckMs: 3_750,
            maxIntervalMs: 5_000,
            deadlineMs: 120_000,
          }),
      },
      webhooks: {
        clients,
        signingKey,
      },
    });
    secret = stack.webhooks.secretOf('bo', 'main');
    bo = new TopupClient({ baseUrl: stack.api.url, apiKey: KEYS.bo, deadlineMs: 20_000 });
  });

  after(async () => {
    await stack?.stop();
    await receiver?.close();
  });

  const finalOrder = (client: TopupClient, ref: string, status?: string) =>
    eventually(
      () => client.getOrder(ref),
      (o) => (status ? o.status === status : FINAL.has(o.status)),
      `${ref} ${status ?? 'final'}`,
      90_000,
    );

  let fulfilledRef = '';

  it('submit: 201 a new order, 200 the same ref and body again (the same order), 409 another body, 400 naming the field', async () => {
    fulfilledRef = newRef('single');
    const first = await bo.submit(mobileRequest(fulfilledRef));
    assert.equal(first.created, true);
    assert.equal(first.order.status, 'ACCEPTED');
    const again = await bo.submit(mobileRequest(fulfilledRef));
    assert.equal(again.created, false);
    assert.equal(again.order.workflowId, first.order.workflowId);
    await assert.rejects(
      bo.submit({ ...mobileRequest(fulfilledRef), amount: 700 } as OrderRequest),
      (err) => {
        assert.ok(isProblem(err, 'ref-conflict'), String(err));
        assert.equal(err.status, 409);
        assert.ok(err.requestId);
        return true;
      },
    );
    await assert.rejects(
      bo.submit({ ...mobileRequest(newRef('bad')), msisdn: '12' } as OrderRequest),
      (err) => {
        assert.ok(err instanceof ProblemError && err.problemType === 'validation-error', String(err));
        assert.deepEqual(
          err.fieldErrors.map((e) => e.field),
          ['msisdn'],
        );
        return true;
      },
    );
    const order = await finalOrder(bo, fulfilledRef, 'FULFILLED');
    assert.equal(order.ref, fulfilledRef);
  });

  it('getOrder: another client’s order reads masked, and in clear with reveal', async () => {
    const auditor = new TopupClient({ baseUrl: stack.api.url, apiKey: KEYS.auditor, deadlineMs: 20_000 });
    const msisdn = mobileRequest(fulfilledRef).msisdn;
    const number = (o: { request: object }) => (o.request as { msisdn?: string }).msisdn;
    assert.equal(number(await bo.getOrder(fulfilledRef)), msisdn, 'the owner reads its own in clear');
    assert.equal(number(await auditor.getOrder(fulfilledRef, { client: 'bo' })), '[masked]');
    assert.equal(number(await auditor.getOrder(fulfilledRef, { client: 'bo', reveal: true })), msisdn);
    await assert.rejects(
      bo.getOrder(fulfilledRef, { reveal: true }),
      (err) => isProblem(err) && err.status === 403,
      'reveal needs audit:reveal, owner or not',
    );
  });

  it('submitBatch: one result per order, in order; a bad one does not block the others', async () => {
    const refs = [newRef('b1'), newRef('b2')];
    const results = await bo.submitBatch([
      mobileRequest(refs[0]!),
      { ...mobileRequest(newRef('b-bad')), msisdn: 'x' } as OrderRequest,
      mobileRequest(refs[1]!),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      [201, 400, 201],
    );
  });

  it('listOrders: pages through every order with the tokens, each once', async () => {
    const refs = Array.from({ length: 5 }, (_, i) => newRef(`page${i}`));
    const results = await bo.submitBatch(refs.map((ref) => mobileRequest(ref)));
    assert.ok(results.every((r) => r.status === 201));
    const first = await bo.listOrdersPage({ pageSize: 2, acceptedFrom: startedAt });
    assert.equal(first.orders.length, 2);
    assert.ok(first.nextPageToken, 'more than one page');
    // Visibility lags a start by a moment: read until all five show.
    const listed = await eventually(
      async () => {
        const seen: string[] = [];
        for await (const order of bo.listOrders({ pageSize: 2, acceptedFrom: startedAt }))
          seen.push(order.ref);
        return seen;
      },
      (seen) => refs.every((ref) => seen.includes(ref)),
      'all five listed',
    );
    assert.equal(new Set(listed).size, listed.length, 'each order once');
    assert.ok(listed.length >= 8, 'the earlier orders too, so at least four pages of two');
  });

  it('exportOrders: streams the range as typed rows; statement: the books for the day', async () => {
    const to = new Date(Date.now() + 60_000).toISOString();
    const rows = await eventually(
      async () => {
        const got = [];
        for await (const row of bo.exportOrders({ from: startedAt, to })) got.push(row);
        return got;
      },
      (got) => got.some((row) => row.ref === fulfilledRef && row.status === 'FULFILLED'),
      'the fulfilled order exported',
    );
    assert.ok(rows.every((row) => row.client === 'bo' && typeof row.position === 'string'));
    let csv = '';
    for await (const chunk of bo.exportOrdersCsv({ from: startedAt, to })) csv += chunk;
    assert.match(csv.split('\n')[0]!, /^position,ref,/);
    assert.ok(csv.includes(fulfilledRef));

    const day = new Date().toISOString().slice(0, 10);
    const statement = await eventually(
      () => bo.statement({ from: `${day}T00:00:00Z`, to }),
      (s) => s.days.some((line) => line.status === 'FULFILLED' && line.orders >= 1),
      'a FULFILLED line',
    );
    assert.equal(statement.client, 'bo');
  });

  it('decide: a refusal is a typed 409 saying it is forceable; forcing is refused to the back office (403 naming force) and applied for an operator: the order is REFUNDED', async () => {
    const ref = newRef('review');
    await bo.submit(mobileRequest(ref, UNKNOWN_NUMBER));
    await finalOrder(bo, ref, 'NEEDS_REVIEW');
    await assert.rejects(bo.decide(ref, { decision: 'REFUNDED', note: 'customer says no credit' }), (err) => {
      assert.ok(isProblem(err, 'decision-refused'), String(err));
      assert.equal(err.problem.forceable, true);
      return true;
    });
    const forced = {
      decision: 'REFUNDED' as const,
      note: 'provider confirmed no credit, ticket 4412',
      force: true,
    };
    await assert.rejects(bo.decide(ref, forced), (err) => {
      assert.ok(isProblem(err, 'forbidden'), String(err));
      return true;
    });
    const operator = new TopupClient({ baseUrl: stack.api.url, apiKey: testClients.operator.key });
    const decided = await operator.decide(ref, { ...forced, operator: 'amina' }, { client: 'bo' });
    if (!decided.pending) assert.equal(decided.order.status, 'REFUNDED');
    await finalOrder(bo, ref, 'REFUNDED');
  });

  it('decideBulk: collects the 202 (running) by sending the same request again until the results come', async () => {
    const refs = [newRef('bulk1'), newRef('bulk2')];
    await bo.submitBatch(refs.map((ref) => mobileRequest(ref, UNKNOWN_NUMBER)));
    await Promise.all(refs.map((ref) => finalOrder(bo, ref, 'NEEDS_REVIEW')));
    // An API that waits 100 ms for a bulk before answering 202: the decisions take longer.
    const impatient = await stack.startApi({ config: apiTestConfig({ API_REQUEST_TIMEOUT_MS: '2100' }) });
    try {
      const operator = new TopupClient({ baseUrl: impatient.url, apiKey: testClients.operator.key });
      const request = {
        bulkId: `bulk-${randomUUID().slice(0, 8)}`,
        filter: { client: 'bo', status: 'NEEDS_REVIEW' as const },
        decision: 'REFUNDED' as const,
        operator: 'amina',
        note: 'outage: provider confirmed nothing credited',
        force: true,
      };
      const firstAnswer = await operator.raw.POST('/v1/reviews/bulk', { body: request });
      assert.equal(firstAnswer.response.status, 202, 'the API answered running first');
      const answer = await operator.decideBulk(request, { collectEveryMs: 300, deadlineMs: 60_000 });
      assert.equal(answer.state, 'done');
      const decided = new Map(answer.results?.map((r) => [r.ref, r.outcome]));
      for (const ref of refs) assert.equal(decided.get(ref), 'applied', JSON.stringify(answer.results));
    } finally {
      await impatient.close();
    }
  });

  it('webhooks: real deliveries verify; a replay, a tampered body, a wrong secret and an old timestamp are refused; redelivery comes again with the same id', async () => {
    const endpoints = await bo.webhookEndpoints();
    assert.deepEqual(
      endpoints.map((e) => e.id),
      ['main'],
    );
    const deliveries = await eventually(
      () => receiver.deliveries.filter((d) => d.rawBody.includes(fulfilledRef)),
      (got) => got.length >= 3,
      'three deliveries of the fulfilled order',
    );
    const verifier = new WebhookVerifier({ secrets: secret });
    const events = [];
    for (const d of deliveries) events.push(await verifier.verify(d.rawBody, headersOf(d)));
    assert.deepEqual(
      events.map((e) => e.type),
      ['order.submitted', 'order.processing', 'order.fulfilled'],
    );
    assert.equal(events[2]!.data.status, 'FULFILLED');
    assert.equal(events[2]!.data.ref, fulfilledRef);

    const last = deliveries[2]!;
    await assert.rejects(verifier.verify(last.rawBody, headersOf(last)), (err) => {
      assert.ok(err instanceof WebhookReplayError);
      assert.equal(err.event.id, last.id);
      return true;
    });
    const tampered = last.rawBody.replace('"FULFILLED"', '"REFUNDED"');
    assert.notEqual(tampered, last.rawBody);
    const fresh = () => new WebhookVerifier({ secrets: secret });
    const refusedFor = async (verifier: WebhookVerifier, body: string, headers: object, reason: string) =>
      assert.rejects(verifier.verify(body, headers as Record<string, string>), (err) => {
        assert.ok(err instanceof WebhookVerificationError, String(err));
        assert.equal(err.reason, reason, err.message);
        return true;
      });
    await refusedFor(fresh(), tampered, headersOf(last), 'bad-signature');
    await refusedFor(
      new WebhookVerifier({ secrets: stack.webhooks.secretOf('bo', 'main', 2) }),
      last.rawBody,
      headersOf(last),
      'bad-signature',
    );
    // Rotation: the new secret and the old one given, a delivery signed with the old verifies.
    assert.equal(
      (
        await new WebhookVerifier({ secrets: [stack.webhooks.secretOf('bo', 'main', 2), secret] }).verify(
          last.rawBody,
          headersOf(last),
        )
      ).id,
      last.id,
    );
    const later = () => (last.signedAt + 301) * 1_000;
    await refusedFor(
      new WebhookVerifier({ secrets: secret, now: later }),
      last.rawBody,
      headersOf(last),
      'too-old',
    );

    const record = await bo.orderWebhooks(fulfilledRef);
    const fulfilledEvent = record.events.find((e) => e.type === 'order.fulfilled');
    assert.ok(fulfilledEvent);
    const accepted = await bo.redeliver(fulfilledRef, fulfilledEvent.id, { endpoint: 'main' });
    assert.ok(accepted);
    const again = await eventually(
      () => receiver.deliveries.filter((d) => d.id === fulfilledEvent.id),
      (got) => got.length >= 2,
      'the redelivery',
    );
    // The same event, signed anew: authentic, and a replay to a verifier that saw it.
    assert.equal(again[1]!.rawBody, again[0]!.rawBody);
    await assert.rejects(verifier.verify(again[1]!.rawBody, headersOf(again[1]!)), WebhookReplayError);
    assert.equal((await fresh().verify(again[1]!.rawBody, headersOf(again[1]!))).id, fulfilledEvent.id);
  });

  it('retries a real 429 after its Retry-After and jitter: every call of a client limited to one at a time succeeds', async () => {
    const retries: number[] = [];
    const throttled = new TopupClient({
      baseUrl: stack.api.url,
      apiKey: KEYS.throttled,
      deadlineMs: 30_000,
      retry: { onRetry: ({ status, delayMs }) => retries.push(status, delayMs) },
    });
    const refs = Array.from({ length: 4 }, (_, i) => newRef(`throttled${i}`));
    const submitted = await Promise.all(refs.map((ref) => throttled.submit(mobileRequest(ref))));
    assert.ok(submitted.every((s) => s.created));
    assert.ok(retries.length > 0, 'some were refused and retried');
    for (let i = 0; i < retries.length; i += 2) {
      assert.equal(retries[i], 429);
      // Retry-After: 1, plus at most 20 % jitter.
      assert.ok(retries[i + 1]! >= 1_000 && retries[i + 1]! <= 1_200, String(retries[i + 1]));
    }
  });

  it('does not wait past its deadline: a Retry-After beyond it is the typed 429 at once', async () => {
    const slowpoke = new TopupClient({ baseUrl: stack.api.url, apiKey: KEYS.slowpoke, deadlineMs: 5_000 });
    const ref = newRef('slowpoke');
    await assert.rejects(slowpoke.getOrder(ref), (err) => isProblem(err, 'order-not-found'));
    const started = Date.now();
    await assert.rejects(slowpoke.getOrder(ref), (err) => {
      assert.ok(isProblem(err, 'rate-limited'), String(err));
      assert.ok((err.retryAfterSeconds ?? 0) > 5, 'asked to wait longer than the deadline');
      return true;
    });
    assert.ok(Date.now() - started < 2_000, 'gave up without waiting');
  });

  it('retries a real 503 (search attributes not registered yet) until the order is taken, the same ref started once', async () => {
    const connection = await Connection.connect({ address: stack.temporal.address });
    const namespace = `client-503-${randomUUID().slice(0, 8)}`;
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs('1 day'),
    });
    const api = await startTestApi({
      client: new Client({ connection, namespace }),
      taskQueue: `client-503-${randomUUID().slice(0, 8)}`,
      provider: testProvider(stack.sandbox.url).client,
      clients: new ClientRegistry(clientsWith({ bo: { key: KEYS.bo } })),
    });
    try {
      const statuses: number[] = [];
      let setUp: Promise<unknown> | undefined;
      const client = new TopupClient({
        baseUrl: api.url,
        apiKey: KEYS.bo,
        deadlineMs: 90_000,
        retry: {
          maxAttempts: 20,
          onRetry: ({ status }) => {
            statuses.push(status);
            // The deployer runs the setup while the back office waits.
            setUp ??= ensureTemporalSetup(connection, { namespace, retentionMs: 86_400_000 });
          },
        },
      });
      const ref = newRef('unready');
      const submitted = await client.submit(mobileRequest(ref));
      await setUp;
      assert.ok(statuses.length >= 1 && statuses.every((s) => s === 503), String(statuses));
      assert.equal(submitted.created, true);
      assert.equal((await client.submit(mobileRequest(ref))).created, false, 'one order for the ref');
    } finally {
      await api.close();
      await connection.close();
    }
  });
});
