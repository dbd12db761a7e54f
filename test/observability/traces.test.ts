/**
 * One order traced from the API request to the provider's HTTP calls, in memory: the API, a worker
 * and the sandbox in this process, with the tracing the API and the worker start when an OTLP
 * endpoint is configured (src/observability/tracing.ts) but an in-memory exporter in its place.
 * And the gate in src/worker/interceptors.workflow.ts: an order started without a trace builds no spans.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, type Connection } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';
import { TRACE_HEADER as LIBRARY_TRACE_HEADER } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import { TRACE_HEADER } from '../../src/worker/interceptors.workflow';
import { type NativeConnection, Worker } from '@temporalio/worker';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createActivities } from '../../src/worker/activities';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { testClients, testClientsFilePath, type TestApi } from '../helpers/api';
import { freePort } from '../../src/temporal/dev-server';
import { startPart, waitForHttp, type ManagedProcess } from '../../scripts/lib/processes';
import { startTracing, type Tracing } from '../../src/observability/tracing';
import { defaultOrderTimings, orderWorkflowId, type OrderView } from '../../contract/order';
import {
  mobileRequest,
  newRef,
  scaledTimings,
  startOrder,
  startTestSandbox,
  type testProvider,
  TIME_SCALE,
  waitForView,
  type TestSandbox,
} from '../helpers/orders';
import { useTemporal, workflowCodeOptions, type TestTemporal } from '../helpers/temporal';
import { startOrderStack, type OrderStack } from '../helpers/stack';
import { makeTestVersionCurrent, versionedTestCode } from '../helpers/versioning';

describe('traces', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  let stack: OrderStack<'main'>;
  let temporal: TestTemporal;
  let provider: ReturnType<typeof testProvider>;
  let nativeConnection: NativeConnection;
  let connection: Connection;
  let api: TestApi;
  let tracedClient: Client;
  let taskQueue: string;

  before(async () => {
    tracing = await startTracing({ serviceName: 'traces-test', exporter, batch: false });
    stack = await startOrderStack({
      name: 'traces',
      workers: { main: {} },
      tracing,
      // As src/api/main.ts builds the client when tracing is on.
      clientInterceptors: {
        workflow: [new OpenTelemetryWorkflowClientInterceptor({ tracer: tracing.tracer })],
      },
      api: { timingsFor: () => scaledTimings(), tracer: tracing.tracer },
    });
    ({ temporal, provider, nativeConnection, connection, client: tracedClient, api } = stack);
    taskQueue = stack.taskQueues.main;
  });

  after(async () => {
    await stack?.stop();
    await tracing?.shutdown();
  });

  /** The spans of one trace, once `done` says the trace is complete (workflow spans arrive last). */
  async function traceOf(
    root: (span: ReadableSpan) => boolean,
    done: (spans: ReadableSpan[]) => boolean,
  ): Promise<ReadableSpan[]> {
    const deadline = Date.now() + 20_000;
    let spans: ReadableSpan[] = [];
    while (Date.now() < deadline) {
      const first = exporter.getFinishedSpans().find(root);
      if (first) {
        const traceId = first.spanContext().traceId;
        spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
        if (done(spans)) return spans;
      }
      await sleep(100);
    }
    throw new Error(`trace incomplete: ${spans.map((s) => s.name).join(', ')}`);
  }

  it('an order submitted through the API is one trace: request → start → workflow → activities → provider HTTP calls', async () => {
    const request = mobileRequest(newRef('traced'));
    const submitted = await api.request('POST', '/v1/orders', { body: request });
    assert.equal(submitted.status, 201, submitted.text);
    const deadline = Date.now() + 20_000;
    while ((await api.request<OrderView>('GET', `/v1/orders/${request.ref}`)).body.status !== 'FULFILLED') {
      assert.ok(Date.now() < deadline, 'the order is FULFILLED');
      await sleep(100);
    }

    const spans = await traceOf(
      (span) => span.name === 'POST /v1/orders' && span.attributes['http.response.status_code'] === 201,
      (all) => all.some((s) => s.name === 'RunWorkflow:mobileTopupWorkflow'),
    );
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const ancestry = (span: ReadableSpan): string[] => {
      const names: string[] = [];
      for (
        let s: ReadableSpan | undefined = span;
        s;
        s = s.parentSpanId ? byId.get(s.parentSpanId) : undefined
      )
        names.push(s.name);
      return names;
    };
    const providerCall = (path: string) =>
      spans.find((s) => String(s.attributes['url.full'] ?? '').includes(path));

    const send = providerCall('/v3/mobile/send');
    assert.ok(send, `a span for the provider's send; spans: ${spans.map((s) => s.name).join(', ')}`);
    assert.deepEqual(ancestry(send), [
      'POST',
      'RunActivity:sendMobileTopup',
      'StartActivity:sendMobileTopup',
      'RunWorkflow:mobileTopupWorkflow',
      'StartWorkflow:mobileTopupWorkflow',
      'POST /v1/orders',
    ]);
    assert.equal(send.attributes['http.response.status_code'], 200);

    const check = providerCall('/v3/mobile/check-ref/');
    assert.ok(check, 'a span for a status check');
    assert.deepEqual(ancestry(check).slice(0, 4), [
      'GET',
      'RunActivity:pollMobileTopup',
      'StartActivity:pollMobileTopup',
      'RunWorkflow:mobileTopupWorkflow',
    ]);
    // The provider key travels in a header, never in a span.
    assert.doesNotMatch(JSON.stringify(spans.map((s) => s.attributes)), /sandbox-key/);

    // A traced order's history replays as deterministically as any other.
    const history = await tracedClient.workflow.getHandle(orderWorkflowId(request.ref)).fetchHistory();
    await Worker.runReplayHistory(
      { ...workflowCodeOptions(), sinks: { exporter: { export: { fn: () => {} } } } },
      history,
    );
  });

  it('a decision is its own trace: the review request, its update, and the workflow handling it', async () => {
    const request = mobileRequest(newRef('traced-review'), sandboxSpecialNumbers.unknownError);
    assert.equal((await api.request('POST', '/v1/orders', { body: request })).status, 201);
    const deadline = Date.now() + 20_000;
    while (
      (await api.request<OrderView>('GET', `/v1/orders/${request.ref}`)).body.status !== 'NEEDS_REVIEW'
    ) {
      assert.ok(Date.now() < deadline, 'the order is in review');
      await sleep(100);
    }
    const decided = await api.request('POST', `/v1/orders/${request.ref}/review`, {
      body: { decision: 'FULFILLED', operator: 'amina', note: 'credit confirmed' },
    });
    assert.equal(decided.status, 200, decided.text);
    const spans = await traceOf(
      (span) => span.name === 'POST /v1/orders/:ref/review',
      (all) => all.some((s) => s.name === 'HandleUpdate:decideReview'),
    );
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const handled = spans.find((s) => s.name === 'HandleUpdate:decideReview')!;
    const parent = byId.get(handled.parentSpanId!);
    assert.equal(parent?.name, 'StartWorkflowUpdate:decideReview');
    assert.equal(byId.get(parent.parentSpanId!)?.name, 'POST /v1/orders/:ref/review');
  });

  it('the workflows look for the trace in the header the library writes it to', () => {
    assert.equal(TRACE_HEADER, LIBRARY_TRACE_HEADER);
  });

  it('an order started without a trace builds no spans inside its workflow', async () => {
    // A worker whose span sink counts what workflows hand it.
    let exported = 0;
    // Versioned as every test stack's workers are: the workflows declare their behaviour.
    const { workflowCode, deployment } = await versionedTestCode('traces-untraced', workflowCodeOptions());
    const countingWorker = await Worker.create({
      connection: nativeConnection,
      namespace: temporal.namespace,
      taskQueue: `${taskQueue}-untraced`,
      activities: createActivities({ provider: provider.client }),
      ...workflowCode,
      workerDeploymentOptions: {
        version: deployment,
        useWorkerVersioning: true,
        defaultVersioningBehavior: 'PINNED',
      },
      sinks: { exporter: { export: { fn: (_info, spans: unknown[]) => void (exported += spans.length) } } },
    });
    const untracedClient = new Client({ connection, namespace: temporal.namespace });
    await countingWorker.runUntil(async () => {
      await makeTestVersionCurrent(connection, temporal.namespace, deployment, [`${taskQueue}-untraced`]);
      const untraced = await startOrder(
        untracedClient,
        `${taskQueue}-untraced`,
        mobileRequest(newRef('untraced')),
        {
          timings: scaledTimings(),
        },
      );
      await waitForView(untraced, (view) => view.status === 'FULFILLED');
      await untraced.result();
      assert.equal(exported, 0, 'no span from an untraced order');

      // The same worker, an order that carries a trace: its spans reach the sink.
      const traced = await startOrder(
        tracedClient,
        `${taskQueue}-untraced`,
        mobileRequest(newRef('traced')),
        {
          timings: scaledTimings(),
        },
      );
      await traced.result();
      assert.ok(exported > 0, 'the traced order exported its workflow spans');
    });
  });
});

describe('traces exported over OTLP by the real services', () => {
  /** An OTLP/HTTP collector that keeps what it receives (the JSON encoding the exporter sends). */
  interface Received {
    service: string;
    traceId: string;
    name: string;
  }
  const received: Received[] = [];
  let collector: Server;
  let temporal: TestTemporal;
  let sandbox: TestSandbox;
  const parts: ManagedProcess[] = [];

  before(async () => {
    collector = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        if (req.url === '/v1/traces') {
          const { resourceSpans = [] } = JSON.parse(body) as {
            resourceSpans?: {
              resource: { attributes: { key: string; value: { stringValue?: string } }[] };
              scopeSpans: { spans: { traceId: string; name: string }[] }[];
            }[];
          };
          for (const { resource, scopeSpans } of resourceSpans) {
            const service =
              resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
            for (const { spans } of scopeSpans)
              for (const span of spans) received.push({ service, traceId: span.traceId, name: span.name });
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    [temporal, sandbox] = await Promise.all([useTemporal(), startTestSandbox()]);
  });

  after(async () => {
    await Promise.all(parts.map((p) => p.stop()));
    await sandbox?.close();
    await temporal?.stop();
    await new Promise((resolve) => collector?.close(resolve));
  });

  it('with OTEL_EXPORTER_OTLP_ENDPOINT set, the API and the worker export one order as one trace', async () => {
    const port = await freePort();
    const spec = defaultOrderTimings.mobile_topup;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: temporal.namespace,
      TEMPORAL_TASK_QUEUE: `otlp-${randomUUID()}`,
      PROVIDER_BASE_URL: sandbox.url,
      PROVIDER_API_KEY: 'sandbox-key',
      ...(process.env.TEST_WORKFLOW_BUNDLE_PATH
        ? { WORKER_WORKFLOW_BUNDLE_PATH: process.env.TEST_WORKFLOW_BUNDLE_PATH }
        : {}),
      PORT: String(port),
      API_HOST: '127.0.0.1',
      API_CLIENTS_FILE: testClientsFilePath(),
      POLL_FIRST_CHECK_MS: String(spec.firstCheckMs * TIME_SCALE),
      POLL_HANDLING_CHECK_MS: String(spec.handlingCheckMs * TIME_SCALE),
      POLL_MAX_INTERVAL_MS: String(spec.maxIntervalMs * TIME_SCALE),
      POLL_INTERVAL_MS: String(spec.pollIntervalMs * TIME_SCALE),
      POLL_PACE_MOBILE_MS: String(spec.pollPaceMs * TIME_SCALE),
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`,
      // The batch processor's standard delay, short for the test (the SDK reads it).
      OTEL_BSP_SCHEDULE_DELAY: '100',
      LOG_LEVEL: 'warn',
    };
    for (const name of ['API_KEYS', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_SERVICE_NAME'])
      delete env[name];
    parts.push(startPart('worker', { env }), startPart('api', { env }));
    const apiUrl = `http://127.0.0.1:${port}`;
    await waitForHttp(`${apiUrl}/healthz`, { timeoutMs: 120_000 });

    const request = mobileRequest(newRef('otlp'));
    const headers = { authorization: `Bearer ${testClients.shop.key}`, 'content-type': 'application/json' };
    const submitted = await fetch(`${apiUrl}/v1/orders`, {
      method: 'POST',
      headers,
      body: JSON.stringify(request),
    });
    assert.equal(submitted.status, 201, await submitted.text());

    const deadline = Date.now() + 120_000;
    let trace: Received[] = [];
    while (Date.now() < deadline) {
      const root = received.find((s) => s.name === 'POST /v1/orders');
      trace = root ? received.filter((s) => s.traceId === root.traceId) : [];
      if (trace.some((s) => s.name === 'RunWorkflow:mobileTopupWorkflow')) break;
      await sleep(200);
    }
    const names = (service: string) => new Set(trace.filter((s) => s.service === service).map((s) => s.name));
    assert.deepEqual(
      [...names('topup-api')].filter((n) => n.startsWith('POST /v1') || n.startsWith('Start')).sort(),
      ['POST /v1/orders', 'StartWorkflow:mobileTopupWorkflow'],
    );
    for (const name of [
      'RunWorkflow:mobileTopupWorkflow',
      'StartActivity:sendMobileTopup',
      'RunActivity:sendMobileTopup',
      'POST',
    ])
      assert.ok(names('topup-worker').has(name), `the worker exported ${name}: ${JSON.stringify(trace)}`);
  });
});
