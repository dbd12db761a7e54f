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
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { DataConverter } from '@temporalio/common';
import { stringify } from 'yaml';
import { hashApiKey } from '../../src/clients/keys';
import { LEGACY_CLIENT_ID, type ClientsFile } from '../../src/clients/model';
import { dataConverterFromConfig } from '../../src/codec/data-converter';
import { loadConfig } from '../../src/config';
import { startReceiver, type RunningReceiver } from '../../src/webhooks/receiver';
import { endpointSecret } from '../../src/webhooks/secrets';
import { temporalConnectionOptions } from '../../src/temporal/connection';
import { freePort, startDevServer } from '../../src/temporal/dev-server';
import { projectRoot, startNodeScript, startPart, waitForHttp, type ManagedProcess } from '../lib/processes';
import type { BenchOptions } from './args';
import { onCleanup, trackChild, wasInterrupted } from './cleanup';

export interface Stack {
  apiUrl: string;
  apiKey: string;
  /** The client `apiKey` is (`default`: a given stack is assumed to run API_KEYS). */
  clientId: string;
  /** Our own stack's clients file (the API's and the worker's). */
  clientsFile?: ClientsFile;
  /** Our own stack: the client with a webhook endpoint, and the receiver it points at. */
  webhooks?: { apiKey: string; clientId: string; receiver: RunningReceiver };
  temporalAddress: string;
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
  clients?: { file: ClientsFile; another: { id: string; apiKey: string } };
  pids: { worker?: number; api?: number; temporal?: number; sandbox?: number; baselineWorker?: number };
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

/** The spec's timings × scale, as the POLL_* / ORDER_DEADLINE_* variables the API puts in each order. */
export function scaledTimingEnv(timeScale: number): Record<string, string> {
  const defaults = loadConfig({});
  const scaled = (ms: number) => String(Math.max(1, Math.round(ms * timeScale)));
  return {
    POLL_FIRST_CHECK_MS: scaled(defaults.POLL_FIRST_CHECK_MS),
    POLL_HANDLING_CHECK_MS: scaled(defaults.POLL_HANDLING_CHECK_MS),
    POLL_MAX_INTERVAL_MS: scaled(defaults.POLL_MAX_INTERVAL_MS),
    ORDER_DEADLINE_MOBILE_MS: scaled(defaults.ORDER_DEADLINE_MOBILE_MS),
    ORDER_DEADLINE_INTERNET_MS: scaled(defaults.ORDER_DEADLINE_INTERNET_MS),
    ORDER_DEADLINE_GIFT_CARD_MS: scaled(defaults.ORDER_DEADLINE_GIFT_CARD_MS),
    REVIEW_RECHECK_INTERVAL_MS: scaled(defaults.REVIEW_RECHECK_INTERVAL_MS),
    PROVIDER_SETTLE_MS: scaled(defaults.PROVIDER_SETTLE_MS),
  };
}

/** Resolves once a worker polls the task queue; rejects after `timeoutMs`. */
async function pollersOn(
  connectionOptions: ConnectionOptions,
  namespace: string,
  taskQueue: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const connection = await Connection.connect(connectionOptions);
  try {
    while (Date.now() < deadline) {
      const { pollers } = await connection.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: taskQueue },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      });
      if (pollers && pollers.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    throw new Error(`no worker polls ${taskQueue} after ${timeoutMs / 1000} s`);
  } finally {
    await connection.close();
  }
}

/**
 * The order workflows through the project's own `npm run build:bundle` script, and the baseline
 * workflows, each into a temporary file removed at the end; both at once, as child processes.
 */
async function buildBundles(
  runId: string,
  which: { orders: boolean; baseline: boolean },
): Promise<{ orders?: string; baseline?: string }> {
  const dir = mkdtempSync(join(tmpdir(), `topup-bench-${runId}-`));
  onCleanup('bundles', async () => rmSync(dir, { recursive: true, force: true }));
  const build = (outFile: string, ...args: string[]) =>
    new Promise<string>((resolveBuild, reject) => {
      const script = 'scripts/build-workflow-bundle.ts';
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', join(projectRoot, script), outFile, ...args],
        {
          cwd: projectRoot,
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      trackChild(child);
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2_000)));
      const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
      child.once('exit', (code) => {
        clearTimeout(timer);
        if (code === 0) resolveBuild(outFile);
        else reject(new Error(`${script} failed (code ${code}): ${stderr.trim()}`));
      });
    });
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

const TAIL_LINES = 40;

/** The second client of the stack we start (Stack.clients). */
export const ANOTHER_CLIENT_ID = 'another';

interface Part {
  name: string;
  managed: ManagedProcess;
  tail: string[];
  /** Set once we stop it on purpose. */
  stopping: boolean;
}

export async function startStack(
  options: BenchOptions,
  runId: string,
  { withBaselineWorker, log }: { withBaselineWorker: boolean; log: (line: string) => void },
): Promise<Stack> {
  const parts: Part[] = [];
  const started: string[] = [];
  const pids: Stack['pids'] = { ...options.pids };

  const launch = (
    name: string,
    start: (onLine: (line: string) => void) => ManagedProcess,
    readyLine?: RegExp,
  ): { part: Part; ready: Promise<void> } => {
    let markReady: () => void = () => {};
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    const tail: string[] = [];
    const managed = start((line) => {
      tail.push(line);
      if (tail.length > TAIL_LINES) tail.shift();
      if (readyLine?.test(line)) markReady();
    });
    trackChild(managed.child);
    const part: Part = { name, managed, tail, stopping: false };
    parts.push(part);
    started.push(name);
    onCleanup(name, async () => {
      part.stopping = true;
      await managed.stop(15_000);
    });
    void managed.exited.then(({ code, signal }) => {
      if (!part.stopping && !wasInterrupted()) {
        log(`${name} exited unexpectedly (${signal ?? `code ${code}`}); its last lines:`);
        for (const line of tail) log(`  [${name}] ${line}`);
      }
    });
    return { part, ready };
  };

  const waitReady = async (part: Part, ready: Promise<void>, timeoutMs: number) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${part.name} not ready within ${timeoutMs / 1000} s`)),
        timeoutMs,
      );
    });
    const died = part.managed.exited.then(({ code, signal }) => {
      throw new Error(`${part.name} exited during start-up (${signal ?? `code ${code}`})`);
    });
    // It settles only when the part exits, which at the end of the run is no error.
    died.catch(() => {});
    try {
      await Promise.race([ready, timeout, died]);
    } finally {
      clearTimeout(timer);
    }
  };

  // -- Temporal --
  let temporalAddress = options.temporalAddress;
  if (!temporalAddress) {
    log('starting Temporal dev server (headless, in memory)…');
    const server = await startDevServer({
      uiPort: false,
      dynamicConfig: { ...serverDynamicConfig(options.timeScale), ...options.serverConfig },
    });
    onCleanup('temporal', () => server.stop());
    if (server.process.pid) trackChild(server.process);
    temporalAddress = server.address;
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
    bundles = await buildBundles(runId, {
      orders: !options.apiUrl && !options.partEnv.WORKER_WORKFLOW_BUNDLE_PATH,
      baseline: withBaselineWorker,
    });
  }

  // -- baselines' worker (same WORKER_* tuning as ours) --
  const baselineTaskQueue = `bench-baseline-${runId}`;
  let baselineReady: Promise<void> = Promise.resolve();
  if (withBaselineWorker) {
    const { part, ready } = launch(
      'baseline-worker',
      (onLine) =>
        startNodeScript('baseline-worker', 'scripts/bench/baseline-worker.ts', {
          env: {
            ...common,
            ...options.partEnv,
            BENCH_TASK_QUEUE: baselineTaskQueue,
            BENCH_BUNDLE_PATH: bundles.baseline ?? '',
          },
          onLine,
        }),
      /bench baseline worker ready/,
    );
    pids.baselineWorker = part.managed.child.pid;
    baselineReady = waitReady(part, ready, 240_000);
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
  // A given stack's keys come from our environment, like its parts'.
  let encryptionKeys = options.apiUrl ? process.env.PAYLOAD_ENCRYPTION_KEYS : undefined;
  if (!apiUrl) {
    const sandboxPort = await freePort();
    const adminToken = randomBytes(12).toString('hex');
    const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
    const defaults = loadConfig({});
    const sandboxPart = launch('sandbox', (onLine) =>
      startPart('sandbox', {
        env: {
          ...common,
          SANDBOX_PORT: String(sandboxPort),
          SANDBOX_HOST: '127.0.0.1',
          SANDBOX_TIME_SCALE: String(options.timeScale),
          SANDBOX_ADMIN_TOKEN: adminToken,
        },
        onLine,
      }),
    );
    pids.sandbox = sandboxPart.part.managed.child.pid;
    await waitForHttp(`${sandboxUrl}/v3/validate`, { timeoutMs: 60_000 });
    sandbox = { url: sandboxUrl, adminToken };

    taskQueue = `bench-orders-${runId}`;
    apiKey = `bench-${randomBytes(12).toString('hex')}`;
    const apiPort = await freePort();

    const signingKey = randomBytes(32);
    const hooks = { apiKey: `bench-hooks-${randomBytes(12).toString('hex')}`, clientId: 'hooks' };
    const receiver = await startReceiver({
      secrets: [endpointSecret(signingKey, hooks.clientId, 'bench', 1)],
    });
    onCleanup('webhook receiver', () => receiver.close());
    webhooks = { ...hooks, receiver };
    const another = { id: ANOTHER_CLIENT_ID, apiKey: `bench-${randomBytes(12).toString('hex')}` };
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
          id: another.id,
          name: 'Bench: another client (its workflow IDs name it)',
          scopes: ['orders:write', 'orders:read'],
          keys: [{ id: 'k1', hash: hashApiKey(another.apiKey) }],
        },
      ],
    };
    clients = { file: clientsFile, another };
    const clientsDir = mkdtempSync(join(tmpdir(), `topup-bench-clients-${runId}-`));
    onCleanup('clients file', async () => rmSync(clientsDir, { recursive: true, force: true }));
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
    const worker = launch('worker', (onLine) => startPart('worker', { env: appEnv, onLine }));
    pids.worker = worker.part.managed.child.pid;
    const api = launch('api', (onLine) =>
      startPart('api', { env: { ...appEnv, PORT: String(apiPort) }, onLine }),
    );
    pids.api = api.part.managed.child.pid;
    apiUrl = `http://127.0.0.1:${apiPort}`;
    // Ready when its pollers show on the task queue: whatever the log level says.
    const polling = pollersOn(connectionOptions, namespace, taskQueue, 240_000);
    polling.catch(() => {}); // the race below reports a failure; this must not go unhandled
    await waitReady(worker.part, polling, 240_000);
    await waitForHttp(`${apiUrl}/readyz`, { timeoutMs: 120_000, ok: (status) => status === 200 });
  } else if (options.sandboxUrl && options.sandboxAdminToken) {
    sandbox = { url: options.sandboxUrl, adminToken: options.sandboxAdminToken };
  }
  await baselineReady;

  const workerParts = parts.filter((p) => p.name === 'worker' || p.name === 'baseline-worker');
  const freezeWorkers = (frozen: boolean) => {
    for (const part of workerParts) {
      const { child } = part.managed;
      if (child.exitCode === null && child.signalCode === null) child.kill(frozen ? 'SIGSTOP' : 'SIGCONT');
    }
  };
  // A stopped process would not act on SIGTERM: continue them before anything is stopped.
  onCleanup('continue workers', async () => freezeWorkers(false));

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
    namespace,
    taskQueue,
    baselineTaskQueue,
    sandbox,
    clients,
    pids,
    partEnv,
    started,
    assertAlive() {
      for (const part of parts) {
        const { exitCode, signalCode } = part.managed.child;
        if (!part.stopping && (exitCode !== null || signalCode !== null)) {
          throw new Error(`${part.name} died during the run (${signalCode ?? `code ${exitCode}`})`);
        }
      }
    },
  };
}
