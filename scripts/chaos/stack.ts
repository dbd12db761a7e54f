/**
 * The chaos run's own stack, every part on free loopback ports and started exactly as
 * `npm run <part>` starts it: a Temporal dev server whose SQLite file lives in the run directory
 * (so it can be stopped and started again on the same port and database), the sandbox with its
 * admin surface and a state file (so it can be killed and started again without losing what it
 * committed), N workers and the intake API. Part output goes to log files in the run directory,
 * not to the terminal.
 */
import type { Secret } from './log-secrets';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, writeFileSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { failureConverterPath } from '../../src/codec/data-converter';
import { knownEnvironmentVariables } from '../../src/config';
import { defaultWorkflowsPath } from '../../src/worker/worker';
import { freePort, startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { startPart, waitForHttp, type ManagedProcess, type PartName } from '../lib/processes';

export const CHAOS_API_KEY = 'chaos-api-key';
export const CHAOS_ADMIN_TOKEN = 'chaos-admin-token';
const SANDBOX_KEY = 'sandbox-key';
const TASK_QUEUE = 'chaos-orders';
const WORKER_START_TIMEOUT_MS = 60_000;

/**
 * Provider timeouts short enough that a hang costs seconds, not tens of seconds, and an activity
 * timeout above one whole call (1.5 s + 1.5 s) that still notices a killed worker within seconds.
 */
const PROVIDER_TIMEOUTS = {
  PROVIDER_CONNECT_TIMEOUT_MS: '500',
  PROVIDER_HEADERS_TIMEOUT_MS: '1500',
  PROVIDER_BODY_TIMEOUT_MS: '1500',
  ORDER_ACTIVITY_TIMEOUT_MS: '5000',
};

/**
 * The settle window at a time scale: the spec-scale default (60 s) scaled, but never below 6 s,
 * which the late-commit phase's commit delays plus read lags stay under (see faults.ts).
 */
export function scaledSettleMs(timeScale: number): number {
  return Math.max(6_000, Math.round(60_000 * timeScale));
}

/**
 * The order timings (README "Configuration") scaled like the sandbox's clock, so polling follows
 * the sandbox's PENDING/HANDLING phases and deadlines keep their proportion to them.
 */
export function scaledTimingEnv(timeScale: number): Record<string, string> {
  const ms = (value: number, floor = 1) => String(Math.max(floor, Math.round(value * timeScale)));
  return {
    POLL_FIRST_CHECK_MS: ms(5_000),
    POLL_HANDLING_CHECK_MS: ms(15_000),
    // Retries back off to this cap; below a second they would hammer a sandbox that is down.
    POLL_MAX_INTERVAL_MS: ms(60_000, 1_000),
    ORDER_DEADLINE_MOBILE_MS: ms(30 * 60_000, 30_000),
    ORDER_DEADLINE_INTERNET_MS: ms(30 * 60_000, 30_000),
    ORDER_DEADLINE_GIFT_CARD_MS: ms(60 * 60_000, 30_000),
    REVIEW_RECHECK_INTERVAL_MS: ms(30 * 60_000, 10_000),
    PROVIDER_SETTLE_MS: String(scaledSettleMs(timeScale)),
  };
}

const quietBundlerLogger = {
  log: () => {},
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: (message: string) => process.stderr.write(`[bundle] ${message}\n`),
};

/**
 * The test runner's pre-built bundle, or a fresh one in `dir`: workers then start in seconds, not
 * tens. Built like `npm run build:bundle`, with the failure converter that encrypts failure messages.
 */
export async function buildWorkflowBundle(dir: string): Promise<string> {
  const prebuilt = process.env.TEST_WORKFLOW_BUNDLE_PATH;
  if (prebuilt) return prebuilt;
  const { code } = await bundleWorkflowCode({
    workflowsPath: defaultWorkflowsPath,
    failureConverterPath,
    logger: quietBundlerLogger,
  });
  const path = join(dir, 'workflow-bundle.js');
  writeFileSync(path, code);
  return path;
}

/** The caller's environment without any variable the parts read, so a developer's settings cannot leak in. */
function neutralEnvironment(): NodeJS.ProcessEnv {
  const known = new Set(knownEnvironmentVariables);
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !known.has(name)));
}

export interface ChaosStackOptions {
  /** The run directory: Temporal's database and the part logs. */
  dir: string;
  timeScale: number;
  /** A pre-built workflow bundle (buildWorkflowBundle), so a new worker starts in seconds. */
  workflowBundlePath: string;
  /** Set PAYLOAD_ENCRYPTION_KEYS for the API and workers. */
  encrypt: boolean;
  log: (line: string) => void;
}

export class ChaosStack {
  temporal?: DevServer;
  sandboxUrl = '';
  apiUrl = '';
  readonly workers = new Set<ManagedProcess>();
  /** Workers that exited without being killed or stopped by us. */
  unexpectedWorkerExits = 0;
  workerStarts = 0;
  /** Set when the sandbox or the API died on its own: the run cannot go on. */
  fatal?: Error;

  readonly #options: ChaosStackOptions;
  readonly #logDir: string;
  /** The keys the parts were given: none may appear in their logs. */
  secrets: Secret[] = [];

  get logDir(): string {
    return this.#logDir;
  }
  readonly #dbFile: string;
  readonly #streams: WriteStream[] = [];
  readonly #others: ManagedProcess[] = [];
  /** Processes we killed or stopped on purpose: their exit is expected. */
  readonly #expectedExits = new WeakSet<ManagedProcess>();
  #env: NodeJS.ProcessEnv = {};
  #temporalPort = 0;
  #stopping = false;
  #seq = 0;
  /** How often the sandbox and the API were started (their log files are numbered after the first). */
  readonly #starts: Partial<Record<'sandbox' | 'api', number>> = {};
  /** Kills, restarts and worker starts run one at a time (see `serial`). */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: ChaosStackOptions) {
    this.#options = options;
    this.#logDir = join(options.dir, 'logs');
    this.#dbFile = join(options.dir, 'temporal.db');
    mkdirSync(this.#logDir, { recursive: true });
  }

  get temporalAddress(): string {
    if (!this.temporal) throw new Error('Temporal is not running');
    return this.temporal.address;
  }

  async start(workerCount: number): Promise<void> {
    const { log, timeScale } = this.#options;
    log(`starting Temporal dev server (database ${this.#dbFile})`);
    this.temporal = await startDevServer({ uiPort: false, dbFile: this.#dbFile });
    this.#temporalPort = Number(this.temporal.address.split(':').pop());

    const [sandboxPort, apiPort] = [await freePort(), await freePort()];
    this.sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
    this.apiUrl = `http://127.0.0.1:${apiPort}`;
    const encryptionKey = this.#options.encrypt ? randomBytes(32).toString('base64') : undefined;
    this.secrets = [
      { kind: 'provider API key', value: SANDBOX_KEY },
      { kind: 'intake API key', value: CHAOS_API_KEY },
      ...(encryptionKey ? [{ kind: 'payload encryption key', value: encryptionKey }] : []),
    ];
    this.#env = {
      ...neutralEnvironment(),
      // info: the worker's "worker started" line is how we know it polls.
      LOG_LEVEL: 'info',
      TEMPORAL_ADDRESS: this.temporal.address,
      TEMPORAL_NAMESPACE: this.temporal.namespace,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      PROVIDER_BASE_URL: this.sandboxUrl,
      PROVIDER_API_KEY: SANDBOX_KEY,
      ...PROVIDER_TIMEOUTS,
      // Encrypted payloads, as in production: the codec must survive kills and restarts too.
      ...(encryptionKey ? { PAYLOAD_ENCRYPTION_KEYS: `chaos:${encryptionKey}` } : {}),
      SANDBOX_HOST: '127.0.0.1',
      SANDBOX_PORT: String(sandboxPort),
      SANDBOX_KEY,
      SANDBOX_TIME_SCALE: String(timeScale),
      SANDBOX_ADMIN_TOKEN: CHAOS_ADMIN_TOKEN,
      // Outside the log directory: it holds what a provider's database holds, phone numbers included.
      SANDBOX_STATE_FILE: join(this.#options.dir, 'sandbox-state.jsonl'),
      PORT: String(apiPort),
      API_KEYS: CHAOS_API_KEY,
      API_HOST: '127.0.0.1',
      // One client polling hundreds of orders is not abuse here.
      API_RATE_LIMIT_PER_MINUTE: '1000000',
      API_SHUTDOWN_TIMEOUT_MS: '2000',
      WORKER_WORKFLOW_BUNDLE_PATH: this.#options.workflowBundlePath,
      ...scaledTimingEnv(timeScale),
    };

    log(`starting the sandbox on ${this.sandboxUrl} (time scale ${timeScale})`);
    await this.#startAndWait('sandbox');
    log(`starting ${workerCount} worker(s) and the API on ${this.apiUrl}`);
    await Promise.all([this.ensureWorkers(workerCount), this.#startAndWait('api')]);
    this.#throwIfFatal();
  }

  /**
   * SIGKILLs the sandbox or the API and starts it again on the same port (the sandbox on the same
   * state file); resolves with the downtime once it answers again.
   */
  restartPart(part: 'sandbox' | 'api'): Promise<number> {
    return this.serial(async () => {
      const down = Date.now();
      const running = this.#others.find((p) => p.name.startsWith(part));
      if (running) {
        this.#expectedExits.add(running);
        this.#others.splice(this.#others.indexOf(running), 1);
        running.child.kill('SIGKILL');
        await running.exited;
      }
      await this.#startAndWait(part);
      return Date.now() - down;
    });
  }

  async #startAndWait(part: 'sandbox' | 'api'): Promise<void> {
    const starts = (this.#starts[part] = (this.#starts[part] ?? 0) + 1);
    this.#others.push(this.#startPart(part, starts === 1 ? part : `${part}-${starts}`));
    if (part === 'sandbox') await waitForHttp(`${this.sandboxUrl}/v3/validate`, { timeoutMs: 60_000 });
    else await waitForHttp(`${this.apiUrl}/readyz`, { timeoutMs: 60_000, ok: (status) => status === 200 });
  }

  /** Runs `fn` after every action queued before it: a kill never races a Temporal restart. */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Starts workers until `count` run; each is ready once it logs "worker started". */
  ensureWorkers(count: number): Promise<void> {
    return this.serial(async () => {
      const missing = Math.max(0, count - this.workers.size);
      await Promise.all(Array.from({ length: missing }, () => this.#startWorker()));
    });
  }

  /** SIGKILL: no drain, no goodbye, as when a machine dies. Resolves once the processes are gone. */
  kill(victims: ManagedProcess[]): Promise<void> {
    return this.serial(async () => {
      for (const worker of victims) {
        this.#expectedExits.add(worker);
        this.workers.delete(worker);
        worker.child.kill('SIGKILL');
      }
      await Promise.all(victims.map((worker) => worker.exited));
    });
  }

  /** Stops Temporal and starts it again on the same port and database; resolves with the downtime. */
  restartTemporal(): Promise<number> {
    return this.serial(async () => {
      const down = Date.now();
      await this.temporal?.stop();
      this.temporal = await startDevServer({ port: this.#temporalPort, uiPort: false, dbFile: this.#dbFile });
      return Date.now() - down;
    });
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    // The API first (no new orders), then the workers, then what they depend on.
    const api = this.#others.find((p) => p.name.startsWith('api'));
    await api?.stop(5_000);
    await Promise.all([...this.workers].map((worker) => worker.stop(5_000)));
    await Promise.all(this.#others.map((part) => part.stop(5_000)));
    await this.temporal?.stop();
    await Promise.all(this.#streams.map((s) => new Promise((done) => s.end(done))));
  }

  #throwIfFatal(): void {
    if (this.fatal) throw this.fatal;
  }

  async #startWorker(): Promise<void> {
    const name = `worker-${++this.#seq}`;
    let started!: () => void;
    const ready = new Promise<void>((resolve) => (started = resolve));
    const worker = this.#startPart('worker', name, (line) => {
      if (line.includes('"msg":"worker started"')) started();
    });
    this.workerStarts++;
    const timeout = setTimeout(() => worker.child.kill('SIGKILL'), WORKER_START_TIMEOUT_MS);
    const outcome = await Promise.race([ready.then(() => 'ready' as const), worker.exited]);
    clearTimeout(timeout);
    if (outcome !== 'ready') {
      throw new Error(
        `${name} exited during start-up (${outcome.signal ?? `code ${outcome.code}`}); see ${this.#logDir}`,
      );
    }
    this.workers.add(worker);
  }

  #startPart(part: PartName, name: string, watch?: (line: string) => void): ManagedProcess {
    const file = createWriteStream(join(this.#logDir, `${name}.log`));
    this.#streams.push(file);
    const managed = startPart(
      part,
      {
        env: this.#env,
        onLine: (line) => {
          file.write(`${line}\n`);
          watch?.(line);
        },
      },
      name,
    );
    void managed.exited.then(({ code, signal }) => {
      if (this.#stopping || this.#expectedExits.has(managed)) return;
      const how = signal ?? `code ${code}`;
      if (part === 'worker') {
        if (this.workers.delete(managed)) this.unexpectedWorkerExits++;
        this.#options.log(`${name} exited on its own (${how}); see ${this.#logDir}`);
      } else {
        this.fatal ??= new Error(`the ${name} exited unexpectedly (${how}); see ${this.#logDir}`);
        this.#options.log(this.fatal.message);
      }
    });
    return managed;
  }
}
