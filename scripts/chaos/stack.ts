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
import { join } from 'node:path';
import { knownEnvironmentVariables } from '../../src/config';
import { writeWorkflowBundle } from '../lib/bundle';
import { freePort } from '../../src/temporal/dev-server';
import { Launcher, scaledTimingEnv, type Part } from '../lib/stack';

/** Names the run's Worker Deployment version: the chaos stack's workers are one version. */
const CHAOS_RUN_ID = randomBytes(4).toString('hex');

export const CHAOS_API_KEY = 'chaos-api-key';
export const CHAOS_ADMIN_TOKEN = 'chaos-admin-token';
/** The provider key the workers use; the verdict reads the provider's records with it. */
export const CHAOS_PROVIDER_KEY = 'sandbox-key';
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
 * The account's timings (docs/contributors.md "Chaos and hostile input"): the balance-outage and
 * operator-down phases last seconds, so the worker's account watch and send gate read the balance
 * and /v3/ping every second (PROVIDER_ACCOUNT_CHECK_MS is also the gate's longest reading age), and
 * /readyz, where the run sees orders held, reports at most half a second late. A held order then
 * resumes about a second after its phase ends. The longest hold (ORDER_MAX_HOLD_MS) is far above any
 * phase (at most 15 s, run.ts) and the resume after it, even with workers down, yet inside the short
 * run's chaos and settle windows: an order that is never let go ends FAILED NOT_SENT before the run
 * gives up on it, and the verdict names it.
 */
const ACCOUNT_TIMINGS = {
  PROVIDER_ACCOUNT_CHECK_MS: '1000',
  API_ACCOUNT_REPORT_TTL_MS: '500',
  ORDER_MAX_HOLD_MS: '90000',
};

/**
 * The settle window at a time scale: the spec-scale default (60 s) scaled, but never below 6 s,
 * which the late-commit phase's commit delays plus read lags stay under (see faults.ts).
 */
export function scaledSettleMs(timeScale: number): number {
  return Math.max(6_000, Math.round(60_000 * timeScale));
}

/**
 * The order timings scaled like the sandbox's clock, so polling follows its PENDING/HANDLING phases
 * and deadlines keep their proportion to them; with floors, because the faults' commit delays, read
 * lags and outages are real seconds that do not scale (bench has none: they would skew its figures).
 */
export function chaosTimingEnv(timeScale: number): Record<string, string> {
  return scaledTimingEnv(timeScale, {
    // Retries back off to this cap; below a second they would hammer a sandbox that is down.
    POLL_MAX_INTERVAL_MS: 1_000,
    ORDER_DEADLINE_MOBILE_MS: 30_000,
    ORDER_DEADLINE_INTERNET_MS: 30_000,
    ORDER_DEADLINE_GIFT_CARD_MS: 30_000,
    REVIEW_RECHECK_INTERVAL_MS: 10_000,
    PROVIDER_SETTLE_MS: scaledSettleMs(timeScale),
  });
}

/**
 * The test runner's pre-built bundle, or a fresh one in `dir`: workers then start in seconds, not
 * tens. Built as `npm run build:bundle` builds it.
 */
export async function buildWorkflowBundle(dir: string): Promise<string> {
  const prebuilt = process.env.TEST_WORKFLOW_BUNDLE_PATH;
  if (prebuilt) return prebuilt;
  const path = join(dir, 'workflow-bundle.js');
  await writeWorkflowBundle(path);
  return path;
}

/** The caller's environment without any variable the parts read, so a developer's settings cannot leak in. */
function neutralEnvironment(): NodeJS.ProcessEnv {
  const known = new Set(knownEnvironmentVariables);
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !known.has(name)));
}

/** A Temporal the run uses instead of starting its own dev server (the cluster tier's). */
export interface ExternalTemporal {
  address: string;
  namespace: string;
  /** Restarts (part of) it, for the run's Temporal restarts; without it the run plans none. */
  restart?: () => Promise<void>;
}

export interface ChaosStackOptions {
  /** The run directory: Temporal's database and the part logs. */
  dir: string;
  /** Default: a dev server of the run's own, on a database file in `dir`. */
  temporal?: ExternalTemporal;
  /** Intake API instances; the client spreads its requests over them like a load balancer. */
  apis?: number;
  /**
   * How many of the workers run as the Docker image runs them: the compiled worker
   * (`node dist/src/worker/main.js`, after `npm run build && npm run build:bundle`) with the bundle
   * that build wrote. The others run from source (tsx), as `npm run worker` does.
   */
  builtWorkers?: number;
  timeScale: number;
  /** A pre-built workflow bundle (buildWorkflowBundle), so a new worker starts in seconds. */
  workflowBundlePath: string;
  /** Set PAYLOAD_ENCRYPTION_KEYS for the API and workers. */
  encrypt: boolean;
  /** Variables over the stack's own for every part (the cluster's fault run: a clients file with a webhook endpoint). */
  env?: Record<string, string>;
  log: (line: string) => void;
}

/** Where `npm run build && npm run build:bundle` puts the compiled worker and its bundle (Dockerfile). */
const BUILT_WORKER_SCRIPT = 'dist/src/worker/main.js';
const BUILT_WORKFLOW_BUNDLE = 'dist/workflow-bundle.js';

export class ChaosStack {
  sandboxUrl = '';
  apiUrls: string[] = [];
  readonly workers = new Set<Part>();
  /** Which workers run the compiled build. */
  readonly #builtWorkers = new WeakSet<Part>();
  /** Workers that exited without being killed or stopped by us. */
  unexpectedWorkerExits = 0;
  workerStarts = 0;
  /** Set when the sandbox or the API died on its own: the run cannot go on. */
  fatal?: Error;
  /** The keys the parts were given: none may appear in their logs. */
  secrets: Secret[] = [];

  readonly #options: ChaosStackOptions;
  readonly #logDir: string;
  readonly #launcher: Launcher;
  #env: NodeJS.ProcessEnv = {};
  #seq = 0;
  /** Starts so far of each sandbox / API instance (their log files are numbered after the first), and the part now running as each. */
  readonly #starts: Record<string, number> = {};
  readonly #running = new Map<string, Part>();
  /** Kills, restarts and worker starts run one at a time (see `serial`). */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: ChaosStackOptions) {
    this.#options = options;
    this.#logDir = join(options.dir, 'logs');
    this.#launcher = new Launcher({
      output: { dir: this.#logDir },
      log: options.log,
      onUnexpectedExit: (part, how) => {
        if (part.kind === 'worker') {
          if (this.workers.delete(part)) this.unexpectedWorkerExits++;
          options.log(`${part.name} exited on its own (${how}); see ${this.#logDir}`);
        } else {
          this.fatal ??= new Error(`the ${part.name} exited unexpectedly (${how}); see ${this.#logDir}`);
          options.log(this.fatal.message);
        }
      },
    });
  }

  get logDir(): string {
    return this.#logDir;
  }

  get temporalAddress(): string {
    if (this.#options.temporal) return this.#options.temporal.address;
    if (!this.#launcher.temporal) throw new Error('Temporal is not running');
    return this.#launcher.temporal.address;
  }

  get namespace(): string {
    return this.#options.temporal?.namespace ?? this.#launcher.temporal?.namespace ?? 'default';
  }

  /** The first API instance (scripts that use one). */
  get apiUrl(): string {
    return this.apiUrls[0] ?? '';
  }

  async start(workerCount: number): Promise<void> {
    const { log, timeScale } = this.#options;
    if (this.#options.temporal) {
      log(
        `using Temporal at ${this.#options.temporal.address}, namespace ${this.#options.temporal.namespace}`,
      );
    } else {
      const dbFile = join(this.#options.dir, 'temporal.db');
      log(`starting Temporal dev server (database ${dbFile})`);
      await this.#launcher.startTemporal({ uiPort: false, dbFile });
    }

    const sandboxPort = await freePort();
    this.sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
    const apiPorts: number[] = [];
    for (let i = 0; i < (this.#options.apis ?? 1); i++) apiPorts.push(await freePort());
    this.apiUrls = apiPorts.map((port) => `http://127.0.0.1:${port}`);
    const encryptionKey = this.#options.encrypt ? randomBytes(32).toString('base64') : undefined;
    this.secrets = [
      { kind: 'provider API key', value: CHAOS_PROVIDER_KEY },
      { kind: 'intake API key', value: CHAOS_API_KEY },
      ...(encryptionKey ? [{ kind: 'payload encryption key', value: encryptionKey }] : []),
    ];
    this.#env = {
      ...neutralEnvironment(),
      // info: the worker's "worker started" line is how we know it polls.
      LOG_LEVEL: 'info',
      TEMPORAL_ADDRESS: this.temporalAddress,
      TEMPORAL_NAMESPACE: this.namespace,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      // One version for every worker of the run, built or from source (their bundles may differ by a byte).
      WORKER_DEPLOYMENT_NAME: `chaos-${CHAOS_RUN_ID}`,
      WORKER_BUILD_ID: `chaos-${CHAOS_RUN_ID}`,
      PROVIDER_BASE_URL: this.sandboxUrl,
      PROVIDER_API_KEY: CHAOS_PROVIDER_KEY,
      ...PROVIDER_TIMEOUTS,
      ...ACCOUNT_TIMINGS,
      // Encrypted payloads, as in production: the codec must survive kills and restarts too.
      ...(encryptionKey ? { PAYLOAD_ENCRYPTION_KEYS: `chaos:${encryptionKey}` } : {}),
      SANDBOX_HOST: '127.0.0.1',
      SANDBOX_KEY: CHAOS_PROVIDER_KEY,
      SANDBOX_TIME_SCALE: String(timeScale),
      SANDBOX_ADMIN_TOKEN: CHAOS_ADMIN_TOKEN,
      // Outside the log directory: it holds what a provider's database holds, phone numbers included.
      SANDBOX_STATE_FILE: join(this.#options.dir, 'sandbox-state.jsonl'),
      API_KEYS: CHAOS_API_KEY,
      API_HOST: '127.0.0.1',
      // One client polling hundreds of orders is not abuse here.
      API_RATE_LIMIT_PER_MINUTE: '1000000',
      API_ORDERS_PER_MINUTE: '1000000',
      API_CONCURRENT_REQUESTS: '1000',
      API_SHUTDOWN_TIMEOUT_MS: '2000',
      WORKER_WORKFLOW_BUNDLE_PATH: this.#options.workflowBundlePath,
      ...chaosTimingEnv(timeScale),
      ...this.#options.env,
    };

    log(`starting the sandbox on ${this.sandboxUrl} (time scale ${timeScale})`);
    await this.#startAndWait('sandbox');
    log(`starting ${workerCount} worker(s) and the API on ${this.apiUrls.join(', ')}`);
    // Ready means what a submission needs, a polling worker included (src/api/health.ts).
    await Promise.all([
      this.ensureWorkers(workerCount),
      ...this.apiUrls.map((_, index) => this.#startAndWait('api', index)),
    ]);
    if (this.fatal) throw this.fatal;
  }

  /**
   * SIGKILLs the sandbox or API instance `index` and starts it again on the same port (the sandbox
   * on the same state file); resolves with the downtime once it answers again.
   */
  restartPart(part: 'sandbox' | 'api', index = 0): Promise<number> {
    return this.serial(async () => {
      const down = Date.now();
      const running = this.#running.get(partKey(part, index));
      if (running) await this.#launcher.kill(running);
      await this.#startAndWait(part, index);
      return Date.now() - down;
    });
  }

  /** Starts the sandbox or API instance `index` and waits until it answers (the API: ready). */
  async #startAndWait(part: 'sandbox' | 'api', index = 0): Promise<void> {
    const key = partKey(part, index);
    const starts = (this.#starts[key] = (this.#starts[key] ?? 0) + 1);
    const base = part === 'api' && this.apiUrls.length > 1 ? `api-${index + 1}` : part;
    const url = part === 'sandbox' ? this.sandboxUrl : this.apiUrls[index]!;
    const started = await this.#launcher.startServer(part, {
      name: starts === 1 ? base : `${base}-restart-${starts - 1}`,
      port: Number(new URL(url).port),
      env: this.#env,
      timeoutMs: part === 'sandbox' ? 60_000 : 120_000,
    });
    this.#running.set(key, started);
  }

  /** Runs `fn` after every action queued before it: a kill never races a Temporal restart. */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Starts workers until `count` run, the first `builtWorkers` of them compiled (a killed built
   * worker is replaced by a built one); each is ready once it logs "worker started".
   */
  ensureWorkers(count: number): Promise<void> {
    return this.serial(async () => {
      const missing = Math.max(0, count - this.workers.size);
      let builtMissing = Math.max(
        0,
        (this.#options.builtWorkers ?? 0) - [...this.workers].filter((w) => this.#builtWorkers.has(w)).length,
      );
      await Promise.all(
        Array.from({ length: missing }, () => this.#startWorker(builtMissing-- > 0 ? 'built' : 'source')),
      );
    });
  }

  /**
   * A worker apart from the kept count (ensureWorkers neither counts nor replaces it): with
   * variables over the stack's, run through `wrap` (e.g. inside a network namespace). Stopped with
   * the stack, or by `stopWorker`.
   */
  startExtraWorker(
    name: string,
    extra: { env?: Record<string, string>; wrap?: readonly string[] },
  ): Promise<Part> {
    return this.serial(async () => {
      this.workerStarts++;
      try {
        return await this.#launcher.startWorker({
          name,
          ready: 'log',
          timeoutMs: WORKER_START_TIMEOUT_MS,
          env: { ...this.#env, ...extra.env },
          ...(extra.wrap ? { wrap: extra.wrap } : {}),
        });
      } catch (err) {
        throw new Error(`${err instanceof Error ? err.message : String(err)}; see ${this.#logDir}`);
      }
    });
  }

  /** Stops a worker as a deploy does (SIGTERM: it finishes its tasks), then SIGKILL after `graceMs`. */
  stopWorker(worker: Part, graceMs = 10_000): Promise<void> {
    return this.serial(async () => {
      this.workers.delete(worker);
      worker.stopping = true;
      await worker.process.stop(graceMs);
    });
  }

  isBuiltWorker(worker: Part): boolean {
    return this.#builtWorkers.has(worker);
  }

  /** SIGKILL: no drain, no goodbye, as when a machine dies. Resolves once the processes are gone. */
  kill(victims: Part[]): Promise<void> {
    return this.serial(async () => {
      for (const worker of victims) this.workers.delete(worker);
      await Promise.all(victims.map((worker) => this.#launcher.kill(worker)));
    });
  }

  /**
   * Stops Temporal and starts it again (the dev server on the same port and database; an external
   * Temporal through its own restart); resolves with the downtime.
   */
  restartTemporal(): Promise<number> {
    return this.serial(async () => {
      const down = Date.now();
      const external = this.#options.temporal;
      if (external) {
        if (!external.restart) throw new Error('this Temporal cannot be restarted by the run');
        await external.restart();
      } else {
        await this.#launcher.restartTemporal();
      }
      return Date.now() - down;
    });
  }

  stop(): Promise<void> {
    return this.#launcher.stop(5_000);
  }

  async #startWorker(kind: 'built' | 'source'): Promise<void> {
    const name = `worker-${++this.#seq}${kind === 'built' ? '-built' : ''}`;
    this.workerStarts++;
    const built = kind === 'built';
    let worker: Part | undefined;
    try {
      worker = await this.#launcher.startWorker({
        name,
        ready: 'log',
        timeoutMs: WORKER_START_TIMEOUT_MS,
        ...(built
          ? {
              built,
              script: BUILT_WORKER_SCRIPT,
              env: { ...this.#env, WORKER_WORKFLOW_BUNDLE_PATH: BUILT_WORKFLOW_BUNDLE },
            }
          : { env: this.#env }),
      });
    } catch (err) {
      throw new Error(`${err instanceof Error ? err.message : String(err)}; see ${this.#logDir}`);
    }
    if (built) this.#builtWorkers.add(worker);
    this.workers.add(worker);
  }
}

function partKey(part: 'sandbox' | 'api', index: number): string {
  return part === 'sandbox' ? part : `api-${index}`;
}
