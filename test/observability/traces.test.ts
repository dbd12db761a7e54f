/**
 * One order traced from the API request to the provider's HTTP calls, in memory: the API, a worker
 * and the sandbox in this process, with the tracing the API and the worker start when an OTLP
 * endpoint is configured (src/observability/tracing.ts) but an in-memory exporter in its place.
 * And the gate in workflows/interceptors.ts: an order started without a trace builds no spans.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createActivities } from '../../activities';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { startTestApi, type TestApi } from '../../src/api/testing';
import { startTracing, type Tracing } from '../../src/observability/tracing';
import { createOrderWorker } from '../../src/worker/worker';
import type { OrderView } from '../../workflows/contract';
import {
  installTestRuntime,
  mobileRequest,
  newRef,
  scaledTimings,
  startOrder,
  startTestSandbox,
  testProvider,
  waitForView,
  type TestSandbox,
} from '../helpers/orders';
import { useTemporal, workflowCodeOptions, type TestTemporal } from '../helpers/temporal';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('traces', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  let temporal: TestTemporal;
  let sandbox: TestSandbox;
  let provider: ReturnType<typeof testProvider>;
  let nativeConnection: NativeConnection;
  let connection: Connection;
  let worker: Worker;
  let workerRun: Promise<void>;
  let api: TestApi;
  const taskQueue = `traces-${randomUUID()}`;

  before(async () => {
    installTestRuntime();
    tracing = startTracing({ serviceName: 'traces-test', exporter, batch: false });
    [temporal, sandbox] = await Promise.all([useTemporal(), startTestSandbox()]);
    provider = testProvider(sandbox.url);
    nativeConnection = await NativeConnection.connect({ address: temporal.address });
    worker = await createOrderWorker({
      connection: nativeConnection,
      namespace: temporal.namespace,
      taskQueue,
      activities: createActivities({ provider: provider.client }),
      workflowCode: workflowCodeOptions(),
      tracing,
    });
    workerRun = worker.run();
    connection = await Connection.connect({ address: temporal.address });
    // As src/api/main.ts builds it when tracing is on.
    const client = new Client({
      connection,
      namespace: temporal.namespace,
      interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor({ tracer: tracing.tracer })] },
    });
    api = await startTestApi({
      client,
      taskQueue,
      provider: provider.client,
      timingsFor: () => scaledTimings(),
      tracer: tracing.tracer,
    });
  });

  after(async () => {
    await api?.close();
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await workerRun;
    await Promise.all([connection?.close(), nativeConnection?.close(), provider?.close(), sandbox?.close()]);
    await temporal?.stop();
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
      'RunActivity:checkMobileTopup',
      'StartActivity:checkMobileTopup',
      'RunWorkflow:mobileTopupWorkflow',
    ]);
    // The provider key travels in a header, never in a span.
    assert.doesNotMatch(JSON.stringify(spans.map((s) => s.attributes)), /sandbox-key/);
  });

  it('a decision is its own trace: the review request, its signal, and the workflow handling it', async () => {
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
      body: { decision: 'REFUNDED', operator: 'amina', note: 'no credit' },
    });
    assert.equal(decided.status, 202, decided.text);
    const spans = await traceOf(
      (span) => span.name === 'POST /v1/orders/:ref/review',
      (all) => all.some((s) => s.name === 'HandleSignal:resolveReview'),
    );
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const handled = spans.find((s) => s.name === 'HandleSignal:resolveReview')!;
    const parent = byId.get(handled.parentSpanId!);
    assert.equal(parent?.name, 'SignalWorkflow:resolveReview');
    assert.equal(byId.get(parent.parentSpanId!)?.name, 'POST /v1/orders/:ref/review');
  });

  it('an order started without a trace builds no spans inside its workflow', async () => {
    // A worker whose span sink counts what workflows hand it.
    let exported = 0;
    const countingWorker = await Worker.create({
      connection: nativeConnection,
      namespace: temporal.namespace,
      taskQueue: `${taskQueue}-untraced`,
      activities: createActivities({ provider: provider.client }),
      ...workflowCodeOptions(),
      sinks: { exporter: { export: { fn: (_info, spans: unknown[]) => void (exported += spans.length) } } },
    });
    const untracedClient = new Client({ connection, namespace: temporal.namespace });
    const tracedClient = new Client({
      connection,
      namespace: temporal.namespace,
      interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor({ tracer: tracing.tracer })] },
    });
    await countingWorker.runUntil(async () => {
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
