/**
 * Clients, scopes and tenant isolation, end to end: real HTTP against createApp with the test
 * clients (test/helpers/api.ts), a real Temporal server, the provider sandbox and a worker running
 * the real workflows on this file's own task queue.
 *
 * The matrix runs every route as the order's owner, as another client, as a client without the
 * route's scope and without a key — plus the operator and an audit:read client where they reach —
 * and asserts the status (2xx / 404 / 403 / 401) and, for every refusal, that nothing was started
 * or changed (no workflow for the ref, no signal or event added to the order's history).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { MASKED } from '../../src/audit/mask';
import type { Problem } from '../../src/http/errors';
import type { OrderView } from '../../src/orders/order.service';
import type { OrderAudit } from '../../src/audit/order-audit';
import { requestHash } from '../../src/orders/order.service';
import {
  apiTestConfig,
  capturingLogger,
  OTHER_TEST_API_KEY,
  startTestApi,
  testClients,
  type ApiResponse,
  type TestApi,
  type TestClientId,
  testCallerKey,
  type TestCaller,
  apiViewUntil,
} from '../helpers/api';
import { keyDigest } from '../../src/clients/keys';
import { providerRefFor } from '../../src/orders/provider-ref';
import type { OrderRequest, OrderType } from '../../contract/schemas';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { OrderClientAttribute, orderWorkflowId, type OrderInput } from '../../contract/order';
import {
  internetRequest,
  mobileRequest,
  scaledTimings,
  waitForView,
  type TestSandbox,
  mobileResultBesidesDebit,
  refsPrefixed,
  startOrderAs,
} from '../helpers/orders';
import { rawHistory } from '../helpers/raw-history';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const newRef = refsPrefixed('CL');

/**
 * The sandbox at a tenth of the spec's timings: a top-up is PENDING for 0.5 s and FULFILLED at 2 s.
 * Internet top-ups get a 10 ms deadline, so their first check (50 ms) finds them open and sends
 * them to review as stuck; the review's recheck (every second) then finds them FULFILLED, with a
 * card code: an order that was in review and carries a secret, for the operator's masking.
 */
const SANDBOX_TIME_SCALE = 0.1;
const timingsFor = (type: OrderType) =>
  type === 'internet_topup' ? scaledTimings({ deadlineMs: 10, reviewRecheckMs: 1_000 }) : scaledTimings();

/** Every key and key hash of the test clients: none may appear in an answer, a log line or a history. */
const secrets = [
  ...Object.values(testClients).map((c) => c.key),
  OTHER_TEST_API_KEY,
  ...[...Object.values(testClients).map((c) => c.key), OTHER_TEST_API_KEY].map((k) =>
    keyDigest(k).toString('hex'),
  ),
];

function assertProblem(res: ApiResponse, status: number, type: string): Problem {
  assert.equal(res.status, status, res.text);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  const problem = res.body as Problem;
  assert.equal(problem.type, `/problems/${type}`, res.text);
  return problem;
}

describe('clients, scopes and tenant isolation', () => {
  let stack: OrderStack<'main'>;
  let sandbox: TestSandbox;
  let client: Client;
  let api: TestApi;
  let taskQueue: string;
  const logs = capturingLogger();
  /** Every answer of this file: checked for keys and hashes at the end. */
  const answers: ApiResponse[] = [];

  /** Seeded orders, all shop's (the default client) but acmeOrder. */
  const seed = {
    inReview: newRef('review'),
    forOwnerDecision: newRef('owner-decides'),
    forOperatorDecision: newRef('operator-decides'),
    fulfilled: newRef('done'),
    reviewedWithCard: newRef('card'),
    acmeOrder: newRef('acme'),
    ledgerOrder: newRef('ledger'),
  };

  async function call<T = unknown>(
    caller: TestCaller,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<ApiResponse<T>> {
    const res = await api.request<T>(method, path, { apiKey: testCallerKey(caller), body });
    answers.push(res);
    return res;
  }

  async function view(caller: TestCaller, ref: string, query = ''): Promise<ApiResponse<OrderView>> {
    return call<OrderView>(caller, 'GET', `/v1/orders/${ref}${query}`);
  }

  const waitForStatus = (caller: TestClientId, ref: string, done: (v: OrderView) => boolean) =>
    apiViewUntil(api, ref, done, { timeoutMs: 30_000, apiKey: testCallerKey(caller) });

  interface Listed {
    orders: { ref: string; client?: string; status?: string }[];
    /** Every page's text, for what must never be in a list. */
    text: string;
  }

  /**
   * Every page of a list until each of `wanted` was on one (the shared test server holds other
   * files' orders too, and visibility trails the workflows), retried for a while.
   */
  async function listAll(caller: TestCaller, query: string, wanted: string[]): Promise<Listed> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const listed: Listed = { orders: [], text: '' };
      let token: string | undefined;
      for (let page = 0; page < 100; page++) {
        const res = await call<{ orders: Listed['orders']; nextPageToken?: string }>(
          caller,
          'GET',
          `/v1/orders?pageSize=100${query}${token ? `&pageToken=${token}` : ''}`,
        );
        assert.equal(res.status, 200, res.text);
        listed.orders.push(...res.body.orders);
        listed.text += res.text;
        token = res.body.nextPageToken;
        if (!token) break;
      }
      const refs = new Set(listed.orders.map((o) => o.ref));
      if (wanted.every((r) => refs.has(r)) || Date.now() > deadline) return listed;
      await sleep(250);
    }
  }

  const refsOf = (listed: Listed) => listed.orders.map((o) => o.ref);

  async function submit(caller: TestClientId, request: OrderRequest): Promise<void> {
    const res = await api.request('POST', '/v1/orders', { apiKey: testCallerKey(caller), body: request });
    assert.equal(res.status, 201, res.text);
  }

  const handleOf = (ref: string, owner?: string) => client.workflow.getHandle(orderWorkflowId(ref, owner));

  async function events(ref: string): Promise<{ total: number; signals: number }> {
    const history = await handleOf(ref).fetchHistory();
    const all = history.events ?? [];
    return {
      total: all.length,
      signals: all.filter((e) => e.workflowExecutionSignaledEventAttributes).length,
    };
  }

  async function assertNoWorkflow(workflowId: string): Promise<void> {
    await assert.rejects(
      client.workflow.getHandle(workflowId).describe(),
      WorkflowNotFoundError,
      `no workflow ${workflowId} may exist`,
    );
  }

  before(async () => {
    stack = await startOrderStack({
      name: 'api-clients',
      sandbox: { timeScale: SANDBOX_TIME_SCALE },
      workers: { main: {} },
      api: { timingsFor, logger: logs.logger, config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '5000' }) },
    });
    ({ sandbox, client, api } = stack);
    taskQueue = stack.taskQueues.main;

    const unknown = sandboxSpecialNumbers.unknownError;
    await Promise.all([
      submit('shop', mobileRequest(seed.inReview, unknown)),
      submit('shop', mobileRequest(seed.forOwnerDecision, unknown)),
      submit('shop', mobileRequest(seed.forOperatorDecision, unknown)),
      submit('shop', mobileRequest(seed.fulfilled)),
      submit('shop', internetRequest(seed.reviewedWithCard)),
      submit('acme', mobileRequest(seed.acmeOrder)),
      submit('ledger', mobileRequest(seed.ledgerOrder)),
    ]);
    const inReview = (v: OrderView) => v.status === 'NEEDS_REVIEW';
    await Promise.all([
      waitForStatus('shop', seed.inReview, inReview),
      waitForStatus('shop', seed.forOwnerDecision, inReview),
      waitForStatus('shop', seed.forOperatorDecision, inReview),
      waitForStatus('shop', seed.fulfilled, (v) => v.status === 'FULFILLED'),
      waitForStatus('shop', seed.reviewedWithCard, (v) => v.status === 'FULFILLED'),
      waitForStatus('acme', seed.acmeOrder, (v) => v.status === 'FULFILLED'),
      waitForStatus('ledger', seed.ledgerOrder, (v) => v.status === 'FULFILLED'),
    ]);
  });

  after(async () => {
    await Promise.allSettled(
      [seed.inReview, seed.forOwnerDecision, seed.forOperatorDecision].map((ref) =>
        handleOf(ref).terminate('test done'),
      ),
    );
    await stack?.stop();
  });

  it('the seeds are what the matrix needs: orders in review, fulfilled, and reviewed with a card code', async () => {
    const card = (await view('shop', seed.reviewedWithCard)).body;
    assert.ok(card.review, 'the internet top-up went through review');
    assert.ok(card.result?.cardCode && card.result.cardCode !== MASKED, 'and carries a card code');
    assert.equal((await view('shop', seed.fulfilled)).body.review, undefined, 'never in review');
  });

  // ---- the matrix: route × caller ----

  type Kind = 'owner' | 'another client' | 'no scope' | 'no key' | 'operator' | 'audit:read';
  interface Case {
    route: string;
    kind: Kind;
    /** The test client, and how it addresses the order when that matters. */
    caller: string;
    status: number;
    /** Runs the request and checks the answer and its effects. */
    run(): Promise<void>;
  }
  const matrix: Case[] = [];
  const add = (route: string, kind: Kind, caller: string, status: number, run: () => Promise<void>) =>
    matrix.push({ route, kind, caller, status, run });

  /** A refused request on a seeded order changed nothing: same history length, no signal. */
  async function unchanged(ref: string, act: () => Promise<void>): Promise<void> {
    const before = await events(ref);
    await act();
    await sleep(100); // a signal, had one been sent, is in the history by now
    assert.deepEqual(await events(ref), before, `${ref}: history unchanged`);
  }

  // POST /v1/orders
  const SUBMIT = 'POST /v1/orders';
  add(SUBMIT, 'owner', 'shop', 201, async () => {
    const request = mobileRequest(newRef('submit'));
    const res = await call<OrderView>('shop', 'POST', '/v1/orders', request);
    assert.equal(res.status, 201, res.text);
    assert.equal(res.headers.location, `/v1/orders/${request.ref}`);
    assert.equal(res.body.client, 'shop');
    assert.equal(res.body.workflowId, `order-${request.ref}`, 'the default client keeps order-<ref>');
    assert.equal(res.body.providerRef, providerRefFor('shop', request.ref));
    const description = await handleOf(request.ref).describe();
    assert.equal(description.typedSearchAttributes.get(OrderClientAttribute), 'shop');
  });
  add(SUBMIT, 'another client', 'acme', 201, async () => {
    // acme submits a ref shop already uses, with another body: its own order, shop's untouched.
    const before = await handleOf(seed.fulfilled).describe();
    const request = { ...mobileRequest(seed.fulfilled), amount: 777 };
    const res = await call<OrderView>('acme', 'POST', '/v1/orders', request);
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.workflowId, `order:acme:${seed.fulfilled}`);
    const after = await handleOf(seed.fulfilled).describe();
    assert.equal(after.runId, before.runId);
    assert.deepEqual(after.memo, before.memo, "shop's order is unchanged");
    const shopView = (await view('shop', seed.fulfilled)).body;
    assert.equal(shopView.request.type === 'mobile_topup' && shopView.request.amount, 500);
  });
  for (const [kind, caller] of [
    ['no scope', 'reader'],
    ['operator', 'operator'],
    ['audit:read', 'auditor'],
  ] as const) {
    add(SUBMIT, kind, caller, 403, async () => {
      const request = mobileRequest(newRef(`submit-${caller}`));
      const problem = assertProblem(await call(caller, 'POST', '/v1/orders', request), 403, 'forbidden');
      assert.match(problem.detail, /orders:write/);
      await assertNoWorkflow(orderWorkflowId(request.ref, caller));
      await assertNoWorkflow(orderWorkflowId(request.ref));
    });
  }
  add(SUBMIT, 'no key', 'nobody', 401, async () => {
    const request = mobileRequest(newRef('submit-nokey'));
    assertProblem(await call('nobody', 'POST', '/v1/orders', request), 401, 'unauthorized');
    await assertNoWorkflow(orderWorkflowId(request.ref));
  });

  // GET /v1/orders/{ref}
  const VIEW = 'GET /v1/orders/{ref}';
  add(VIEW, 'owner', 'shop', 200, async () => {
    const res = await view('shop', seed.reviewedWithCard);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.client, 'shop');
    assert.equal(res.body.workflowId, `order-${seed.reviewedWithCard}`);
    assert.equal(res.body.providerRef, providerRefFor('shop', seed.reviewedWithCard));
    assert.notEqual(res.body.result?.cardCode, MASKED, 'the owner sees its card code');
  });
  add(VIEW, 'another client', 'acme', 404, async () => {
    await unchanged(seed.reviewedWithCard, async () => {
      const plain = assertProblem(await view('acme', seed.reviewedWithCard), 404, 'order-not-found');
      assertProblem(await view('acme', seed.reviewedWithCard, '?client=shop'), 404, 'order-not-found');
      // Exactly what an order that does not exist answers: no existence oracle.
      const none = assertProblem(await view('acme', newRef('none')), 404, 'order-not-found');
      assert.equal(plain.title, none.title);
      assert.equal(plain.detail.replace(seed.reviewedWithCard, 'X'), none.detail.replace(/CL-none-\w+/, 'X'));
    });
  });
  add(VIEW, 'no scope', 'writer', 403, async () => {
    await unchanged(seed.fulfilled, async () => {
      const res = await view('writer', seed.fulfilled, '?client=shop');
      assert.match(assertProblem(res, 403, 'forbidden').detail, /orders:read/);
      assert.match(String(res.headers['www-authenticate']), /insufficient_scope.*orders:read/);
    });
  });
  add(VIEW, 'no key', 'nobody', 401, async () => {
    await unchanged(seed.inReview, async () => {
      assertProblem(await view('nobody', seed.inReview), 401, 'unauthorized');
    });
  });
  add(VIEW, 'operator', 'operator', 200, async () => {
    // Another client's order that was in review: readable, card code masked.
    const res = await view('operator', seed.reviewedWithCard, '?client=shop');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.client, 'shop');
    assert.equal(res.body.result?.cardCode, MASKED);
    assert.ok(!res.text.includes((await view('shop', seed.reviewedWithCard)).body.result!.cardCode!));
    assert.equal((await view('operator', seed.inReview, '?client=shop')).status, 200);
    // One never in review is out of the operator's reach; without ?client= it names its own orders.
    assertProblem(await view('operator', seed.fulfilled, '?client=shop'), 404, 'order-not-found');
    assertProblem(await view('operator', seed.inReview), 404, 'order-not-found');
  });
  add(VIEW, 'audit:read', 'auditor', 200, async () => {
    const res = await view('auditor', seed.reviewedWithCard, '?client=shop');
    assert.equal(res.status, 200, res.text);
    const owners = (await view('shop', seed.reviewedWithCard)).body.result;
    assert.notEqual(owners?.cardCode, MASKED);
    assert.deepEqual(res.body.result, { ...owners, cardCode: MASKED }, 'all but the card code');
    const request = res.body.request;
    assert.equal(request.type === 'internet_topup' && request.number, MASKED, 'and the line number');
    assert.equal((await view('auditor', seed.acmeOrder, '?client=acme')).status, 200);
  });

  // GET /v1/orders
  const LIST = 'GET /v1/orders';
  const shopRefs = () => [seed.inReview, seed.fulfilled, seed.reviewedWithCard];
  add(LIST, 'owner', 'shop', 200, async () => {
    const listed = await listAll('shop', '', shopRefs());
    for (const ref of shopRefs()) assert.ok(refsOf(listed).includes(ref), ref);
    assert.ok(!refsOf(listed).includes(seed.acmeOrder), "never acme's order");
    for (const order of listed.orders) assert.equal(order.client, 'shop');
    const card = (await view('shop', seed.reviewedWithCard)).body.result!.cardCode!;
    assert.ok(!listed.text.includes(card), 'the list never carries a card code');
  });
  add(LIST, 'another client', 'acme', 200, async () => {
    const listed = await listAll('acme', '', [seed.acmeOrder]);
    assert.ok(refsOf(listed).includes(seed.acmeOrder), 'its own order (the positive control)');
    for (const order of listed.orders) assert.equal(order.client, 'acme');
    assert.ok(!refsOf(listed).includes(seed.inReview), "never shop's orders");
    assertProblem(await call('acme', 'GET', '/v1/orders?client=shop'), 404, 'client-not-found');
    // The same answer for a client that does not exist: the filter is no oracle either.
    assertProblem(await call('acme', 'GET', '/v1/orders?client=nosuchclient'), 404, 'client-not-found');
  });
  add(LIST, 'no scope', 'writer', 403, async () => {
    assert.match(
      assertProblem(await call('writer', 'GET', '/v1/orders'), 403, 'forbidden').detail,
      /orders:read/,
    );
  });
  add(LIST, 'no key', 'nobody', 401, async () => {
    assertProblem(await call('nobody', 'GET', '/v1/orders'), 401, 'unauthorized');
  });
  add(LIST, 'operator', 'operator', 200, async () => {
    const listed = await listAll('operator', '', [seed.inReview]);
    const inQueue = listed.orders.find((o) => o.ref === seed.inReview);
    assert.deepEqual([inQueue?.client, inQueue?.status], ['shop', 'NEEDS_REVIEW']);
    // Other files' orders share the server: the queue holds their disputes too.
    for (const order of listed.orders) {
      assert.ok(
        ['NEEDS_REVIEW', 'DISPUTED'].includes(order.status ?? ''),
        `the review queue only: ${order.status}`,
      );
    }
    assert.ok(!refsOf(listed).includes(seed.fulfilled));
    const narrowed = await listAll('operator', '&client=shop', [seed.inReview]);
    for (const order of narrowed.orders) assert.equal(order.client, 'shop');
    const fulfilled = await listAll('operator', '&client=shop&status=FULFILLED', []);
    assert.deepEqual(fulfilled.orders, [], 'nothing outside the queue');
  });
  add(LIST, 'audit:read', 'auditor', 200, async () => {
    const all = await listAll('auditor', '&status=FULFILLED', [seed.fulfilled, seed.acmeOrder]);
    const owners = new Map(all.orders.map((o) => [o.ref, o.client]));
    assert.equal(owners.get(seed.acmeOrder), 'acme', 'every client’s orders');
    assert.ok(all.orders.some((o) => o.client === 'shop'));
    const shop = await listAll('auditor', '&client=shop', [seed.fulfilled]);
    assert.ok(refsOf(shop).includes(seed.fulfilled));
    assert.ok(shop.orders.every((o) => o.client === 'shop'));
  });

  // POST /v1/orders/{ref}/review
  const REVIEW = 'POST /v1/orders/{ref}/review';
  // The provider still answers UNKNOWN_ERROR: FULFILLED applies (watched), REFUNDED would wait it out.
  const decision = { decision: 'FULFILLED', note: 'confirmed with the provider' };
  add(REVIEW, 'owner', 'shop force: true', 403, async () => {
    // Forcing past the provider is an operator's: the refund would pay the back office that forces it.
    await unchanged(seed.forOwnerDecision, async () => {
      const res = await call('shop', 'POST', `/v1/orders/${seed.forOwnerDecision}/review`, {
        decision: 'REFUNDED',
        note: 'the customer says no credit',
        force: true,
      });
      const problem = assertProblem(res, 403, 'forbidden');
      assert.match(problem.detail, /Only an operator may force/);
      assert.deepEqual(
        problem.errors?.map((e) => e.field),
        ['force'],
      );
    });
  });
  add(REVIEW, 'owner', 'shop', 200, async () => {
    const res = await call<OrderView>('shop', 'POST', `/v1/orders/${seed.forOwnerDecision}/review`, decision);
    assert.equal(res.status, 200, res.text);
    const done = await waitForStatus('shop', seed.forOwnerDecision, (v) => v.status === 'FULFILLED');
    const resolution = done.review?.resolution;
    assert.equal(resolution?.decidedBy, 'shop', 'recorded under the authenticated client');
    assert.equal(resolution?.operator, 'Test client shop', 'no display name given: the client’s name');
  });
  for (const [kind, caller, query] of [
    ['another client', 'acme', ''],
    ['another client', 'acme', '?client=shop'],
  ] as const) {
    add(REVIEW, kind, `${caller}${query}`, 404, async () => {
      await unchanged(seed.inReview, async () => {
        const res = await call(caller, 'POST', `/v1/orders/${seed.inReview}/review${query}`, decision);
        assertProblem(res, 404, 'order-not-found');
      });
    });
  }
  for (const [kind, caller] of [
    ['no scope', 'reader'],
    ['audit:read', 'auditor'],
  ] as const) {
    add(REVIEW, kind, caller, 403, async () => {
      await unchanged(seed.inReview, async () => {
        const res = await call(caller, 'POST', `/v1/orders/${seed.inReview}/review?client=shop`, decision);
        assert.match(assertProblem(res, 403, 'forbidden').detail, /reviews:write/);
      });
    });
  }
  add(REVIEW, 'no key', 'nobody', 401, async () => {
    await unchanged(seed.inReview, async () => {
      assertProblem(
        await call('nobody', 'POST', `/v1/orders/${seed.inReview}/review`, decision),
        401,
        'unauthorized',
      );
    });
  });
  add(REVIEW, 'operator', 'operator', 200, async () => {
    // Out of reach (never in review) first: 404 and nothing sent.
    await unchanged(seed.fulfilled, async () => {
      const res = await call('operator', 'POST', `/v1/orders/${seed.fulfilled}/review?client=shop`, decision);
      assertProblem(res, 404, 'order-not-found');
    });
    const res = await call<OrderView>(
      'operator',
      'POST',
      `/v1/orders/${seed.forOperatorDecision}/review?client=shop`,
      { decision: 'FULFILLED', operator: 'amina', note: 'confirmed by phone' },
    );
    assert.equal(res.status, 200, res.text);
    const done = await waitForStatus('shop', seed.forOperatorDecision, (v) => v.status === 'FULFILLED');
    assert.equal(done.review?.resolution?.decidedBy, 'operator');
    assert.equal(done.review?.resolution?.operator, 'amina', 'the display name, beside who decided');
  });

  // GET /v1/orders/{ref}/audit: audit:read only, which reaches every client's orders (docs/operators.md
  // "Audit export"); the order must be the named client's all the same. Runs after the REVIEW
  // cases, whose decisions it reads back.
  const AUDIT = 'GET /v1/orders/{ref}/audit';
  const audit = (caller: TestCaller, ref: string, query = '') =>
    call<OrderAudit>(caller, 'GET', `/v1/orders/${ref}/audit${query}`);
  add(AUDIT, 'owner', 'ledger', 200, async () => {
    const res = await audit('ledger', seed.ledgerOrder);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual([res.body.client, res.body.workflowId], ['ledger', `order:ledger:${seed.ledgerOrder}`]);
    // The statuses Temporal recorded; PROCESSING lives in the polling activity's answers (HANDLING).
    assert.deepEqual(
      res.body.entries.filter((e) => e.kind === 'status').map((e) => e.status),
      ['ACCEPTED', 'SUBMITTED', 'FULFILLED'],
    );
    const answers = res.body.entries.flatMap((e) => (e.answers as { status: string }[] | undefined) ?? []);
    assert.ok(
      answers.some((a) => a.status === 'HANDLING'),
      JSON.stringify(answers),
    );
    assert.equal(answers.at(-1)?.status, 'FULFILLED');
  });
  add(AUDIT, 'owner', 'shop (owner without audit:read)', 403, async () => {
    const res = await audit('shop', seed.forOwnerDecision);
    assert.match(assertProblem(res, 403, 'forbidden').detail, /audit:read/);
    assert.match(String(res.headers['www-authenticate']), /insufficient_scope.*audit:read/);
  });
  add(AUDIT, 'another client', 'ledger', 404, async () => {
    // ledger reaches every client's orders, but only by naming their owner: the ID is not enough.
    const plain = assertProblem(await audit('ledger', seed.reviewedWithCard), 404, 'order-not-found');
    assertProblem(await audit('ledger', seed.reviewedWithCard, '?client=acme'), 404, 'order-not-found');
    const none = assertProblem(await audit('ledger', newRef('none')), 404, 'order-not-found');
    assert.equal(plain.title, none.title);
    assert.equal((await audit('ledger', seed.reviewedWithCard, '?client=shop')).status, 200);
  });
  for (const [kind, caller] of [
    ['no scope', 'acme'],
    ['operator', 'operator'],
  ] as const) {
    add(AUDIT, kind, caller, 403, async () => {
      const res = await audit(caller, seed.forOperatorDecision, '?client=shop');
      assert.match(assertProblem(res, 403, 'forbidden').detail, /audit:read/);
    });
  }
  add(AUDIT, 'no key', 'nobody', 401, async () => {
    assertProblem(await audit('nobody', seed.forOperatorDecision, '?client=shop'), 401, 'unauthorized');
  });
  add(AUDIT, 'audit:read', 'auditor', 200, async () => {
    const res = await audit('auditor', seed.forOperatorDecision, '?client=shop');
    assert.equal(res.status, 200, res.text);
    const update = res.body.entries.find((e) => e.kind === 'update');
    assert.deepEqual(update?.decision, {
      decision: 'FULFILLED',
      operator: 'amina',
      decidedBy: 'operator',
      note: 'confirmed by phone',
    });
    assert.ok(update?.identity, 'the identity Temporal recorded for the update');
    assert.ok(update?.decisionOutcome, 'what the order answered');
    // Card codes masked unless asked for.
    const code = (await view('shop', seed.reviewedWithCard)).body.result!.cardCode!;
    const masked = await audit('auditor', seed.reviewedWithCard, '?client=shop');
    assert.ok(!masked.text.includes(code) && masked.text.includes(MASKED));
    const revealed = await audit('auditor', seed.reviewedWithCard, '?client=shop&reveal=true');
    assert.ok(revealed.text.includes(code));
    assertProblem(
      await audit('auditor', seed.reviewedWithCard, '?client=shop&reveal=yes'),
      400,
      'validation-error',
    );
  });

  // GET /v1/gift-cards/catalog: the provider's, not a client's; a client that places orders reads it.
  const CATALOG = 'GET /v1/gift-cards/catalog';
  add(CATALOG, 'owner', 'shop', 200, async () => {
    assert.equal((await call('shop', 'GET', '/v1/gift-cards/catalog')).status, 200);
  });
  add(CATALOG, 'another client', 'acme', 200, async () => {
    assert.equal((await call('acme', 'GET', '/v1/gift-cards/catalog')).status, 200);
  });
  add(CATALOG, 'no scope', 'reader', 403, async () => {
    const res = await call('reader', 'GET', '/v1/gift-cards/catalog');
    assert.match(assertProblem(res, 403, 'forbidden').detail, /orders:write/);
  });
  add(CATALOG, 'operator', 'operator', 403, async () => {
    assertProblem(await call('operator', 'GET', '/v1/gift-cards/catalog'), 403, 'forbidden');
  });
  add(CATALOG, 'no key', 'nobody', 401, async () => {
    assertProblem(await call('nobody', 'GET', '/v1/gift-cards/catalog'), 401, 'unauthorized');
  });

  describe('the matrix (route × caller)', () => {
    for (const c of matrix) {
      it(`${c.route} as ${c.kind} (${c.caller}) → ${c.status}`, () => c.run());
    }

    it(`covers every /v1 route as owner, another client, a client without the scope and no key (${matrix.length} cases)`, () => {
      const routes = [SUBMIT, VIEW, LIST, REVIEW, AUDIT, CATALOG];
      for (const route of routes) {
        const kinds = new Set(matrix.filter((c) => c.route === route).map((c) => c.kind));
        for (const kind of ['owner', 'another client', 'no scope', 'no key'] as const)
          assert.ok(kinds.has(kind), `${route} as ${kind}`);
      }
      for (const route of [SUBMIT, VIEW, LIST, REVIEW, AUDIT]) {
        const kinds = new Set(matrix.filter((c) => c.route === route).map((c) => c.kind));
        assert.ok(kinds.has('operator') && kinds.has('audit:read'), `${route}: operator and audit:read`);
      }
    });
  });

  // ---- beyond the matrix ----

  describe('refs are unique per client', () => {
    it('two clients submitting the same ref each get their own order and their own provider send', async () => {
      const ref = newRef('same');
      const shopRequest = mobileRequest(ref);
      const acmeRequest = { ...mobileRequest(ref), amount: 900 };
      const [a, b] = await Promise.all([
        call<OrderView>('shop', 'POST', '/v1/orders', shopRequest),
        call<OrderView>('acme', 'POST', '/v1/orders', acmeRequest),
      ]);
      assert.deepEqual([a.status, b.status], [201, 201], `${a.text}\n${b.text}`);
      assert.notEqual(a.body.workflowId, b.body.workflowId);
      assert.notEqual(a.body.providerRef, b.body.providerRef);
      const [shopView, acmeView] = await Promise.all([
        waitForStatus('shop', ref, (v) => v.status === 'FULFILLED'),
        waitForStatus('acme', ref, (v) => v.status === 'FULFILLED'),
      ]);
      assert.deepEqual(mobileResultBesidesDebit(shopView.result), {
        msisdn: shopRequest.msisdn,
        amount: 500,
      });
      assert.deepEqual(mobileResultBesidesDebit(acmeView.result), {
        msisdn: acmeRequest.msisdn,
        amount: 900,
      });

      const report = await sandbox.report();
      assert.deepEqual(
        [
          report.refs[providerRefFor('shop', ref)]?.accepted,
          report.refs[providerRefFor('acme', ref)]?.accepted,
        ],
        [1, 1],
        'one send each, under refs derived from (client, ref)',
      );
      assert.equal(report.refs[ref], undefined, 'the bare ref never reached the provider');
      // A repeat by either is its own idempotent repeat, not the other's conflict.
      assert.equal((await call('acme', 'POST', '/v1/orders', acmeRequest)).status, 200);
      assert.equal((await call('shop', 'POST', '/v1/orders', shopRequest)).status, 200);
    });

    it('the Location of one client’s new order is a 404 for another client', async () => {
      const request = mobileRequest(newRef('location'));
      const created = await call('shop', 'POST', '/v1/orders', request);
      const location = String(created.headers.location);
      assert.equal((await call('shop', 'GET', location)).status, 200);
      assertProblem(await call('acme', 'GET', location), 404, 'order-not-found');
    });

    it('a page token of one client’s list does not page through another’s', async () => {
      const first = await call<{ nextPageToken?: string }>('auditor', 'GET', '/v1/orders?pageSize=1');
      assert.ok(first.body.nextPageToken, 'more than one page');
      const res = await call('acme', 'GET', `/v1/orders?pageSize=1&pageToken=${first.body.nextPageToken}`);
      assertProblem(res, 400, 'validation-error');
    });
  });

  describe('ownership is read back from the workflow, not only from its ID', () => {
    /** Starts an order straight on Temporal, as an older API or another default client once did. */
    function startRaw(workflowId: string, request: OrderRequest, owner: string | undefined) {
      const input: OrderInput = { request, acceptedAt: new Date().toISOString(), timings: scaledTimings() };
      return startOrderAs(client, {
        workflowId,
        taskQueue,
        input,
        owner,
        memo: { requestHash: requestHash(request) },
        acceptedAtAttribute: false,
      });
    }

    it('an order-<ref> workflow another client owns (the default client was changed) is a 404 to the default client', async () => {
      const request = mobileRequest(newRef('foreign'), sandboxSpecialNumbers.unknownError);
      const handle = await startRaw(orderWorkflowId(request.ref), request, 'acme');
      try {
        await waitForView(handle, (v) => v.status === 'NEEDS_REVIEW'); // then it waits: a stable history
        assertProblem(await view('shop', request.ref), 404, 'order-not-found');
        await unchanged(request.ref, async () => {
          const res = await call('shop', 'POST', `/v1/orders/${request.ref}/review`, decision);
          assertProblem(res, 404, 'order-not-found');
        });
        // The ref is taken in the order-<ref> form: a submission is a conflict, never a second workflow.
        assertProblem(await call('shop', 'POST', '/v1/orders', request), 409, 'ref-conflict');
        const listed = await listAll('auditor', '&client=acme', [request.ref]);
        assert.equal(listed.orders.find((o) => o.ref === request.ref)?.client, 'acme');
        const shopList = await listAll('shop', '&status=NEEDS_REVIEW', [seed.inReview]);
        assert.ok(!refsOf(shopList).includes(request.ref));
      } finally {
        await handle.terminate('test done');
      }
    });

    it('an order from before clients (no OrderClient, no provider ref) stays the default client’s: readable, deduplicated, sent under its own ref', async () => {
      const request = mobileRequest(newRef('legacy'));
      await startRaw(orderWorkflowId(request.ref), request, undefined);
      const done = await waitForStatus('shop', request.ref, (v) => v.status === 'FULFILLED');
      assert.equal(done.client, 'shop');
      assert.equal(done.providerRef, request.ref, 'it sent the ref as is');
      assert.equal((await sandbox.sendsOf(request.ref)).accepted, 1);
      // The same ref and body again: the same order (200), no second workflow or send.
      const again = await call<OrderView>('shop', 'POST', '/v1/orders', request);
      assert.equal(again.status, 200, again.text);
      assertProblem(
        await call('shop', 'POST', '/v1/orders', { ...request, amount: 600 }),
        409,
        'ref-conflict',
      );
      const listed = await listAll('shop', '&status=FULFILLED', [request.ref]);
      assert.equal(listed.orders.find((o) => o.ref === request.ref)?.client, 'shop');
      assertProblem(await view('acme', request.ref), 404, 'order-not-found');
      assert.equal((await sandbox.sendsOf(request.ref)).accepted, 1);
    });
  });

  describe('legacy mode: API_KEYS is one client, default, with every scope', () => {
    it('submits as order-<ref> with a provider ref of (default, ref), and lists, reads and reviews', async () => {
      const legacy = await startTestApi({
        client,
        taskQueue,
        provider: stack.provider.client,
        timingsFor,
        config: apiTestConfig({ API_CLIENTS_FILE: '', API_KEYS: 'legacy-key-1,legacy-key-2' }),
      });
      const request = mobileRequest(newRef('legacy-mode'), sandboxSpecialNumbers.unknownError);
      try {
        const created = await legacy.request<OrderView>('POST', '/v1/orders', {
          apiKey: 'legacy-key-2',
          body: request,
        });
        assert.equal(created.status, 201, created.text);
        assert.equal(created.body.client, 'default');
        assert.equal(created.body.workflowId, `order-${request.ref}`);
        assert.equal(created.body.providerRef, providerRefFor('default', request.ref));
        const description = await handleOf(request.ref).describe();
        assert.equal(
          description.typedSearchAttributes.get(OrderClientAttribute),
          undefined,
          'no OrderClient in the legacy mode: an upgrade needs nothing new in Temporal',
        );
        let read: ApiResponse<OrderView>;
        for (const deadline = Date.now() + 20_000; ; await sleep(100)) {
          read = await legacy.request<OrderView>('GET', `/v1/orders/${request.ref}`, {
            apiKey: 'legacy-key-1',
          });
          assert.equal(read.status, 200, read.text);
          if (read.body.status === 'NEEDS_REVIEW' || Date.now() > deadline) break;
        }
        assert.equal(read.body.status, 'NEEDS_REVIEW');
        assert.equal((await sandbox.sendsOf(providerRefFor('default', request.ref))).accepted, 1);
        const listed = await legacy.request('GET', '/v1/orders?status=NEEDS_REVIEW', {
          apiKey: 'legacy-key-1',
        });
        assert.equal(listed.status, 200);
        const other = await legacy.request('GET', '/v1/orders?client=acme', { apiKey: 'legacy-key-1' });
        assertProblem(other, 404, 'client-not-found');
        const reviewed = await legacy.request<OrderView>('POST', `/v1/orders/${request.ref}/review`, {
          apiKey: 'legacy-key-1',
          body: { decision: 'REFUNDED', operator: 'amina', note: 'legacy', force: true },
        });
        assert.equal(reviewed.status, 200, reviewed.text);
      } finally {
        await legacy.close();
        await handleOf(request.ref)
          .terminate('test done')
          .catch(() => undefined);
      }
    });
  });

  describe('no key or key hash leaves the API', () => {
    it('in no answer of this file, no log line, and no order history', async () => {
      assert.ok(answers.length > 50, `${answers.length} answers checked`);
      for (const res of answers)
        for (const secret of secrets) assert.ok(!res.text.includes(secret), res.text);
      assert.ok(logs.raw.length > 50);
      for (const line of logs.raw) for (const secret of secrets) assert.ok(!line.includes(secret), line);
      for (const ref of [seed.forOwnerDecision, seed.forOperatorDecision, seed.reviewedWithCard]) {
        // Unencrypted here (no codec), so a key in any payload would show in the bytes as is.
        const { bytes } = await rawHistory(
          client.workflowService,
          stack.temporal.namespace,
          orderWorkflowId(ref),
        );
        assert.ok(bytes.includes('decidedBy') || ref === seed.reviewedWithCard, 'payloads are readable here');
        for (const secret of secrets) assert.ok(!bytes.includes(secret), `${ref}: no key in the history`);
      }
    });
  });
});
