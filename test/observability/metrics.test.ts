/**
 * Metrics scraped from the real services after real orders: the worker and the API started as
 * `npm run worker` / `npm run api` start them (their own processes, configuration from the
 * environment), the sandbox, a real Temporal server. Figures are checked by value, and every
 * metric the Grafana dashboard and the alert rules query must be among what the services export.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { parse } from 'yaml';
import { testClients } from '../helpers/api';
import {
  RECONCILE_DAY_WORKFLOW,
  reconciliationWorkflowId,
  type ReconciliationReport,
} from '../../contract/reconciliation';
import { endpointSecret } from '../../src/webhooks/secrets';
import { startReceiver, type RunningReceiver } from '../../src/webhooks/receiver';
import type { OrderView } from '../../src/orders/order.service';
import { metricCatalog, exportedName } from '../../contract/metrics';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { providerRefFor } from '../../src/orders/provider-ref';
import { freePort } from '../../src/temporal/dev-server';
import { projectRoot, startPart, waitForHttp, type ManagedProcess } from '../../scripts/lib/processes';
import { workflowTypeByOrderType } from '../../contract/order';
import {
  giftCardRequest,
  mobileRequest,
  newRef,
  testProvider,
  TIME_SCALE,
  type TestSandbox,
} from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';
import { scaledTimingsEnv, stackProcessEnv } from '../helpers/api-process';
import { clientsWith } from '../helpers/webhooks';

const HOOKED_KEY = 'metrics-hooked-key';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The Prometheus text format's samples (comments and blank lines skipped). */
function samples(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
      assert.ok(match, `a sample line: ${line}`);
      const labels = Object.fromEntries(
        [...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [
          m[1]!,
          m[2]!,
        ]),
      );
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

/** The sum of the samples named `name` whose labels include `labels`. */
function valueOf(all: Sample[], name: string, labels: Record<string, string> = {}): number {
  return all
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

const has = (all: Sample[], name: string) => all.some((s) => s.name === name);

/** Metric names in PromQL: ours (topup_*) and Temporal's (temporal_*). */
function metricNamesIn(expr: string): string[] {
  return [...expr.matchAll(/\b((?:topup|temporal)_[a-z0-9_]+)\b/g)].map((m) => m[1]!);
}

describe('metrics of the API and the worker, after real orders', () => {
  let stack: OrderStack;
  let sandbox: TestSandbox;
  let client: Client;
  let worker: ManagedProcess;
  let apiProcess: ManagedProcess;
  let apiUrl: string;
  let apiMetricsUrl: string;
  let workerMetricsUrl: string;
  const output: string[] = [];
  const taskQueue = `metrics-${randomUUID()}`;
  const signingKey = randomBytes(32);
  let receiver: RunningReceiver;

  before(async () => {
    // No worker in this process: the worker and the API are the services' own processes.
    stack = await startOrderStack({ name: 'metrics' });
    sandbox = stack.sandbox;
    client = stack.client;
    // A client with a webhook endpoint, for the delivery metrics.
    receiver = await startReceiver({ secrets: [endpointSecret(signingKey, 'hooked', 'main', 1)] });
    const clientsFile = join(mkdtempSync(join(tmpdir(), 'metrics-clients-')), 'clients.json');
    writeFileSync(
      clientsFile,
      JSON.stringify(
        clientsWith({ hooked: { key: HOOKED_KEY, webhooks: [{ id: 'main', url: receiver.url }] } }),
      ),
    );
    const [port, apiMetricsPort, workerMetricsPort] = [await freePort(), await freePort(), await freePort()];
    apiUrl = `http://127.0.0.1:${port}`;
    apiMetricsUrl = `http://127.0.0.1:${apiMetricsPort}/metrics`;
    workerMetricsUrl = `http://127.0.0.1:${workerMetricsPort}/metrics`;
    const env = stackProcessEnv(stack, taskQueue, {
      ...(process.env.TEST_WORKFLOW_BUNDLE_PATH
        ? { WORKER_WORKFLOW_BUNDLE_PATH: process.env.TEST_WORKFLOW_BUNDLE_PATH }
        : {}),
      WORKER_METRICS_ADDRESS: `127.0.0.1:${workerMetricsPort}`,
      PORT: String(port),
      API_HOST: '127.0.0.1',
      API_CLIENTS_FILE: clientsFile,
      WEBHOOK_SIGNING_KEY: signingKey.toString('base64'),
      WEBHOOK_TASK_QUEUE: `${taskQueue}-webhooks`,
      WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
      API_METRICS_ADDRESS: `127.0.0.1:${apiMetricsPort}`,
      API_REVIEW_METRICS_TTL_MS: '1',
      // The sandbox runs at TIME_SCALE: the order timings follow.
      ...scaledTimingsEnv('mobile_topup', TIME_SCALE),
      // A decision the provider has not confirmed is watched, quickly, so a dispute can follow.
      REVIEW_WATCH_MS: '60000',
      REVIEW_WATCH_FIRST_CHECK_MS: '200',
      LOG_LEVEL: 'warn',
    });
    const onLine = (line: string) => output.push(line);
    worker = startPart('worker', { env, onLine });
    apiProcess = startPart('api', { env, onLine });
    await waitForHttp(`${apiUrl}/healthz`, { timeoutMs: 120_000 });
    await waitForHttp(workerMetricsUrl, { timeoutMs: 180_000, ok: (status) => status === 200 });
  });

  after(async () => {
    await Promise.all([apiProcess?.stop(), worker?.stop()]);
    await stack?.stop();
    await receiver?.close();
  });

  async function api<T>(
    method: string,
    path: string,
    key: string,
    body?: unknown,
  ): Promise<{ status: number; body: T }> {
    const res = await fetch(`${apiUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as T };
  }

  async function waitFor(ref: string, status: string, key: string): Promise<void> {
    const deadline = Date.now() + 30_000;
    let last = '';
    while (Date.now() < deadline) {
      const { body } = await api<OrderView>('GET', `/v1/orders/${ref}`, key);
      last = body.status;
      if (last === status) return;
      await sleep(100);
    }
    throw new Error(`${ref}: ${last}, not ${status}\n${output.slice(-20).join('\n')}`);
  }

  const scrape = async (url: string) => samples(await (await fetch(url)).text());

  /** Scrapes until `ready` holds: the worker's figures reach its endpoint shortly after the fact. */
  async function scrapeUntil(url: string, ready: (all: Sample[]) => boolean): Promise<Sample[]> {
    const deadline = Date.now() + 15_000;
    let all = await scrape(url);
    while (!ready(all) && Date.now() < deadline) {
      await sleep(200);
      all = await scrape(url);
    }
    return all;
  }

  const shop = testClients.shop.key;
  const refs = {
    fulfilled: [newRef('m1'), newRef('m2'), newRef('m3')],
    refunded: newRef('refunded'),
    review: newRef('review'),
    giftCard: newRef('gift'),
  };

  it('counts orders accepted, finished by type and outcome, time to final, provider calls, decisions and what came of them, disputes, by value', async () => {
    for (const ref of refs.fulfilled)
      assert.equal((await api('POST', '/v1/orders', shop, mobileRequest(ref))).status, 201);
    const refunded = mobileRequest(refs.refunded, sandboxSpecialNumbers.refunded);
    assert.equal((await api('POST', '/v1/orders', shop, refunded)).status, 201);
    const review = mobileRequest(refs.review, sandboxSpecialNumbers.unknownError);
    assert.equal((await api('POST', '/v1/orders', shop, review)).status, 201);
    const acme = testClients.acme.key;
    assert.equal((await api('POST', '/v1/orders', acme, giftCardRequest(refs.giftCard))).status, 201);
    // A repeat is the same order: not accepted twice.
    assert.equal((await api('POST', '/v1/orders', shop, mobileRequest(refs.fulfilled[0]!))).status, 200);

    for (const ref of refs.fulfilled) await waitFor(ref, 'FULFILLED', shop);
    await waitFor(refs.refunded, 'REFUNDED', shop);
    await waitFor(refs.review, 'NEEDS_REVIEW', shop);
    await waitFor(refs.giftCard, 'FULFILLED', acme);

    // The review backlog, from visibility (this task queue only), cached for 1 ms here.
    const inReview = await scrapeUntil(apiMetricsUrl, (all) => valueOf(all, 'topup_review_backlog') === 1);
    assert.equal(valueOf(inReview, 'topup_review_backlog', { order_type: 'mobile_topup' }), 1);
    assert.equal(valueOf(inReview, 'topup_review_backlog', { order_type: 'gift_card' }), 0);
    const age = valueOf(inReview, 'topup_review_oldest_age_seconds');
    assert.ok(age > 0 && age < 120, `oldest in review: ${age} s`);

    const decide = (decision: string, force?: true) =>
      api('POST', `/v1/orders/${refs.review}/review?client=shop`, testClients.operator.key, {
        decision,
        operator: 'amina',
        note: 'x',
        force,
      });
    // REFUNDED on UNKNOWN_ERROR, forced (it waits for the provider otherwise): applied and watched; the provider then fulfils it: DISPUTED;
    // FULFILLED, which the provider confirms, settles it.
    assert.equal((await decide('REFUNDED', true)).status, 200);
    await sandbox.changeTopup(providerRefFor('shop', refs.review), { status: 'FULFILLED' });
    await waitFor(refs.review, 'DISPUTED', shop);
    assert.equal((await decide('FULFILLED')).status, 200);
    await waitFor(refs.review, 'FULFILLED', shop);

    const workerMetrics = await scrapeUntil(
      workerMetricsUrl,
      (all) => valueOf(all, 'topup_orders_finished_total') === 6,
    );
    const finished = (labels: Record<string, string>) =>
      valueOf(workerMetrics, 'topup_orders_finished_total', labels);
    assert.equal(finished({ order_type: 'mobile_topup', outcome: 'FULFILLED', reviewed: 'false' }), 3);
    assert.equal(finished({ order_type: 'mobile_topup', outcome: 'REFUNDED', reviewed: 'false' }), 1);
    assert.equal(finished({ order_type: 'mobile_topup', outcome: 'FULFILLED', reviewed: 'true' }), 1);
    assert.equal(finished({ order_type: 'gift_card', outcome: 'FULFILLED' }), 1);
    assert.equal(finished({}), 6);
    const timeToFinal = (labels: Record<string, string>) =>
      valueOf(workerMetrics, 'topup_order_time_to_final_seconds_count', labels);
    assert.equal(timeToFinal({ order_type: 'mobile_topup', outcome: 'FULFILLED' }), 4);
    assert.equal(timeToFinal({}), 6);
    const slowest = valueOf(workerMetrics, 'topup_order_time_to_final_seconds_sum');
    assert.ok(slowest > 0 && slowest < 6 * 60, `time to final, summed: ${slowest} s`);
    for (const decision of ['REFUNDED', 'FULFILLED']) {
      const labels = { order_type: 'mobile_topup', decision };
      assert.equal(
        valueOf(workerMetrics, 'topup_review_decisions_total', { ...labels, handler: 'decideReview' }),
        1,
      );
      assert.equal(
        valueOf(workerMetrics, 'topup_review_decision_outcomes_total', {
          ...labels,
          outcome: 'applied',
          refusal: 'none',
        }),
        1,
      );
    }
    assert.equal(
      valueOf(workerMetrics, 'topup_orders_disputed_total', {
        order_type: 'mobile_topup',
        decision: 'REFUNDED',
      }),
      1,
    );

    // Provider calls: one send per order, and exactly as many checks as the sandbox answered.
    const calls = (labels: Record<string, string>) =>
      valueOf(workerMetrics, 'topup_provider_calls_total', labels);
    assert.equal(calls({ operation: 'sendMobileTopup', outcome: 'ok' }), 5);
    assert.equal(calls({ operation: 'placeGiftCardOrder', outcome: 'ok' }), 1);
    assert.equal(calls({ operation: 'checkMobileTopup' }), (await sandbox.requests('mobile.check')).length);
    assert.equal(
      calls({ operation: 'checkGiftCardOrder' }),
      (await sandbox.requests('giftcards.checkOrder')).length,
    );
    assert.equal(
      valueOf(workerMetrics, 'topup_provider_call_duration_seconds_count', { operation: 'sendMobileTopup' }),
      5,
    );

    // The API: six orders accepted (the repeat is not one), by type and client; requests by route.
    const apiMetrics = await scrapeUntil(apiMetricsUrl, (all) => valueOf(all, 'topup_review_backlog') === 0);
    const accepted = (labels: Record<string, string>) =>
      valueOf(apiMetrics, 'topup_orders_accepted_total', labels);
    assert.equal(accepted({ order_type: 'mobile_topup', client: 'shop' }), 5);
    assert.equal(accepted({ order_type: 'gift_card', client: 'acme' }), 1);
    assert.equal(accepted({}), 6);
    const requests = (labels: Record<string, string>) =>
      valueOf(apiMetrics, 'topup_api_requests_total', labels);
    assert.equal(requests({ method: 'POST', route: '/v1/orders', status: '201' }), 6);
    assert.equal(requests({ method: 'POST', route: '/v1/orders', status: '200' }), 1);
    assert.equal(requests({ method: 'POST', route: '/v1/orders/:ref/review', status: '200' }), 2);
    assert.equal(valueOf(apiMetrics, 'topup_review_backlog'), 0, 'the backlog emptied');
    assert.equal(valueOf(apiMetrics, 'topup_review_oldest_age_seconds'), 0);
  });

  it('never puts a ref, a key or a phone number in a label', async () => {
    const all = [...(await scrape(apiMetricsUrl)), ...(await scrape(workerMetricsUrl))];
    const values = all.flatMap((s) => Object.values(s.labels)).join('\n');
    for (const secret of [
      ...refs.fulfilled,
      refs.review,
      refs.giftCard,
      sandboxSpecialNumbers.unknownError,
      '0551234567',
      testClients.shop.key,
    ]) {
      assert.ok(!values.includes(secret), `${secret} is a label value`);
    }
    // Every label of ours is one the catalog declares (Temporal adds namespace, task queue and type).
    for (const definition of Object.values(metricCatalog)) {
      const name = exportedName(definition);
      const ours = all.filter((s) => s.name === name || s.name.startsWith(`${definition.name}_`));
      for (const sample of ours) {
        const extra = Object.keys(sample.labels).filter(
          (l) =>
            !(definition.labels as readonly string[]).includes(l) &&
            !['le', 'namespace', 'taskQueue', 'workflowType'].includes(l),
        );
        assert.deepEqual(extra, [], `${sample.name}: labels beyond the catalog`);
      }
    }
  });

  it('counts webhook deliveries by event and outcome, and their lag from the status change', async () => {
    const ref = newRef('metrics-hooked');
    const submitted = await api('POST', '/v1/orders', HOOKED_KEY, mobileRequest(ref));
    assert.equal(submitted.status, 201);
    await waitFor(ref, 'FULFILLED', HOOKED_KEY);
    const delivered = { client: 'hooked', event_type: 'order.fulfilled', outcome: 'delivered' };
    const all = await scrapeUntil(
      workerMetricsUrl,
      (s) => valueOf(s, 'topup_webhook_deliveries_total', delivered) >= 1,
    );
    assert.equal(valueOf(all, 'topup_webhook_deliveries_total', delivered), 1);
    assert.equal(
      valueOf(all, 'topup_webhook_deliveries_total', { client: 'hooked' }),
      receiver.deliveries.length,
      'one count per attempt the receiver saw',
    );
    assert.equal(
      valueOf(all, 'topup_webhook_delivery_lag_seconds_count', {
        client: 'hooked',
        event_type: 'order.fulfilled',
      }),
      1,
    );
  });

  it('counts what the nightly reconciliation found, by outcome', async () => {
    // One more order, which the provider then tops up a second time under its ref (money sent twice).
    const twice = newRef('metrics-twice');
    const shopKey = testClients.shop.key;
    assert.equal((await api('POST', '/v1/orders', shopKey, mobileRequest(twice))).status, 201);
    await waitFor(twice, 'FULFILLED', shopKey);
    const provider = testProvider(sandbox.url);
    await sandbox.settings({ uniqueRefs: false });
    try {
      const { planCode, msisdn, amount } = mobileRequest(twice);
      await provider.client.sendMobileTopup({
        plan_code: planCode,
        MSSIDN: msisdn,
        amount,
        ref: providerRefFor('shop', twice),
      });
    } finally {
      await sandbox.settings({ uniqueRefs: true });
      await provider.close();
    }
    // The orders the tests above settled, against the sandbox's ledger of the same hour.
    const report = (await client.workflow.execute(RECONCILE_DAY_WORKFLOW, {
      workflowId: reconciliationWorkflowId(`metrics-${randomUUID()}`),
      taskQueue,
      args: [
        {
          date: '2001-04-01',
          timeZone: 'UTC',
          from: new Date(Date.now() - 60 * 60_000).toISOString(),
          to: new Date().toISOString(),
          lookbackMs: 0,
        },
      ],
    })) as ReconciliationReport;
    assert.ok(report.matched >= 1, JSON.stringify(report));
    const all = await scrapeUntil(
      workerMetricsUrl,
      (s) =>
        valueOf(s, 'topup_reconciliation_orders_total', { outcome: 'matched' }) >= 1 &&
        valueOf(s, 'topup_reconciliation_orders_total', { outcome: 'second-top-up' }) >= 1,
    );
    assert.equal(valueOf(all, 'topup_reconciliation_orders_total', { outcome: 'matched' }), report.matched);
    assert.equal(report.secondTopUps, 1, JSON.stringify(report.items));
    assert.equal(valueOf(all, 'topup_reconciliation_orders_total', { outcome: 'second-top-up' }), 1);
  });

  it('exports every metric the Grafana dashboard and the alert rules query (a failed workflow task included)', async () => {
    // A workflow task that fails (a bug's symptom): the alert's metric exists only once one has.
    const broken = await client.workflow.start(workflowTypeByOrderType.mobile_topup, {
      workflowId: `metrics-broken-${randomUUID()}`,
      taskQueue,
      args: [{}],
    });
    const workerMetrics = await scrapeUntil(workerMetricsUrl, (all) =>
      has(all, 'temporal_workflow_task_execution_failed_total'),
    );
    await broken.terminate('test: a workflow task that fails, for its metric');
    const exported = new Set(
      [...workerMetrics, ...(await scrape(apiMetricsUrl))].map((s) =>
        s.name.replace(/_(bucket|sum|count)$/, ''),
      ),
    );

    const dashboard = JSON.parse(
      readFileSync(join(projectRoot, 'deploy', 'grafana', 'dashboards', 'topup-fulfillment.json'), 'utf8'),
    ) as { panels: { targets?: { expr: string }[] }[] };
    const alerts = parse(readFileSync(join(projectRoot, 'deploy', 'prometheus', 'alerts.yml'), 'utf8')) as {
      groups: { rules: { alert: string; expr: string; annotations?: Record<string, string> }[] }[];
    };
    const queries = [
      ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
      ...alerts.groups.flatMap((g) =>
        g.rules.flatMap((r) => [r.expr, ...Object.values(r.annotations ?? {})]),
      ),
    ];
    const used = new Set(queries.flatMap(metricNamesIn).map((n) => n.replace(/_(bucket|sum|count)$/, '')));
    assert.ok(used.size >= 12, `the dashboard queries ${used.size} metrics`);
    const missing = [...used].filter((name) => !exported.has(name));
    assert.deepEqual(missing, [], 'queried but not exported');
    // And the figures the catalog defines all have a panel.
    for (const definition of Object.values(metricCatalog))
      assert.ok(used.has(exportedName(definition)), `${exportedName(definition)} is on the dashboard`);
    assert.deepEqual(alerts.groups.flatMap((g) => g.rules.map((r) => r.alert)).sort(), [
      'OrdersDisputed',
      'OrdersHeld',
      'ProviderApiError',
      'ProviderBalanceLow',
      'ProviderErrorRateHigh',
      'ProviderOperatorDown',
      'ReviewBacklogTooOld',
      'TopUpSentTwice',
      'WebhookDeliveriesFailing',
      'WorkflowTaskFailures',
    ]);
  });
});
