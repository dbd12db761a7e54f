/**
 * The stack the bench measures: its own (Temporal dev server headless, sandbox, worker, API, each
 * on a free loopback port, wired through the environment as scripts/dev-stack.ts does) or the
 * parts of a running one named by flags. Plus the baselines' worker, always ours.
 *
 * Our own stack has two API clients: `default` (the default client, as the API_KEYS client was, so
 * workflow IDs and provider refs are as before) without webhooks, and `hooks`, whose one endpoint
 * is a receiver in the bench's own process: the webhook phase submits as `hooks`; and `another`,
 * whose workflow IDs name it, for the read phase.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConnectionOptions } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { stringify } from 'yaml';
import { hashApiKey } from '../../src/clients/keys';
import { LEGACY_CLIENT_ID, type ClientsFile } from '../../src/clients/model';
import { dataConverterFromConfig } from '../../src/codec/data-converter';
import { loadConfig } from '../../src/config';
import { startReceiver, type RunningReceiver } from '../../src/webhooks/receiver';
import { endpointSecret } from '../../src/webhooks/secrets';
import { temporalConnectionOptions } from '../../src/temporal/connection';
import { freePort } from '../../src/temporal/dev-server';
import { projectRoot, startNodeScript } from '../lib/processes';
import { scaledTimingEnv, type Launcher } from '../lib/stack';
import type { BenchOptions } from './args';

/** The fairness phase's slow endpoint: issue 22's "10 s per delivery". */
export const SLOW_ENDPOINT_MS = 10_000;

export interface Stack {
  apiUrl: string;
  apiKey: string;
  /** The client `apiKey` is (`default`: a given stack is assumed to run API_KEYS). */
  clientId: string;
  /** Our own stack's clients file (the API's and the worker's). */
  clientsFile?: ClientsFile;
  /** Our own stack: the client with a webhook endpoint, and the receiver it points at. */
  webhooks?: {
    apiKey: string;
    clientId: string;
    receiver: RunningReceiver;
    /** Another client whose one endpoint takes SLOW_ENDPOINT_MS to answer each delivery (the fairness phase). */
    slow: { apiKey: string; clientId: string; receiver: RunningReceiver };
  };
  temporalAddress: string;
  /** Our own dev server's Prometheus metrics (per-operation requests, rate-limit rejections). */
  temporalMetricsUrl?: string;
  namespace: string;
  /** For the bench's own client: TLS / API key from TEMPORAL_* when the server was given. */
  connectionOptions: ConnectionOptions;
  /** The parts' payload converter (encryption with --encrypt, or PAYLOAD_ENCRYPTION_KEYS of a given stack). */
  dataConverter: DataConverter;
  /** The order workflows' task queue, when we started the worker. */
  taskQueue?: string;
  baselineTaskQueue: string;
  sandbox?: { url: string; adminToken: string };
  /**
   * The API's clients when we started it: the bench's key is the default client's (`default`, its
   * orders keep `order-<ref>`), `another` is a second client (its workflow IDs name it).
   */
  clients?: {
    file: ClientsFile;
    another: { id: string; apiKey: string };
    /** Two operators (role operator: the review queue of every client), for the readers part. */
    operators: { id: string; apiKey: string }[];
  };
  pids: { worker?: number; api?: number; temporal?: number; sandbox?: number; baselineWorker?: number };
  /**
   * A second API on the same stack with `baselineApiEnv` on top of the first's environment (the
   * provider-pace part: the same worker, orders started with the polling timings of before).
   */
  baselineApiUrl?: string;
  /** The environment given to the worker and API we started (no secrets), for the report. */
  partEnv: Record<string, string>;
  /** Which parts this run started (the others were given). */
  started: string[];
  /** Throws if a part we started has died. */
  assertAlive(): void;
  /**
   * SIGSTOP / SIGCONT the workers we started (ours and the baselines'), so a phase can measure
   * intake alone, without the processing its starts trigger competing for the same cores.
   */
  freezeWorkers(frozen: boolean): void;
}

/**
 * The order workflows through the project's own `npm run build:bundle` script, and the baseline
 * workflows, each into a temporary file removed at the end; both at once, as child processes.
 */
async function buildBundles(
  launcher: Launcher,
  runId: string,
  which: { orders: boolean; baseline: boolean },
): Promise<{ orders?: string; baseline?: string }> {
  const dir = mkdtempSync(join(tmpdir(), `topup-bench-${runId}-`));
  launcher.onStop('bundles', async () => rmSync(dir, { recursive: true, force: true }));
  const build = async (outFile: string, ...args: string[]) => {
    const tail: string[] = [];
    const script = 'scripts/build-workflow-bundle.ts';
    const child = startNodeScript('bundle', script, {
      env: process.env,
      args: [outFile, ...args],
      onLine: (line, stream) => stream === 'stderr' && tail.push(line),
    });
    const timer = setTimeout(() => child.signal('SIGKILL'), 300_000);
    const { code } = await child.exited;
    clearTimeout(timer);
    if (code !== 0) throw new Error(`${script} failed (code ${code}): ${tail.slice(-20).join('\n')}`);
    return outFile;
  };
  const [orders, baseline] = await Promise.all([
    which.orders ? build(join(dir, 'orders.js')) : undefined,
    which.baseline
      ? build(
          join(dir, 'baseline.js'),
          '--workflows',
          join(projectRoot, 'scripts/bench/baseline-workflows.ts'),
        )
      : undefined,
  ]);
  return { orders, baseline };
}

/**
 * The timer queue fires a timer no earlier than about now + history.timerProcessorMaxTimeShift
 * (1 s by default): a 250 ms timer fires after ~1 s. Scaled down with everything else, so a run at
 * 0.05 keeps the spec's proportions (a 5 s timer is ≤ 1 s late in production, 250 ms ≤ 50 ms here).
 */
export function serverDynamicConfig(timeScale: number): Record<string, string> {
  if (timeScale >= 1) return {};
  return { 'history.timerProcessorMaxTimeShift': `${Math.max(1, Math.round(1_000 * timeScale))}ms` };
}

/** The second client of the stack we start (Stack.clients). */
export const ANOTHER_CLIENT_ID = 'another';

export async function startStack(
  launcher: Launcher,
  options: BenchOptions,
  runId: string,
  {
    withBaselineWorker,
    log,
    baselineApiEnv,
  }: { withBaselineWorker: boolean; log: (line: string) => void; baselineApiEnv?: Record<string, string> },
): Promise<Stack> {
  const started: string[] = [];
  const pids: Stack['pids'] = { ...options.pids };

  // -- Temporal --
  let temporalAddress = options.temporalAddress;
  let temporalMetricsUrl: string | undefined;
  if (!temporalAddress) {
    log('starting Temporal dev server (headless, in memory)…');
    const server = await launcher.startTemporal({
      uiPort: false,
      dynamicConfig: { ...serverDynamicConfig(options.timeScale), ...options.serverConfig },
    });
    temporalAddress = server.address;
    temporalMetricsUrl = server.metricsUrl;
    pids.temporal = server.process.pid;
    started.push('temporal');
  }
  const namespace = options.namespace;
  const common: NodeJS.ProcessEnv = {
    ...process.env,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_NAMESPACE: namespace,
    LOG_LEVEL: options.logLevel,
    // Our own dev server speaks plain gRPC, whatever the shell says about a hosted cluster.
    ...(options.temporalAddress
      ? {}
      : { TEMPORAL_TLS: '', TEMPORAL_API_KEY: '', TEMPORAL_TLS_CERT_PATH: '', TEMPORAL_TLS_KEY_PATH: '' }),
  };
  const timingEnv = scaledTimingEnv(options.timeScale);
  const connectionOptions = temporalConnectionOptions(loadConfig(common));

  // -- workflow bundles: workers run pre-built ones, as in production (Dockerfile: npm run build:bundle) --
  let bundles: { orders?: string; baseline?: string } = {};
  if (!options.bundleAtStart) {
    log('bundling the workflows…');
    bundles = await buildBundles(launcher, runId, {
      orders: !options.apiUrl && !options.partEnv.WORKER_WORKFLOW_BUNDLE_PATH,
      baseline: withBaselineWorker,
    });
  }

  // -- baselines' worker (same WORKER_* tuning as ours) --
  const baselineTaskQueue = `bench-baseline-${runId}`;
  let baselineReady: Promise<void> = Promise.resolve();
  if (withBaselineWorker) {
    let markReady!: () => void;
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    const part = launcher.start('worker', {
      name: 'baseline-worker',
      script: 'scripts/bench/baseline-worker.ts',
      env: {
        ...common,
        ...options.partEnv,
        BENCH_TASK_QUEUE: baselineTaskQueue,
        BENCH_BUNDLE_PATH: bundles.baseline ?? '',
      },
      watch: (line) => /bench baseline worker ready/.test(line) && markReady(),
    });
    started.push(part.name);
    pids.baselineWorker = part.process.child.pid;
    baselineReady = launcher.ready(part, ready, 240_000);
    // Awaited after the other parts have started; until then a failure must not go unhandled.
    baselineReady.catch(() => {});
  }

  // -- sandbox, worker, API --
  let apiUrl = options.apiUrl;
  let apiKey = options.apiKey;
  let taskQueue: string | undefined;
  let sandbox: Stack['sandbox'];
  let clients: Stack['clients'];
  let partEnv: Record<string, string> = {};
  let clientsFile: ClientsFile | undefined;
  let webhooks: Stack['webhooks'];
  let baselineApiUrl: string | undefined;
  // A given stack's keys come from our environment, like its parts'.
  let encryptionKeys = options.apiUrl ? process.env.PAYLOAD_ENCRYPTION_KEYS : undefined;
  if (!apiUrl) {
    const adminToken = randomBytes(12).toString('hex');
    const defaults = loadConfig({});
    const sandboxPart = await launcher.startServer('sandbox', {
      env: {
        ...common,
        SANDBOX_HOST: '127.0.0.1',
        SANDBOX_TIME_SCALE: String(options.timeScale),
        SANDBOX_ADMIN_TOKEN: adminToken,
      },
      timeoutMs: 60_000,
    });
    started.push('sandbox');
    pids.sandbox = sandboxPart.process.child.pid;
    const sandboxUrl = sandboxPart.url;
    sandbox = { url: sandboxUrl, adminToken };

    taskQueue = `bench-orders-${runId}`;
    apiKey = `bench-${randomBytes(12).toString('hex')}`;
    const apiPort = await freePort();

    const signingKey = randomBytes(32);
    const hooks = { apiKey: `bench-hooks-${randomBytes(12).toString('hex')}`, clientId: 'hooks' };
    const receiver = await startReceiver({
      secrets: [endpointSecret(signingKey, hooks.clientId, 'bench', 1)],
    });
    launcher.onStop('webhook receiver', () => receiver.close());
    const slowHooks = { apiKey: `bench-slowhooks-${randomBytes(12).toString('hex')}`, clientId: 'slowhooks' };
    const slowReceiver = await startReceiver({
      secrets: [endpointSecret(signingKey, slowHooks.clientId, 'bench', 1)],
      answer: () => ({ status: 204, delayMs: SLOW_ENDPOINT_MS }),
    });
    launcher.onStop('slow webhook receiver', () => slowReceiver.close());
    webhooks = { ...hooks, receiver, slow: { ...slowHooks, receiver: slowReceiver } };
    const another = { id: ANOTHER_CLIENT_ID, apiKey: `bench-${randomBytes(12).toString('hex')}` };
    const operators = ['ops1', 'ops2'].map((id) => ({
      id,
      apiKey: `bench-${randomBytes(12).toString('hex')}`,
    }));
    clientsFile = {
      defaultClient: LEGACY_CLIENT_ID,
      clients: [
        {
          id: LEGACY_CLIENT_ID,
          name: 'Bench',
          scopes: ['orders:write', 'orders:read'],
          keys: [{ id: 'k1', hash: hashApiKey(apiKey) }],
        },
        {
          id: hooks.clientId,
          name: 'Bench, with a webhook endpoint',
          scopes: ['orders:write', 'orders:read'],
          keys: [{ id: 'k1', hash: hashApiKey(hooks.apiKey) }],
          webhooks: [{ id: 'bench', url: `${receiver.url}/webhooks` }],
        },
        {
          id: slowHooks.clientId,
          name: 'Bench, with a webhook endpoint that takes 10 s per delivery',
          scopes: ['orders:write', 'orders:read'],
          keys: [{ id: 'k1', hash: hashApiKey(slowHooks.apiKey) }],
          webhooks: [{ id: 'bench', url: `${slowReceiver.url}/webhooks` }],
        },
        {
          id: another.id,
          name: 'Bench: another client (its workflow IDs name it)',
          scopes: ['orders:write', 'orders:read'],
          keys: [{ id: 'k1', hash: hashApiKey(another.apiKey) }],
        },
        ...operators.map((operator) => ({
          id: operator.id,
          name: `Bench: operator ${operator.id} (the review queue)`,
          role: 'operator' as const,
          scopes: ['orders:read' as const, 'reviews:write' as const],
          keys: [{ id: 'k1', hash: hashApiKey(operator.apiKey) }],
        })),
      ],
    };
    clients = { file: clientsFile, another, operators };
    const clientsDir = mkdtempSync(join(tmpdir(), `topup-bench-clients-${runId}-`));
    launcher.onStop('clients file', async () => rmSync(clientsDir, { recursive: true, force: true }));
    const clientsPath = join(clientsDir, 'clients.yaml');
    writeFileSync(clientsPath, stringify(clientsFile));

    partEnv = {
      TEMPORAL_TASK_QUEUE: taskQueue,
      PROVIDER_BASE_URL: sandboxUrl,
      ...timingEnv,
      API_CLIENTS_FILE: clientsPath,
      WEBHOOK_TASK_QUEUE: `bench-webhooks-${runId}`,
      // The receiver is in the bench, on loopback; a delivery workflow closes 2 s after its order's last event.
      WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
      WEBHOOK_IDLE_CLOSE_MS: '2000',
      // A batch of --batch-size orders in one request: its body may be larger than the default's.
      API_BATCH_MAX_ORDERS: String(Math.max(options.batchSize, 500)),
      API_BATCH_BODY_LIMIT: '10mb',
      // The bench is one client sending as fast as it can: the per-client limit would only measure itself.
      API_RATE_LIMIT_PER_MINUTE: String(1_000_000_000),
      API_ORDERS_PER_MINUTE: String(1_000_000_000),
      API_CONCURRENT_REQUESTS: '1000',
      ...(bundles.orders ? { WORKER_WORKFLOW_BUNDLE_PATH: bundles.orders } : {}),
      ...options.partEnv,
    };
    const secrets: NodeJS.ProcessEnv = {
      PROVIDER_API_KEY: defaults.SANDBOX_KEY,
      WEBHOOK_SIGNING_KEY: signingKey.toString('base64'),
      // The clients file, as in production, is the only source of clients.
      API_KEYS: '',
      ...(options.encrypt ? { PAYLOAD_ENCRYPTION_KEYS: `bench:${randomBytes(32).toString('base64')}` } : {}),
    };
    const appEnv = { ...common, ...partEnv, ...secrets };
    // Whatever key the parts got (the shell's, --env's or --encrypt's), the bench's client reads with it.
    encryptionKeys = appEnv.PAYLOAD_ENCRYPTION_KEYS;
    taskQueue = partEnv.TEMPORAL_TASK_QUEUE!; // --env may have named another

    log('starting worker and API…');
    // Ready when its pollers show on the task queue: whatever the log level says.
    const worker = launcher.startWorker({ env: appEnv, timeoutMs: 240_000 });
    worker.catch(() => {}); // awaited below, after the API: a failure meanwhile must not go unhandled
    const api = await launcher.startServer('api', { port: apiPort, env: appEnv });
    started.push('worker', 'api');
    pids.worker = (await worker).process.child.pid;
    pids.api = api.process.child.pid;
    apiUrl = api.url;
    if (baselineApiEnv) {
      const baselineApi = await launcher.startServer('api', {
        name: 'api-baseline',
        port: await freePort(),
        env: { ...appEnv, ...baselineApiEnv },
      });
      started.push('api-baseline');
      baselineApiUrl = baselineApi.url;
    }
  } else if (options.sandboxUrl && options.sandboxAdminToken) {
    sandbox = { url: options.sandboxUrl, adminToken: options.sandboxAdminToken };
  }
  await baselineReady;

  const freezeWorkers = (frozen: boolean) => {
    for (const part of launcher.parts)
      if (part.kind === 'worker') part.process.signal(frozen ? 'SIGSTOP' : 'SIGCONT');
  };

  return {
    apiUrl,
    apiKey: apiKey!,
    clientId: LEGACY_CLIENT_ID,
    clientsFile,
    webhooks,
    connectionOptions,
    dataConverter: dataConverterFromConfig({ PAYLOAD_ENCRYPTION_KEYS: encryptionKeys || undefined }),
    freezeWorkers,
    temporalAddress,
    ...(temporalMetricsUrl && { temporalMetricsUrl }),
    namespace,
    taskQueue,
    baselineTaskQueue,
    sandbox,
    clients,
    pids,
    ...(baselineApiUrl && { baselineApiUrl }),
    partEnv,
    started,
    assertAlive() {
      for (const part of launcher.parts) {
        const { exitCode, signalCode } = part.process.child;
        if (!part.stopping && part.process.hasExited()) {
          throw new Error(`${part.name} died during the run (${signalCode ?? `code ${exitCode}`})`);
        }
      }
    },
  };
}
