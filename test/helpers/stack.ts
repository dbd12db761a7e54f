/**
 * The end-to-end fixture: a Temporal server (the run's, or one of its own), the provider sandbox
 * over real HTTP with a provider client on it, workers running the real workflows and activities,
 * a Temporal client and the intake API. A test file starts it in `before()` and stops it in
 * `after()`; each part is optional, and payload encryption (`dataConverter`) and tracing
 * (`tracing`) reach every part that takes them, as src/worker/main.ts and src/api/main.ts wire them.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection, type ClientOptions } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { createActivities } from '../../src/worker/activities';
import { type OrderProvider } from '../../src/orders/order.activities';
import { StatementDays } from '../../src/statements/statement-days';
import type { ProviderPort } from '../../src/api/health';
import { startTestApi, type TestApi } from './api';
import type { Tracing } from '../../src/observability/tracing';
import type { AccountProvider } from '../../src/provider-account/account.activities';
import type { ReconciliationProvider } from '../../src/reconciliation/reconciliation.activities';
import { startDevServer, type DevServerOptions } from '../../src/temporal/dev-server';
import { createOrderWorker } from '../../src/worker/worker';
import { makeTestVersionCurrent, versionedTestCode } from './versioning';
import {
  bundledWorkflows,
  installTestRuntime,
  startTestSandbox,
  testProvider,
  type TestSandbox,
} from './orders';
import { useTemporal, type TestTemporal } from './temporal';

export interface StackWorker {
  /** The worker's provider, or how to make it on the stack's sandbox; default: the sandbox's provider client. */
  provider?: OrderProvider | ((sandbox: TestSandbox) => OrderProvider);
  /** Sends only through the task queue (as with WORKER_PROVIDER_CALLS_PER_SECOND). */
  queueSendsOnly?: boolean;
  /** Not started with the stack: the test starts it (startWorker) when it wants one. */
  deferred?: boolean;
  /** Watches the provider account (held orders, the send gate), reading it this often. */
  account?: { checkMs: number };
  /** Slots and cache (src/worker/worker.ts WorkerTuning): a constrained worker for a backlog. */
  tuning?: Parameters<typeof createOrderWorker>[0]['tuning'];
}

export type StackApiOptions = Omit<
  Parameters<typeof startTestApi>[0],
  'client' | 'taskQueue' | 'provider'
> & {
  /** The task queue the API starts orders on; default: the first worker's. */
  taskQueue?: string;
  /** The API's provider (catalog, intake checks); default: the sandbox's provider client. */
  provider?: Parameters<typeof startTestApi>[0]['provider'];
};

export interface StackOptions<K extends string> {
  /** Prefix of the task queues, so that no two files' workflows meet. */
  name: string;
  /** A Temporal dev server of the stack's own with these options instead of the run's (e.g. fairness off). */
  temporal?: Pick<DevServerOptions, 'fairness'>;
  /** The sandbox's time scale (default TIME_SCALE); `false`: no sandbox and no provider client. */
  sandbox?: { timeScale?: number } | false;
  /** One worker per name, each on a task queue of its own; default none. */
  workers?: Record<K, StackWorker>;
  /** The intake API with these options (config, timings, logger…); absent: no API. */
  api?: StackApiOptions;
  /** Payload encryption for the workers and the client (and so the API). */
  dataConverter?: DataConverter;
  /** Tracing for the workers; the client's interceptors are the test's (`clientInterceptors`). */
  tracing?: Tracing;
  clientInterceptors?: ClientOptions['interceptors'];
}

export interface OrderStack<K extends string> {
  temporal: TestTemporal;
  /** Absent with `sandbox: false`. */
  sandbox: TestSandbox;
  provider: ReturnType<typeof testProvider>;
  connection: Connection;
  nativeConnection: NativeConnection;
  client: Client;
  taskQueues: Record<K, string>;
  /** Absent without `api`. */
  api: TestApi;
  /** The named worker while it runs. */
  worker(name: K): Worker | undefined;
  /** Starts the named worker (again, after stopWorker). */
  startWorker(name: K): Promise<Worker>;
  /** Another API on the stack's client and provider (e.g. with another config); closed by stop(). */
  startApi(options?: StackApiOptions): Promise<TestApi>;
  /** Shuts the named worker down and waits for it. */
  stopWorker(name: K): Promise<void>;
  stop(): Promise<void>;
}

export async function startOrderStack<K extends string = never>(
  options: StackOptions<K>,
): Promise<OrderStack<K>> {
  installTestRuntime();
  const [temporal, sandbox] = await Promise.all([
    options.temporal ? startDevServer({ uiPort: false, ...options.temporal }) : useTemporal(),
    options.sandbox === false ? undefined : startTestSandbox(options.sandbox?.timeScale),
  ]);
  const provider = sandbox && testProvider(sandbox.url);
  const workerSpecs = Object.entries(options.workers ?? {}) as [K, StackWorker][];
  const [nativeConnection, connection, bundled] = await Promise.all([
    NativeConnection.connect({ address: temporal.address }),
    Connection.connect({ address: temporal.address }),
    workerSpecs.length > 0 ? bundledWorkflows() : undefined,
  ]);
  const versioned = bundled && (await versionedTestCode(options.name, bundled));
  const workflowCode = versioned?.workflowCode;
  // The sweep's activity resumes orders through it (src/orders/sweep.activities.ts).
  const client = new Client({
    connection,
    namespace: temporal.namespace,
    ...(options.dataConverter && { dataConverter: options.dataConverter }),
    ...(options.clientInterceptors && { interceptors: options.clientInterceptors }),
  });
  const taskQueues = Object.fromEntries(
    workerSpecs.map(([name]) => [name, `${options.name}-${name}-${randomUUID()}`]),
  ) as Record<K, string>;
  const running = new Map<K, { worker: Worker; run: Promise<void> }>();
  const providers = new Map(
    workerSpecs.map(([name, spec]) => [
      name,
      typeof spec.provider === 'function' ? spec.provider(sandbox as TestSandbox) : spec.provider,
    ]),
  );

  const startWorker = async (name: K): Promise<Worker> => {
    const spec = (options.workers as Record<K, StackWorker>)[name];
    const orderProvider = providers.get(name) ?? provider?.client;
    if (!orderProvider || !workflowCode) throw new Error(`worker ${name}: no provider`);
    const worker = await createOrderWorker({
      connection: nativeConnection,
      namespace: temporal.namespace,
      taskQueue: taskQueues[name],
      activities: createActivities({
        provider: orderProvider,
        localSends: !spec.queueSendsOnly,
        temporal: client,
        reconciliation: orderProvider as unknown as ReconciliationProvider,
        // No later-runs margin: tests seed orders of past days seconds before the nightly run, and
        // within the margin their own first runs would count as later runs (a rewrite of each day).
        statementDays: new StatementDays(client, taskQueues[name], 0),
        ...(spec.account && {
          account: {
            provider: orderProvider as unknown as AccountProvider,
            checkMs: spec.account.checkMs,
            pingMaxAgeMs: spec.account.checkMs,
          },
        }),
      }),
      workflowCode,
      ...(spec.tuning && { tuning: spec.tuning }),
      ...(options.dataConverter && { dataConverter: options.dataConverter }),
      ...(options.tracing && { tracing: options.tracing }),
      ...(versioned && { deployment: versioned.deployment }),
    });
    running.set(name, { worker, run: worker.run() });
    // The stack's version is current once its first workers poll; a later one's queue joins it.
    if (versioned)
      await makeTestVersionCurrent(connection, temporal.namespace, versioned.deployment, [taskQueues[name]]);
    return worker;
  };
  const stopWorker = async (name: K): Promise<void> => {
    const entry = running.get(name);
    if (!entry) return;
    running.delete(name);
    if (entry.worker.getState() === 'RUNNING') entry.worker.shutdown();
    await entry.run;
  };

  await Promise.all(workerSpecs.filter(([, spec]) => !spec.deferred).map(([name]) => startWorker(name)));
  const firstQueue = workerSpecs[0] && taskQueues[workerSpecs[0][0]];
  const { taskQueue = firstQueue ?? `${options.name}-${randomUUID()}`, ...apiOptions } = options.api ?? {};
  const apis: TestApi[] = [];
  const startApi = async ({
    taskQueue: queue = taskQueue,
    ...rest
  }: StackApiOptions = {}): Promise<TestApi> => {
    const apiProvider = rest.provider ?? provider?.client;
    if (!apiProvider) throw new Error('the API needs a provider: the sandbox or its own');
    const started = await startTestApi({ ...rest, client, taskQueue: queue, provider: apiProvider });
    apis.push(started);
    return started;
  };
  const api = options.api && (await startApi({ ...apiOptions, taskQueue }));

  return {
    temporal,
    sandbox: sandbox as TestSandbox,
    provider: provider as ReturnType<typeof testProvider>,
    connection,
    nativeConnection,
    client,
    taskQueues,
    api: api as TestApi,
    worker: (name) => running.get(name)?.worker,
    startWorker,
    startApi,
    stopWorker,
    async stop() {
      // A test may have closed one itself already.
      await Promise.allSettled(apis.map((started) => started.close()));
      await Promise.all([...running.keys()].map(stopWorker));
      await Promise.all([connection.close(), nativeConnection.close(), provider?.close(), sandbox?.close()]);
      await temporal.stop();
    },
  };
}

/**
 * The API's provider where no order reaches a provider (no worker polls the task queue): an empty
 * gift-card catalog and a valid sandbox key, so readiness and intake pass without a sandbox.
 */
export const idleProvider: ProviderPort = {
  getGiftCardCatalog: async () => ({ categories: [] }),
  validateKey: async () => ({ username: 'u', apiKey: { type: 'SANDBOX', scope: 'all', isEnabled: true } }),
};

/** A valid mobile top-up body for tests that care about the route, not the order. */
export const mobileTopupBody = (ref: string) => ({
  type: 'mobile_topup',
  ref,
  planCode: 'PREPAID_DJEZZY',
  msisdn: '0550000001',
  amount: 500,
});

export interface OrderTestWorkers<K extends string> {
  temporal: TestTemporal;
  client: Client;
  /** One task queue per worker. */
  taskQueues: Record<K, string>;
  stop(): Promise<void>;
}

/**
 * startOrderStack with workers only (no sandbox, no API): one worker per named provider (e.g. one
 * with the sandbox key, one with the production key), each on a task queue of its own.
 */
export async function startOrderTestWorkers<K extends string>(
  providers: Record<K, OrderProvider>,
  {
    queueSendsOnly = [],
    account,
    tuning,
  }: {
    /** Workers that send only through the task queue (as with WORKER_PROVIDER_CALLS_PER_SECOND). */
    queueSendsOnly?: NoInfer<K>[];
    /** Workers that watch the provider account (held orders, the send gate), reading it this often. */
    account?: { workers: NoInfer<K>[]; checkMs: number };
    /** Every worker's concurrency settings (e.g. a workflow cache of one, to evict on every task). */
    tuning?: StackWorker['tuning'];
  } = {},
): Promise<OrderTestWorkers<K>> {
  const workers = Object.fromEntries(
    (Object.entries(providers) as [K, OrderProvider][]).map(([name, provider]) => [
      name,
      {
        provider,
        queueSendsOnly: queueSendsOnly.includes(name),
        ...(account?.workers.includes(name) && { account: { checkMs: account.checkMs } }),
        ...(tuning && { tuning }),
      } satisfies StackWorker,
    ]),
  ) as Record<K, StackWorker>;
  const stack = await startOrderStack<K>({ name: 'orders-test', sandbox: false, workers });
  return { temporal: stack.temporal, client: stack.client, taskQueues: stack.taskQueues, stop: stack.stop };
}
