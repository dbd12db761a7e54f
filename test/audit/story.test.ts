/**
 * The audit export (GET /v1/orders/{ref}/audit and `npm run audit`) against real orders: a real
 * Temporal server, the sandbox, the order worker and the API, all with payload encryption on, so
 * the story is read from encrypted history through the codec. The route × caller matrix is in
 * test/clients/clients-api.test.ts.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../src/worker/activities';
import { apiTestConfig, capturingLogger, startTestApi, testClients, type TestApi } from '../helpers/api';
import type { OrderAudit } from '../../src/audit/order-audit';
import { renderAudit } from '../../src/audit/render';
import type { AuditEntry } from '../../src/audit/story';
import { dataConverterFromConfig } from '../../src/codec/data-converter';
import { providerRefFor } from '../../src/orders/provider-ref';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { createOrderWorker } from '../../src/worker/worker';
import {
  AcceptedAtAttribute,
  OrderClientAttribute,
  OrderStatusAttribute,
  OrderTypeAttribute,
  orderWorkflowId,
  resolveReviewSignal,
  workflowTypeByOrderType,
  type OrderInput,
  type OrderView,
} from '../../contract/order';
import type { AuditFixtureActivities } from '../fixtures/audit-workflow';
import { decideUpdate } from '../fixtures/audit-workflow';
import { rawHistory } from '../helpers/raw-history';
import {
  installTestRuntime,
  mobileRequest,
  newRef,
  scaledTimings,
  startTestSandbox,
  testProvider,
  waitForView,
  type TestSandbox,
} from '../helpers/orders';
import { useTemporal, workflowCodeOptions, type TestTemporal } from '../helpers/temporal';
import { makeTestVersionCurrent, versionedTestCode } from '../helpers/versioning';

const ENCRYPTION_KEYS = `audit-test:${randomBytes(32).toString('base64')}`;
const UI = 'http://temporal-ui.example:8233';
const UNKNOWN = sandboxSpecialNumbers.unknownError;

describe('audit export', () => {
  const dataConverter = dataConverterFromConfig({ PAYLOAD_ENCRYPTION_KEYS: ENCRYPTION_KEYS });
  const logs = capturingLogger();
  let temporal: TestTemporal;
  let sandbox: TestSandbox;
  let provider: ReturnType<typeof testProvider>;
  let nativeConnection: NativeConnection;
  let connection: Connection;
  let client: Client;
  let workers: Worker[] = [];
  let runs: Promise<void>[] = [];
  let api: TestApi;
  const taskQueue = `audit-${randomUUID()}`;

  before(async () => {
    installTestRuntime();
    [temporal, sandbox] = await Promise.all([useTemporal(), startTestSandbox()]);
    provider = testProvider(sandbox.url);
    nativeConnection = await NativeConnection.connect({ address: temporal.address });
    const fixtureActivities: AuditFixtureActivities = {
      lookUp: async () => ({ found: true, check: { status: 'HANDLING', MSSIDN: UNKNOWN } }),
      refuse: async () => {
        throw ApplicationFailure.nonRetryable('the provider refused the send', 'ProviderRejected', {
          kind: 'refused',
          operation: 'sendMobileTopup',
          status: 403,
        });
      },
    };
    const { workflowCode, deployment } = await versionedTestCode('audit-story', workflowCodeOptions());
    workers = await Promise.all([
      createOrderWorker({
        connection: nativeConnection,
        namespace: temporal.namespace,
        taskQueue,
        activities: createActivities({ provider: provider.client }),
        workflowCode,
        deployment,
        dataConverter,
      }),
      Worker.create({
        connection: nativeConnection,
        namespace: temporal.namespace,
        taskQueue: `${taskQueue}-fixture`,
        workflowsPath: resolve(__dirname, '..', 'fixtures', 'audit-workflow.ts'),
        activities: fixtureActivities,
        dataConverter,
      }),
    ]);
    runs = workers.map((w) => w.run());
    connection = await Connection.connect({ address: temporal.address });
    await makeTestVersionCurrent(connection, temporal.namespace, deployment, [taskQueue]);
    client = new Client({ connection, namespace: temporal.namespace, dataConverter });
    api = await startTestApi({
      client,
      taskQueue,
      provider: provider.client,
      // Decisions the provider has not confirmed are watched (a minute), so a dispute can follow.
      timingsFor: () => scaledTimings({ reviewWatchMs: 60_000 }),
      logger: logs.logger,
      config: apiTestConfig({ PAYLOAD_ENCRYPTION_KEYS: ENCRYPTION_KEYS, TEMPORAL_UI_URL: UI }),
    });
  });

  after(async () => {
    await api?.close();
    for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
    await Promise.all(runs);
    await Promise.all([connection?.close(), nativeConnection?.close(), provider?.close(), sandbox?.close()]);
    await temporal?.stop();
  });

  async function waitForStatus(
    ref: string,
    status: string,
    apiKey = testClients.shop.key,
  ): Promise<OrderView> {
    const deadline = Date.now() + 20_000;
    let last: OrderView | undefined;
    while (Date.now() < deadline) {
      const res = await api.request<OrderView>('GET', `/v1/orders/${ref}`, { apiKey });
      assert.equal(res.status, 200, res.text);
      last = res.body;
      if (last.status === status) return last;
      await sleep(100);
    }
    throw new Error(`${ref} did not reach ${status}: ${JSON.stringify(last?.timeline)}`);
  }

  const auditOf = (ref: string, query = '?client=shop') =>
    api.request<OrderAudit>('GET', `/v1/orders/${ref}/audit${query}`, { apiKey: testClients.auditor.key });
  const ofKind = (audit: OrderAudit, kind: AuditEntry['kind']) =>
    audit.entries.filter((e) => e.kind === kind);

  it('a reviewed order: every call and answer with timing, every status, each decision with its sender, the identity Temporal recorded and its outcome — refused, applied and watched, disputed, settled', async () => {
    const request = mobileRequest(newRef('audited'), UNKNOWN);
    assert.equal((await api.request('POST', '/v1/orders', { body: request })).status, 201);
    await waitForStatus(request.ref, 'NEEDS_REVIEW');
    // The provider is still processing it: REFUNDED is refused, FULFILLED applied only when forced.
    await sandbox.changeTopup(providerRefFor('shop', request.ref), { status: 'HANDLING' });
    const decide = (body: Record<string, unknown>) =>
      api.request('POST', `/v1/orders/${request.ref}/review?client=shop`, {
        apiKey: testClients.operator.key,
        body: { operator: 'amina', ...body },
      });
    const refused = await decide({
      decision: 'REFUNDED',
      note: 'customer 0551234567 says no credit, ticket 4412',
    });
    assert.equal(refused.status, 409, refused.text);
    const forced = await decide({ decision: 'FULFILLED', note: 'customer confirmed', force: true });
    assert.equal(forced.status, 200, forced.text);
    // The watch sees the provider refund it: DISPUTED, then settled REFUNDED, which the provider confirms.
    await sandbox.changeTopup(providerRefFor('shop', request.ref), { status: 'REFUNDED' });
    await waitForStatus(request.ref, 'DISPUTED');
    const settled = await decide({ decision: 'REFUNDED', note: 'provider refunded' });
    assert.equal(settled.status, 200, settled.text);
    await waitForStatus(request.ref, 'REFUNDED');
    await client.workflow.getHandle(orderWorkflowId(request.ref)).result();

    const res = await auditOf(request.ref);
    assert.equal(res.status, 200, res.text);
    const audit = res.body;
    assert.deepEqual(
      [audit.ref, audit.client, audit.workflowId, audit.type, audit.status, audit.secrets],
      [request.ref, 'shop', orderWorkflowId(request.ref), 'mobile_topup', 'REFUNDED', 'masked'],
    );
    assert.equal(audit.temporalUiUrl, `${UI}/namespaces/default/workflows/${orderWorkflowId(request.ref)}`);
    // The first run, the review's own and the dispute's own.
    assert.equal(audit.runs.length, 3);

    // In order, with times that never go back.
    const times = audit.entries.map((e) => Date.parse(e.at));
    assert.deepEqual(
      times,
      [...times].sort((a, b) => a - b),
      'entries in time order',
    );
    assert.equal(audit.entries[0]!.kind, 'run_started');
    assert.equal(audit.entries[0]!.identity, client.options.identity, 'who started it: the API process');

    // Every status the order had, from OrderStatus; the dispute with what the provider reported.
    const statuses = ofKind(audit, 'status');
    assert.deepEqual(
      statuses.map((e) => e.status),
      ['ACCEPTED', 'SUBMITTED', 'NEEDS_REVIEW', 'FULFILLED', 'DISPUTED', 'REFUNDED'],
    );
    const disputed = statuses.find((e) => e.status === 'DISPUTED')!;
    assert.deepEqual([disputed.previous, disputed.providerStatus], ['FULFILLED', 'REFUNDED']);

    // The send and the answer that sent it to review, with timing and the worker that made them.
    // The send is a local activity (its marker); the polling activity lists every answer it saw.
    const [send, ...more] = ofKind(audit, 'activity');
    assert.equal(send!.activityType, 'sendMobileTopup');
    assert.equal(send!.outcome, 'completed');
    assert.equal(send!.local, true);
    const poll = more.find((e) => e.activityType === 'pollMobileTopup');
    assert.ok(poll?.worker, 'the worker that ran it');
    assert.ok(Number(poll!.durationMs) >= 0 && poll!.startedAt && poll!.scheduledAt);
    assert.equal(poll!.providerStatus, 'UNKNOWN_ERROR');
    assert.deepEqual(
      (poll!.answers as { status: string }[]).map((a) => a.status).at(-1),
      'UNKNOWN_ERROR',
      'the answers it saw, the last one sending the order to review',
    );

    // Each decision: what, by whom (the body's display name and the API client, set from its key),
    // who sent it as Temporal recorded it (the API process), and what the order answered.
    const decisions = ofKind(audit, 'update');
    assert.deepEqual(
      decisions.map((u) => [u.name, u.outcome, u.decisionOutcome]),
      [
        ['decideReview', 'completed', 'refused'],
        ['decideReview', 'completed', 'applied'],
        ['decideReview', 'completed', 'applied'],
      ],
    );
    for (const u of decisions) assert.equal(u.identity, client.options.identity);
    assert.deepEqual(decisions[0]!.decision, {
      decision: 'REFUNDED',
      operator: 'amina',
      decidedBy: 'operator',
      note: 'customer [masked] says no credit, ticket 4412',
    });
    const refusal = decisions[0]!.refusal as {
      kind: string;
      forceable: boolean;
      provider: { status: string };
    };
    assert.deepEqual([refusal.kind, refusal.provider.status], ['contradicted', 'HANDLING']);
    assert.equal((decisions[1]!.decision as { force?: boolean }).force, true);
    assert.ok(decisions[1]!.watchUntil, 'applied unconfirmed: watched');
    assert.equal(decisions[2]!.watchUntil, undefined, 'confirmed by the provider: not watched');
    assert.ok(!('view' in (decisions[0]!.result as object)), 'the answer without the view it carries');
    assert.equal(ofKind(audit, 'signal').length, 0);
    const closed = audit.entries.at(-1)!;
    assert.deepEqual([closed.kind, closed.outcome, closed.status], ['closed', 'completed', 'REFUNDED']);
    // As `npm run audit` prints it for a person.
    const text = renderAudit(audit);
    assert.match(
      text,
      /decideReview: REFUNDED by amina \(client operator\) “customer \[masked\] says no credit, ticket 4412” → refused, contradicted: .+\(provider status HANDLING\)/,
    );
    assert.match(
      text,
      /decideReview: FULFILLED \(forced\) by amina .+ → applied, watched until \S+ · sent by /,
    );
    assert.match(text, /FULFILLED → DISPUTED \(the provider now reports REFUNDED\)/);

    // Masked: no phone number anywhere, though the story shows the request.
    assert.ok(!res.text.includes(UNKNOWN) && !res.text.includes('0551234567'), 'no phone number');
    assert.match(JSON.stringify(audit.entries[0]!.input), /"msisdn":"\[masked\]"/);

    // Revealed on request: the same story with the numbers.
    const revealed = await auditOf(request.ref, '?client=shop&reveal=true');
    assert.equal(revealed.body.secrets, 'revealed');
    assert.ok(revealed.text.includes(UNKNOWN) && revealed.text.includes('0551234567'));
    assert.equal(revealed.body.entries.length, audit.entries.length);
    assert.ok(
      logs.lines.some((l) => l.msg === 'audit export with secrets revealed'),
      'a revealed export is logged (what was read is not)',
    );
    assert.ok(!logs.raw.some((line) => line.includes(UNKNOWN)), 'no phone number in any log line');

    // All of it read through the codec: Temporal holds the number only encrypted.
    const raw = await rawHistory(client.workflowService, temporal.namespace, orderWorkflowId(request.ref));
    assert.ok(!raw.bytes.includes(UNKNOWN), 'the history holds the phone number only encrypted');
  });

  it('a long review: runs joined across continue-as-new, identical answers folded, a decision sent from outside the API with its identity', async () => {
    const request = mobileRequest(newRef('long'), UNKNOWN);
    const input: OrderInput = {
      request,
      acceptedAt: new Date().toISOString(),
      clientId: 'shop',
      timings: scaledTimings({ reviewRecheckMs: 50 }),
      historyEventLimit: 40,
    };
    const workflowId = orderWorkflowId(request.ref);
    const handle = await client.workflow.start(workflowTypeByOrderType.mobile_topup, {
      workflowId,
      taskQueue,
      args: [input],
      typedSearchAttributes: [
        { key: OrderTypeAttribute, value: 'mobile_topup' },
        { key: OrderStatusAttribute, value: 'ACCEPTED' },
        { key: OrderClientAttribute, value: 'shop' },
        { key: AcceptedAtAttribute, value: new Date(input.acceptedAt) },
      ],
    });
    const first = { runId: handle.firstExecutionRunId };
    await waitForView(handle, (v) => v.status === 'NEEDS_REVIEW');
    // The review has a run of its own; wait until that one grows long and continues as new too.
    const reviewRun = (await handle.describe()).runId;
    assert.notEqual(reviewRun, first.runId, 'the order continued as new into review');
    for (
      const deadline = Date.now() + 15_000;
      (await handle.describe()).runId === reviewRun;
      await sleep(100)
    )
      assert.ok(Date.now() < deadline, 'the long review continued as new');
    // As an operator would from Temporal UI: another identity, no decidedBy.
    const ui = new Client({
      connection,
      namespace: temporal.namespace,
      dataConverter,
      identity: 'amina@temporal-ui',
    });
    await ui.workflow.getHandle(workflowId).signal(resolveReviewSignal, {
      decision: 'FULFILLED',
      operator: 'amina',
      note: 'provider confirmed by phone',
    });
    assert.equal((await handle.result()).status, 'FULFILLED');

    const { body: audit } = await auditOf(request.ref);
    assert.ok(audit.runs.length >= 3, `${audit.runs.length} runs`);
    assert.equal(audit.runs[0]!.runId, first.runId, 'from the first run');
    const continued = ofKind(audit, 'continued_as_new');
    assert.equal(continued[0]!.newRunId, audit.runs[1]!.runId);
    const runsSeen = [...new Set(audit.entries.map((e) => e.run))];
    assert.deepEqual(
      runsSeen,
      audit.runs.map((_, i) => i + 1),
      'every run, in order',
    );
    assert.equal(ofKind(audit, 'run_started')[1]!.continuedFromRunId, first.runId);
    // The status is told once, though every run starts with it.
    assert.deepEqual(
      ofKind(audit, 'status').map((e) => e.status),
      ['ACCEPTED', 'SUBMITTED', 'NEEDS_REVIEW', 'FULFILLED'],
    );
    // Rechecks every 50 ms read UNKNOWN_ERROR again and again: folded, not listed one by one.
    const rechecks = ofKind(audit, 'activity').filter((e) => e.providerStatus === 'UNKNOWN_ERROR');
    assert.ok(
      rechecks.some((e) => Number(e.repeats) >= 1 && e.lastAt),
      JSON.stringify(rechecks),
    );
    const [signal] = ofKind(audit, 'signal');
    assert.equal(signal!.identity, 'amina@temporal-ui');
    assert.deepEqual(signal!.decision, {
      decision: 'FULFILLED',
      operator: 'amina',
      note: 'provider confirmed by phone',
    });
  });

  it('tells the history events a lifecycle may use later: local activities, updates accepted and completed, failed activities, patches', async () => {
    const ref = newRef('fixture');
    const workflowId = orderWorkflowId(ref);
    const handle = await client.workflow.start('auditFixtureWorkflow', {
      workflowId,
      taskQueue: `${taskQueue}-fixture`,
      args: [ref],
      typedSearchAttributes: [
        { key: OrderStatusAttribute, value: 'ACCEPTED' },
        { key: OrderClientAttribute, value: 'shop' },
      ],
    });
    await assert.rejects(
      handle.executeUpdate(decideUpdate, {
        args: [{ decision: 'FORBIDDEN', operator: 'amina', decidedBy: 'operator', note: 'x' }],
      }),
    );
    assert.equal(
      await handle.executeUpdate(decideUpdate, {
        args: [{ decision: 'REFUNDED', operator: 'amina', decidedBy: 'operator', note: 'confirmed' }],
      }),
      'applied REFUNDED',
    );
    await handle.result();

    const { body: audit, text } = await auditOf(ref);
    const local = ofKind(audit, 'activity').find((e) => e.local);
    assert.deepEqual(
      [local?.activityType, local?.outcome, local?.providerStatus],
      ['lookUp', 'completed', 'HANDLING'],
    );
    assert.ok(!text.includes(UNKNOWN), 'the local activity result is masked like any other');
    const refused = ofKind(audit, 'activity').find((e) => e.activityType === 'refuse');
    assert.equal(refused?.outcome, 'failed');
    assert.deepEqual(refused?.failure, {
      type: 'ProviderRejected',
      message: 'the provider refused the send',
      nonRetryable: true,
      details: [{ kind: 'refused', operation: 'sendMobileTopup', status: 403 }],
    });
    const updates = ofKind(audit, 'update');
    assert.deepEqual(
      updates.map((u) => [u.name, u.outcome, (u.decision as { decision: string }).decision]),
      [
        ['decideReview', 'failed', 'FORBIDDEN'],
        ['decideReview', 'completed', 'REFUNDED'],
      ],
    );
    assert.equal(updates[1]!.result, 'applied REFUNDED');
    assert.equal(updates[1]!.identity, client.options.identity);
    assert.deepEqual((updates[1]!.decision as { decidedBy: string }).decidedBy, 'operator');
    assert.equal(ofKind(audit, 'marker')[0]?.patchId, 'audit-fixture-patch');
    assert.deepEqual(
      ofKind(audit, 'status').map((e) => e.status),
      ['ACCEPTED', 'PROCESSING', 'REFUNDED'],
    );
  });

  it('npm run audit prints the same story for a person, talking to Temporal with the configured keys', async () => {
    const request = mobileRequest(newRef('cli'), UNKNOWN);
    assert.equal((await api.request('POST', '/v1/orders', { body: request })).status, 201);
    await waitForStatus(request.ref, 'NEEDS_REVIEW');
    // Confirmed by the provider, so not watched: the story is complete and stays the same.
    await sandbox.changeTopup(providerRefFor('shop', request.ref), { status: 'REFUNDED' });
    const decided = await api.request('POST', `/v1/orders/${request.ref}/review?client=shop`, {
      apiKey: testClients.operator.key,
      body: { decision: 'REFUNDED', operator: 'amina', note: 'no credit' },
    });
    assert.equal(decided.status, 200, decided.text);
    await client.workflow.getHandle(orderWorkflowId(request.ref)).result();
    const run = (...args: string[]) =>
      spawnSync(
        process.execPath,
        ['--import', 'tsx', resolve(__dirname, '..', '..', 'scripts', 'audit.ts'), ...args],
        {
          encoding: 'utf8',
          env: {
            ...process.env,
            TEMPORAL_ADDRESS: temporal.address,
            TEMPORAL_NAMESPACE: temporal.namespace,
            PAYLOAD_ENCRYPTION_KEYS: ENCRYPTION_KEYS,
            TEMPORAL_UI_URL: UI,
          },
        },
      );

    const text = run(request.ref, '--client', 'shop');
    assert.equal(text.status, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`Order ${request.ref} · client shop · mobile_topup · now REFUNDED`));
    assert.match(
      text.stdout,
      /decideReview: REFUNDED by amina \(client operator\) “no credit” → applied · sent by /,
    );
    assert.match(text.stdout, /pollMobileTopup → UNKNOWN_ERROR/);
    assert.match(text.stdout, /checkMobileTopup → REFUNDED/);
    assert.match(text.stdout, /NEEDS_REVIEW → REFUNDED/);
    assert.ok(!text.stdout.includes(UNKNOWN), 'masked by default');

    const json = run(request.ref, '--client', 'shop', '--json', '--reveal');
    assert.equal(json.status, 0, json.stderr);
    const audit = JSON.parse(json.stdout) as OrderAudit;
    assert.equal(audit.secrets, 'revealed');
    assert.ok(json.stdout.includes(UNKNOWN));
    const { body: viaApi } = await auditOf(request.ref, '?client=shop&reveal=true');
    assert.deepEqual(audit.entries, viaApi.entries, 'the CLI and the API tell the same story');

    const missing = run('no-such-order', '--client', 'shop');
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /Not found/);
  });
});
