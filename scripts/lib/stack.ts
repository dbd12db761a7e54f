/**
 * Starting a stack of the service's parts — a Temporal dev server, the sandbox, the codec server,
 * workers, the intake API, the webhook receiver, each optional — for the dev stack (`npm start`),
 * chaos and bench. Servers listen on the port they are given or a free one; each part's lines go
 * to the terminal behind its name, to a log file of its own, or nowhere (the last lines are kept for
 * when it dies); a stop ends every process the launcher started, in order.
 */
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { prettyFactory } from 'pino-pretty';
import { loadConfig } from '../../src/config';
import { temporalConnectionOptions } from '../../src/temporal/connection';
import {
  freePort,
  startDevServer,
  type DevServer,
  type DevServerOptions,
} from '../../src/temporal/dev-server';
import {
  partScripts,
  startBuiltScript,
  startNodeScript,
  waitForHttp,
  type ManagedProcess,
  type PartName,
} from './processes';

/** The terminal, behind each part's name; a log file per part in `dir`; or nowhere. */
export type Output = 'terminal' | { dir: string } | 'none';

export interface Part {
  name: string;
  kind: PartName;
  process: ManagedProcess;
  /** The last lines it printed. */
  tail: string[];
  /** A server part's address. */
  url?: string;
  /** Set once the launcher stops or kills it: its exit is no news. */
  stopping: boolean;
}

export interface LauncherOptions {
  output: Output;
  log: (line: string) => void;
  /** A part exited that the launcher did not stop; default: log its last lines. */
  onUnexpectedExit?: (part: Part, how: string) => void;
}

const TAIL_LINES = 40;

type ServerKind = Exclude<PartName, 'worker'>;

/** How each server part is told its port, and the answer that says it serves. */
const servers: Record<ServerKind, { portVariable: string; path: string; ok: (status: number) => boolean }> = {
  sandbox: { portVariable: 'SANDBOX_PORT', path: '/v3/validate', ok: (status) => status < 500 },
  codec: { portVariable: 'CODEC_PORT', path: '/healthz', ok: (status) => status < 500 },
  'webhook-receiver': {
    portVariable: 'WEBHOOK_RECEIVER_PORT',
    path: '/webhooks',
    ok: (status) => status === 405,
  },
  api: { portVariable: 'PORT', path: '/readyz', ok: (status) => status === 200 },
};

/** The APIs first (no new orders), then the workers (they finish their tasks), then what they depend on. */
const STOP_ORDER: PartName[][] = [['api'], ['worker'], ['webhook-receiver', 'sandbox', 'codec']];

export interface StartOptions {
  name?: string;
  env: NodeJS.ProcessEnv;
  /** Another script than the part's own (relative to the project root). */
  script?: string;
  /** Run `script` compiled, with plain node (dist/), as the Docker image does. */
  built?: boolean;
  /** Sees each line the part prints. */
  watch?: (line: string) => void;
  /** A command that runs node for it (processes.ts), e.g. `ip netns exec <ns>`. */
  wrap?: readonly string[];
}

export class Launcher {
  temporal?: DevServer;
  readonly parts: Part[] = [];
  /** True once the stop began (a signal, the end of the run, a part that died). */
  stopping = false;
  readonly #options: LauncherOptions;
  #temporalOptions: DevServerOptions = {};
  readonly #cleanups: { name: string; run: () => Promise<unknown> }[] = [];
  readonly #streams: WriteStream[] = [];
  #stopped?: Promise<void>;

  constructor(options: LauncherOptions) {
    this.#options = options;
    if (typeof options.output === 'object') mkdirSync(options.output.dir, { recursive: true });
  }

  async startTemporal(options: DevServerOptions = {}): Promise<DevServer> {
    this.temporal = await startDevServer(options);
    this.#temporalOptions = { ...options, port: Number(this.temporal.address.split(':').pop()) };
    return this.temporal;
  }

  /** Stops our dev server and starts it again on the same port (and database file, if it has one). */
  async restartTemporal(): Promise<void> {
    await this.temporal?.stop();
    this.temporal = await startDevServer(this.#temporalOptions);
  }

  start(
    kind: PartName,
    { name = kind, env, script = partScripts[kind], built, watch, wrap }: StartOptions,
  ): Part {
    const sink = this.#sink(name);
    const tail: string[] = [];
    const onLine = (line: string, stream: 'stdout' | 'stderr') => {
      tail.push(line);
      if (tail.length > TAIL_LINES) tail.shift();
      sink(line, stream);
      watch?.(line);
    };
    const process = (built ? startBuiltScript : startNodeScript)(name, script, { env, onLine, wrap });
    const part: Part = { name, kind, process, tail, stopping: false };
    this.parts.push(part);
    void process.exited.then(({ code, signal }) => {
      if (this.stopping || part.stopping) return;
      const how = signal ?? `code ${code}`;
      if (this.#options.onUnexpectedExit) return this.#options.onUnexpectedExit(part, how);
      this.#options.log(`${name} exited unexpectedly (${how}); its last lines:`);
      for (const line of tail) this.#options.log(`  [${name}] ${line}`);
    });
    return part;
  }

  /** Starts a server part on `port` (default: a free one) and waits until it serves. */
  async startServer(
    kind: ServerKind,
    { port, timeoutMs = 120_000, ...options }: StartOptions & { port?: number; timeoutMs?: number },
  ): Promise<Part & { url: string }> {
    const server = servers[kind];
    const listen = port ?? (await freePort());
    const url = `http://127.0.0.1:${listen}`;
    const part = this.start(kind, {
      ...options,
      env: { ...options.env, [server.portVariable]: String(listen) },
    });
    await this.ready(part, waitForHttp(`${url}${server.path}`, { timeoutMs, ok: server.ok }), timeoutMs);
    return Object.assign(part, { url });
  }

  /**
   * Starts a worker and waits until it polls: as Temporal sees it (`polling`: its task queue has a
   * poller, whatever the log level) or as it says (`log`: its "worker started" line, for a worker
   * that joins others on the same queue).
   */
  async startWorker({
    ready = 'polling',
    timeoutMs = 180_000,
    ...options
  }: StartOptions & { ready?: 'polling' | 'log'; timeoutMs?: number }): Promise<Part> {
    let started!: () => void;
    const startedLine = new Promise<void>((resolve) => (started = resolve));
    const part = this.start('worker', {
      ...options,
      watch: (line) => {
        if (line.includes('"msg":"worker started"')) started();
        options.watch?.(line);
      },
    });
    await this.ready(part, ready === 'log' ? startedLine : waitForPollers(options.env, timeoutMs), timeoutMs);
    return part;
  }

  /** Resolves once `ready` does; rejects when the part exits first or `timeoutMs` passes (and then kills it). */
  async ready(part: Part, ready: Promise<unknown>, timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${part.name} not ready within ${timeoutMs / 1000} s`)),
        timeoutMs,
      );
    });
    const died = part.process.exited.then(({ code, signal }) => {
      throw new Error(`${part.name} exited during start-up (${signal ?? `code ${code}`})`);
    });
    // Each settles later or never; the race reports what matters.
    for (const promise of [ready, died]) promise.catch(() => {});
    try {
      await Promise.race([ready, timeout, died]);
    } catch (err) {
      part.process.signal('SIGKILL');
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGKILL, as when a machine dies; resolves once it is gone. */
  async kill(part: Part): Promise<void> {
    part.stopping = true;
    part.process.signal('SIGKILL');
    await part.process.exited;
  }

  /** Runs at the stop, after the processes have stopped, newest first. */
  onStop(name: string, run: () => Promise<unknown>): void {
    this.#cleanups.push({ name, run });
  }

  /** Stops every part (in STOP_ORDER; each with SIGKILL after `graceMs`) and Temporal, then runs the onStop cleanups. */
  stop(graceMs = 15_000): Promise<void> {
    this.#stopped ??= (async () => {
      this.stopping = true;
      for (const kinds of STOP_ORDER) {
        const parts = this.parts.filter((part) => kinds.includes(part.kind));
        await Promise.all(parts.map((part) => ((part.stopping = true), part.process.stop(graceMs))));
      }
      await this.temporal?.stop();
      for (const { name, run } of this.#cleanups.splice(0).reverse()) {
        await run().catch((err: unknown) => this.#options.log(`cleanup of ${name} failed: ${String(err)}`));
      }
      await Promise.all(this.#streams.map((stream) => new Promise((done) => stream.end(done))));
    })();
    return this.#stopped;
  }

  /** Stops everything, says so, and exits with `code`. */
  async shutdown(code: number): Promise<never> {
    if (!this.stopping) this.#options.log('stopping…');
    await this.stop();
    this.#options.log('stopped');
    process.exit(code);
  }

  /**
   * Ctrl-C or SIGTERM: shutdown(code), by default 130 / 143. Later signals change nothing: Ctrl-C
   * reaches a launcher twice (from the terminal and forwarded by npm), and the stop must finish.
   */
  stopOnSignals(code?: number): void {
    for (const [signal, signalCode] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
    ] as const) {
      process.on(signal, () => {
        if (this.stopping) return;
        // A part that would not stop must not hold the launcher forever (processes.ts SIGKILLs it at exit).
        setTimeout(() => process.exit(code ?? signalCode), 60_000).unref();
        void this.shutdown(code ?? signalCode);
      });
    }
  }

  #sink(name: string): (line: string, stream: 'stdout' | 'stderr') => void {
    const { output } = this.#options;
    if (output === 'none') return () => {};
    if (output === 'terminal') return terminalRelay(name);
    const file = createWriteStream(join(output.dir, `${name}.log`));
    this.#streams.push(file);
    return (line) => file.write(`${line}\n`);
  }
}

const pretty = prettyFactory({
  colorize: process.stdout.isTTY,
  translateTime: 'SYS:HH:MM:ss.l',
  ignore: 'pid,hostname',
});

/** A part's line on the terminal behind its name, pretty-printed when it is a pino JSON line. */
function terminalRelay(name: string) {
  return (line: string, stream: 'stdout' | 'stderr') => {
    let text = line;
    if (line.startsWith('{')) {
      try {
        text = pretty(JSON.parse(line) as object).trimEnd();
      } catch {
        // not JSON after all: print as is
      }
    }
    (stream === 'stdout' ? process.stdout : process.stderr).write(`[${name}] ${text}\n`);
  };
}

/** Resolves once a worker polls the workflow task queue the environment names, on the Temporal it names. */
export async function waitForPollers(env: NodeJS.ProcessEnv, timeoutMs: number): Promise<void> {
  const config = loadConfig(env);
  const { TEMPORAL_NAMESPACE: namespace, TEMPORAL_TASK_QUEUE: taskQueue } = config;
  const connection = await Connection.connect(temporalConnectionOptions(config));
  try {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const { pollers } = await connection.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: taskQueue },
        taskQueueType: proto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      });
      if (pollers && pollers.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    throw new Error(`no worker polled ${taskQueue} within ${timeoutMs / 1000} s`);
  } finally {
    await connection.close();
  }
}

/**
 * The spec's order timings (the config defaults) × `timeScale`, as the POLL_* / ORDER_DEADLINE_* /
 * REVIEW_* / PROVIDER_SETTLE_MS variables, each at least its floor (default 1 ms).
 */
export function scaledTimingEnv(timeScale: number, floors: Partial<Record<TimingVariable, number>> = {}) {
  const defaults = loadConfig({});
  return Object.fromEntries(
    timingVariables.map((name) => [
      name,
      String(Math.max(floors[name] ?? 1, Math.round(defaults[name] * timeScale))),
    ]),
  ) as Record<TimingVariable, string>;
}

const timingVariables = [
  'POLL_FIRST_CHECK_MS',
  'POLL_HANDLING_CHECK_MS',
  'POLL_MAX_INTERVAL_MS',
  'POLL_INTERVAL_MS',
  'POLL_PACE_MOBILE_MS',
  'POLL_PACE_INTERNET_MS',
  'POLL_PACE_GIFT_CARD_MS',
  'ORDER_DEADLINE_MOBILE_MS',
  'ORDER_DEADLINE_INTERNET_MS',
  'ORDER_DEADLINE_GIFT_CARD_MS',
  'REVIEW_RECHECK_INTERVAL_MS',
  'PROVIDER_SETTLE_MS',
] as const;
type TimingVariable = (typeof timingVariables)[number];
