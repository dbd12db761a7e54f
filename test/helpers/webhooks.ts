/**
 * A whole stack for webhook tests: a real Temporal server, the sandbox over HTTP, the order worker
 * (with the announcing local activity) and the webhook worker (the delivery workflows, the real
 * sender over HTTP) each on a task queue of their own, and the intake API — all sharing one client
 * registry, as the API and the worker share one clients file. Receivers are real HTTP servers
 * (src/webhooks/receiver.ts) that verify with the standardwebhooks library.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { createActivities } from '../../src/worker/activities';
import { createDeliveryActivities, type DirectDelivery } from '../../src/webhooks/webhook.activities';
import { accountReport } from '../../src/provider-account/account.service';
import { registerAccountGauges } from '../../src/api/metrics';
import { PrometheusMetrics } from '../../src/observability/prometheus';
import { orderDeliveryRecords } from '../../src/webhooks/webhook-records.service';
import { apiTestConfig, startTestApi, testClientsFile, type TestApi } from './api';
import type { ClientsFile, WebhookEndpoint } from '../../src/clients/model';
import { ClientRegistry } from '../../src/clients/registry';
import { hashApiKey } from '../../src/clients/keys';
import type { OrderType } from '../../contract/schemas';
import { AddressPolicy, type LookupAll } from '../../src/webhooks/address-guard';
import type { OrderView } from '../../src/orders/order.service';
import type { RunningReceiver } from '../../src/webhooks/receiver';
import { endpointSecret } from '../../src/webhooks/secrets';
import { WebhookSender } from '../../src/webhooks/sender';
import { createOrderWorker, createWebhookWorker } from '../../src/worker/worker';
import { type WebhookDeliveryPolicy, type WebhookDeliveryState } from '../../contract/webhooks';
import {
  installTestRuntime,
  scaledTimings,
  startTestSandbox,
  testProvider,
  type TestSandbox,
} from './orders';
import { useTemporal, workflowCodeOptions, type TestTemporal } from './temporal';
import { makeTestVersionCurrent, versionedTestCode } from './versioning';

/**
 * Scaled down so a test sees several retries in seconds: 1 s per attempt, back-off 200 ms doubling
 * to 1 s, given up after 8 s, closed 1.5 s after the last event once the order is final.
 */
export const TEST_WEBHOOK_POLICY: WebhookDeliveryPolicy = {
  attemptTimeoutMs: 1_000 + 2_000,
  retryInitialMs: 200,
  retryMaxIntervalMs: 1_000,
  retryForMs: 8_000,
  idleCloseMs: 1_500,
};
export const TEST_WEBHOOK_TIMEOUT_MS = 1_000;

export interface HookedClient {
  key: string;
  scopes?: ClientsFile['clients'][number]['scopes'];
  webhooks?: WebhookEndpoint[];
}

export interface WebhookStack {
  temporal: TestTemporal;
  /** The order worker's task queue. */
  taskQueue: string;
  /** The delivery workflows' task queue (WEBHOOK_TASK_QUEUE). */
  webhookTaskQueue: string;
  sandbox: TestSandbox;
  client: Client;
  api: TestApi;
  registry: ClientRegistry;
  signingKey: Buffer;
  /** The current secret of a client's endpoint. */
  secretOf(client: string, endpoint: string, version?: number): string;
  /** The order's delivery state as the routes read it (undefined while it has none). */
  deliveryState(orderWorkflowId: string): Promise<WebhookDeliveryState | undefined>;
  stop(): Promise<void>;
}

/** The test clients (test/helpers/api.ts) plus `extra` clients, some with webhook endpoints. */
export function clientsWith(extra: Record<string, HookedClient>): ClientsFile {
  return {
    ...testClientsFile,
    clients: [
      ...testClientsFile.clients,
      ...Object.entries(extra).map(([id, c]) => ({
        id,
        name: `Test client ${id}`,
        scopes: c.scopes ?? [
          'orders:write',
          'orders:read',
          'reviews:write',
          'webhooks:read',
          'webhooks:write',
        ],
        keys: [{ id: 'k1', hash: hashApiKey(c.key) }],
        ...(c.webhooks ? { webhooks: c.webhooks } : {}),
      })),
    ],
  };
}

export async function startWebhookStack(options: {
  clients: ClientsFile;
  /** Networks the sender may reach although not public (default: 127.0.0.1 only). */
  allowedNetworks?: string[];
  lookup?: LookupAll;
  /** WEBHOOK_SIGNING_KEY (default: a random one), so receivers can be given their secrets first. */
  signingKey?: Buffer;
  policy?: Partial<WebhookDeliveryPolicy>;
  /** The announcements' direct tries (src/webhooks/webhook.activities.ts DirectDelivery): limits for a test. */
  direct?: Omit<DirectDelivery, 'deliver'>;
  /** The delivery worker's sender timeout, WEBHOOK_TIMEOUT_MS (default TEST_WEBHOOK_TIMEOUT_MS). */
  senderTimeoutMs?: number;
  /** The delivery worker's WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT (default: unbounded). */
  maxInFlightPerEndpoint?: number;
  sandboxTimeScale?: number;
  timingsFor?: (type: OrderType) => ReturnType<typeof scaledTimings>;
  /** The worker watches the provider account (held orders, the send gate), reading it this often. */
  account?: { checkMs: number };
}): Promise<WebhookStack> {
  installTestRuntime();
  const [temporal, sandbox] = await Promise.all([useTemporal(), startTestSandbox(options.sandboxTimeScale)]);
  const provider = testProvider(sandbox.url);
  const registry = new ClientRegistry(options.clients);
  const signingKey = options.signingKey ?? randomBytes(32);
  const policy = { ...TEST_WEBHOOK_POLICY, ...options.policy };
  const taskQueue = `webhooks-orders-${randomUUID()}`;
  const webhookTaskQueue = `webhooks-deliveries-${randomUUID()}`;
  const nativeConnection = await NativeConnection.connect({ address: temporal.address });
  const { workflowCode, deployment } = await versionedTestCode('webhooks', workflowCodeOptions());
  const sender = new WebhookSender({
    timeoutMs: options.senderTimeoutMs ?? TEST_WEBHOOK_TIMEOUT_MS,
    policy: new AddressPolicy(options.allowedNetworks ?? ['127.0.0.1/32']),
    lookup: options.lookup,
  });
  const directSender = new WebhookSender({
    timeoutMs: TEST_WEBHOOK_TIMEOUT_MS,
    policy: new AddressPolicy(options.allowedNetworks ?? ['127.0.0.1/32']),
    lookup: options.lookup,
  });
  const workerClient = new Client({ connection: nativeConnection, namespace: temporal.namespace });
  const workers: Worker[] = [
    await createOrderWorker({
      connection: nativeConnection,
      namespace: temporal.namespace,
      taskQueue,
      activities: createActivities({
        provider: provider.client,
        ...(options.account && {
          temporal: workerClient,
          account: {
            provider: provider.client,
            checkMs: options.account.checkMs,
            pingMaxAgeMs: options.account.checkMs,
          },
        }),
        webhooks: {
          temporal: workerClient,
          taskQueue: webhookTaskQueue,
          endpoints: registry,
          policy,
          direct: {
            deliver: createDeliveryActivities({ endpoints: registry, signingKey, sender: directSender })
              .deliverWebhook,
            ...options.direct,
          },
        },
      }),
      workflowCode,
      deployment,
    }),
    await createWebhookWorker({
      connection: nativeConnection,
      namespace: temporal.namespace,
      taskQueue: webhookTaskQueue,
      activities: createDeliveryActivities({
        endpoints: registry,
        signingKey,
        sender,
        ...(options.maxInFlightPerEndpoint !== undefined
          ? { maxInFlightPerEndpoint: options.maxInFlightPerEndpoint }
          : {}),
      }),
      workflowCode,
      maxConcurrentDeliveries: 20,
      deployment,
    }),
  ];
  const running = workers.map((w) => w.run());
  const connection = await Connection.connect({ address: temporal.address });
  await makeTestVersionCurrent(connection, temporal.namespace, deployment, [taskQueue, webhookTaskQueue]);
  const client = new Client({ connection, namespace: temporal.namespace });
  const api = await startTestApi({
    client,
    taskQueue,
    provider: provider.client,
    clients: registry,
    timingsFor: options.timingsFor ?? (() => scaledTimings()),
    config: apiTestConfig({
      WEBHOOK_TASK_QUEUE: webhookTaskQueue,
      API_RATE_LIMIT_PER_MINUTE: '100000',
      API_ACCOUNT_REPORT_TTL_MS: '200',
    }),
  });
  return {
    temporal,
    taskQueue,
    webhookTaskQueue,
    sandbox,
    client,
    api,
    registry,
    signingKey,
    secretOf: (clientId, endpoint, version = 1) => endpointSecret(signingKey, clientId, endpoint, version),
    // What the routes read: the order's own record of its direct deliveries with its delivery workflow's.
    async deliveryState(orderWorkflowId) {
      return (await orderDeliveryRecords(client, orderWorkflowId)).merged;
    },
    async stop() {
      await api.close();
      for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
      await Promise.all(running);
      await Promise.all([connection.close(), nativeConnection.close(), provider.close(), sandbox.close()]);
      await Promise.all([sender.close(), directSender.close()]);
      await temporal.stop();
    },
  };
}

/** Polls `read` until `done` holds for its value, or fails after `timeoutMs` naming what it last saw. */
export async function eventually<T>(
  read: () => Promise<T> | T,
  done: (value: T) => boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await read();
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms; last: ${JSON.stringify(last)?.slice(0, 2_000)}`);
}

/**
 * How a test reads one client's orders through the stack's API and the events its receiver got.
 * Getters, since the stack and the receiver start in the test file's `before`.
 */
export function clientOrders(stack: () => WebhookStack, apiKey: string, receiver: () => RunningReceiver) {
  const call = <T>(method: string, path: string, body?: unknown) =>
    stack().api.request<T>(method, path, { body, apiKey });
  const viewOf = async (ref: string) => (await call<OrderView>('GET', `/v1/orders/${ref}`)).body;
  const until = (ref: string, done: (v: OrderView) => boolean, what: string, timeoutMs = 60_000) =>
    eventually(() => viewOf(ref), done, `${ref}: ${what}`, timeoutMs);
  const eventsOf = (ref: string) =>
    receiver()
      .deliveries.filter((d) => d.message?.data.ref === ref)
      .map((d) => d.message!.type);
  return { call, viewOf, until, eventsOf };
}

/** The API's account gauges (src/api/metrics.ts) as a scrape would read them now: no cached report. */
export async function scrapeAccountGauges(
  stack: WebhookStack,
  provider: Parameters<typeof accountReport>[0]['provider'],
): Promise<string> {
  const metrics = new PrometheusMetrics({ processMetrics: false });
  registerAccountGauges(
    metrics,
    accountReport({ client: stack.client, taskQueue: stack.taskQueue, provider, timeoutMs: 1_500, ttlMs: 0 }),
  );
  return (await metrics.exposition()).body;
}

/**
 * The status events an order's timeline says it should have produced, in order: one per change of
 * status (a check that finds the provider a phase further than expected skips a status).
 */
export function statusEvents(view: Pick<OrderView, 'timeline'>): string[] {
  const events: string[] = [];
  let previous = 'ACCEPTED';
  for (const { status } of view.timeline) {
    if (status !== previous) events.push(`order.${status.toLowerCase()}`);
    previous = status;
  }
  return events;
}
