/**
 * The end-to-end fixture: a Temporal server (the run's, or one of its own), the provider sandbox
 * over real HTTP with a provider client on it, workers running the real workflows and activities,
 * a Temporal client and the intake API. A test file starts it in `before()` and stops it in
 * `after()`; each part is optional, and payload encryption (`dataConverter`) and tracing
 * (`tracing`) reach every part that takes them, as src/worker/main.ts and src/api/main.ts wire them.
 * With `webhooks`, the order workers announce their orders' events (the announcing local activity)
 * to the delivery workflows, run by a webhook worker on a task queue of its own with the real
 * sender over HTTP, and the API serves the same client registry: as the API and the worker share
 * one clients file. Receivers are real HTTP servers (src/webhooks/receiver.ts).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { after, afterEach, before } from 'node:test';
import { Client, Connection, type ClientOptions } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { createActivities } from '../../src/worker/activities';
import { type OrderProvider } from '../../src/orders/order.activities';
import { StatementDays } from '../../src/statements/statement-days';
import type { ProviderPort } from '../../src/api/health';
import { apiTestConfig, startTestApi, type TestApi } from './api';
import type { Tracing } from '../../src/observability/tracing';
import type { AccountProvider } from '../../src/provider-account/account.activities';
import type { ReconciliationProvider } from '../../src/reconciliation/reconciliation.activities';
import { startDevServer, type DevServerOptions } from '../../src/temporal/dev-server';
import { createOrderWorker, createWebhookWorker } from '../../src/worker/worker';
import { createDeliveryActivities, type DirectDelivery } from '../../src/webhooks/webhook.activities';
import { orderDeliveryRecords } from '../../src/webhooks/webhook-records.service';
import { AddressPolicy, type LookupAll } from '../../src/webhooks/address-guard';
import { endpointSecret } from '../../src/webhooks/secrets';
import { WebhookSender } from '../../src/webhooks/sender';
import { ClientRegistry } from '../../src/clients/registry';
import type { ClientsFile } from '../../src/clients/model';
import type { WebhookDeliveryPolicy, WebhookDeliveryState } from '../../contract/webhooks';
import { makeTestVersionCurrent, versionedTestCode } from './versioning';
import {
  bundledWorkflows,
  installTestRuntime,
  scaledTimings,
  startOrder,
  startTestSandbox,
  testProvider,
  type TestSandbox,
} from './orders';
import type { OrderInput, OrderRequest } from '../../contract/order';
import { useTemporal, type TestTemporal } from './temporal';
import { TEST_WEBHOOK_POLICY, TEST_WEBHOOK_TIMEOUT_MS } from './webhooks';

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
  /** Webhooks: every order worker announces to a delivery worker, and the API serves these clients. */
  webhooks?: StackWebhookOptions;
  /** Payload encryption for the workers and the client (and so the API). */
  dataConverter?: DataConverter;
  /** Tracing for the workers; the client's interceptors are the test's (`clientInterceptors`). */
  tracing?: Tracing;
  clientInterceptors?: ClientOptions['interceptors'];
}

export interface StackWebhookOptions {
  /** The clients and their endpoints (clientsWith in test/helpers/webhooks.ts). */
  clients: ClientsFile;
  /** Networks the sender may reach although not public (default: 127.0.0.1 only). */
  allowedNetworks?: string[];
  lookup?: LookupAll;
  /** WEBHOOK_SIGNING_KEY (default: a random one), so receivers can be given their secrets first. */
  signingKey?: Buffer;
  /** Over TEST_WEBHOOK_POLICY. */
  policy?: Partial<WebhookDeliveryPolicy>;
  /** The announcements' direct tries (src/webhooks/webhook.activities.ts DirectDelivery): limits for a test. */
  direct?: Omit<DirectDelivery, 'deliver'>;
  /** The delivery worker's sender timeout, WEBHOOK_TIMEOUT_MS (default TEST_WEBHOOK_TIMEOUT_MS). */
  senderTimeoutMs?: number;
  /** The delivery worker's WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT (default: unbounded). */
  maxInFlightPerEndpoint?: number;
}

export interface StackWebhooks {
  /** The delivery workflows' task queue (WEBHOOK_TASK_QUEUE). */
  taskQueue: string;
  registry: ClientRegistry;
  signingKey: Buffer;
  /** The current secret of a client's endpoint. */
  secretOf(client: string, endpoint: string, version?: number): string;
  /** The order's delivery state as the routes read it (undefined while it has none). */
  deliveryState(orderWorkflowId: string): Promise<WebhookDeliveryState | undefined>;
}

export interface OrderStack<K extends string = never> {
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
  /** Absent without `webhooks`. */
  webhooks: StackWebhooks;
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
    workerSpecs.length > 0 || options.webhooks ? bundledWorkflows() : undefined,
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
  const hooks =
    options.webhooks && webhookDelivery(options.webhooks, `${options.name}-webhooks-${randomUUID()}`);
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
        ...(hooks && { webhooks: { ...hooks.announce, temporal: client } }),
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
  let delivering: { worker: Worker; run: Promise<void> } | undefined;
  if (hooks && workflowCode) {
    const worker = await createWebhookWorker({
      connection: nativeConnection,
      namespace: temporal.namespace,
      taskQueue: hooks.taskQueue,
      activities: hooks.deliveryActivities,
      workflowCode,
      maxConcurrentDeliveries: 20,
      ...(options.dataConverter && { dataConverter: options.dataConverter }),
      ...(versioned && { deployment: versioned.deployment }),
    });
    delivering = { worker, run: worker.run() };
    if (versioned)
      await makeTestVersionCurrent(connection, temporal.namespace, versioned.deployment, [hooks.taskQueue]);
  }
  const firstQueue = workerSpecs[0] && taskQueues[workerSpecs[0][0]];
  const { taskQueue = firstQueue ?? `${options.name}-${randomUUID()}`, ...apiOptions } = options.api ?? {};
  const apis: TestApi[] = [];
  const startApi = async ({
    taskQueue: queue = taskQueue,
    ...rest
  }: StackApiOptions = {}): Promise<TestApi> => {
    const apiProvider = rest.provider ?? provider?.client;
    if (!apiProvider) throw new Error('the API needs a provider: the sandbox or its own');
    const started = await startTestApi({
      ...rest,
      ...(hooks && {
        clients: rest.clients ?? hooks.registry,
        // The webhook tests call often and read the account gauges fresh.
        config: {
          ...(rest.config ??
            apiTestConfig({ API_RATE_LIMIT_PER_MINUTE: '100000', API_ACCOUNT_REPORT_TTL_MS: '200' })),
          WEBHOOK_TASK_QUEUE: hooks.taskQueue,
        },
      }),
      client,
      taskQueue: queue,
      provider: apiProvider,
    });
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
    webhooks: (hooks && {
      taskQueue: hooks.taskQueue,
      registry: hooks.registry,
      signingKey: hooks.signingKey,
      secretOf: (clientId, endpoint, version = 1) =>
        endpointSecret(hooks.signingKey, clientId, endpoint, version),
      // What the routes read: the order's own record of its direct deliveries with its delivery workflow's.
      deliveryState: async (orderWorkflowId) => (await orderDeliveryRecords(client, orderWorkflowId)).merged,
    }) as StackWebhooks,
    worker: (name) => running.get(name)?.worker,
    startWorker,
    startApi,
    stopWorker,
    async stop() {
      // A test may have closed one itself already.
      await Promise.allSettled(apis.map((started) => started.close()));
      await Promise.all([...running.keys()].map(stopWorker));
      if (delivering) {
        if (delivering.worker.getState() === 'RUNNING') delivering.worker.shutdown();
        await delivering.run;
      }
      await Promise.all([connection.close(), nativeConnection.close(), provider?.close(), sandbox?.close()]);
      await Promise.all([hooks?.sender.close(), hooks?.directSender.close()]);
      await temporal.stop();
    },
  };
}

/** The webhook parts of a stack: the registry, the senders and what the workers are given. */
function webhookDelivery(options: StackWebhookOptions, taskQueue: string) {
  const registry = new ClientRegistry(options.clients);
  const signingKey = options.signingKey ?? randomBytes(32);
  const addresses = () => new AddressPolicy(options.allowedNetworks ?? ['127.0.0.1/32']);
  const sender = new WebhookSender({
    timeoutMs: options.senderTimeoutMs ?? TEST_WEBHOOK_TIMEOUT_MS,
    policy: addresses(),
    lookup: options.lookup,
  });
  const directSender = new WebhookSender({
    timeoutMs: TEST_WEBHOOK_TIMEOUT_MS,
    policy: addresses(),
    lookup: options.lookup,
  });
  return {
    taskQueue,
    registry,
    signingKey,
    sender,
    directSender,
    /** The order workers' AnnounceDeps but their client. */
    announce: {
      taskQueue,
      endpoints: registry,
      policy: { ...TEST_WEBHOOK_POLICY, ...options.policy },
      direct: {
        deliver: createDeliveryActivities({ endpoints: registry, signingKey, sender: directSender })
          .deliverWebhook,
        ...options.direct,
      },
    },
    deliveryActivities: createDeliveryActivities({
      endpoints: registry,
      signingKey,
      sender,
      ...(options.maxInFlightPerEndpoint !== undefined && {
        maxInFlightPerEndpoint: options.maxInFlightPerEndpoint,
      }),
    }),
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

export interface FaultStack<K extends string> {
  /** The stack, once the suite's `before` has run. */
  readonly stack: OrderStack<K>;
  readonly client: Client;
  readonly sandbox: TestSandbox;
  readonly taskQueues: Record<K, string>;
  readonly provider: OrderStack<K>['provider'];
  readonly temporal: TestTemporal;
  /**
   * An order started as the API starts one (startOrder) on `worker`'s task queue (default: the
   * first worker's), with scaledTimings() unless `extra.timings` says otherwise.
   */
  start(
    request: OrderRequest,
    extra?: Omit<OrderInput, 'request' | 'acceptedAt'>,
    worker?: K,
  ): ReturnType<typeof startOrder>;
}

/**
 * The stack of a file whose tests set sandbox faults and settings, which apply to the whole sandbox
 * (so its tests run one after another and each leaves none behind). Registers the suite's hooks:
 * startOrderStack(`options`) before all; the sandbox's faults cleared after each test; `tearDown`,
 * then the stack stopped, after all. A file's own `before`/`afterEach` hooks, registered after this
 * call, run after these.
 */
export function useFaultStack<K extends string>(
  options: StackOptions<K> & { workers: Record<K, StackWorker> },
  tearDown?: (stack: OrderStack<K>) => Promise<void>,
): FaultStack<K> {
  let started: OrderStack<K> | undefined;
  const stack = (): OrderStack<K> => {
    if (!started) throw new Error(`the ${options.name} stack starts in the suite's before()`);
    return started;
  };
  const firstWorker = Object.keys(options.workers)[0] as K;
  before(async () => {
    started = await startOrderStack(options);
  });
  afterEach(async () => {
    await started?.sandbox.clearFaults();
  });
  after(async () => {
    if (!started) return;
    await tearDown?.(started);
    await started.stop();
  });
  return {
    get stack() {
      return stack();
    },
    get client() {
      return stack().client;
    },
    get sandbox() {
      return stack().sandbox;
    },
    get taskQueues() {
      return stack().taskQueues;
    },
    get provider() {
      return stack().provider;
    },
    get temporal() {
      return stack().temporal;
    },
    start: (request, extra = {}, worker = firstWorker) =>
      startOrder(stack().client, stack().taskQueues[worker], request, { timings: scaledTimings(), ...extra }),
  };
}
