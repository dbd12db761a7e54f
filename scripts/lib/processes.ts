/**
 * Starting the service's parts as child processes, for the stacks of scripts/lib/stack.ts and the
 * tests that start a part themselves: each part runs exactly as `npm run <part>` would (node + tsx,
 * configuration from the environment), in a process group of its own, so a stop reaches whatever it
 * started too and a terminal's Ctrl-C reaches only the launcher, which stops the parts in order.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';

export const projectRoot = resolve(__dirname, '..', '..');

export const partScripts = {
  sandbox: 'src/sandbox/main.ts',
  worker: 'src/worker/main.ts',
  api: 'src/api/main.ts',
  codec: 'src/codec/main.ts',
  'webhook-receiver': 'src/webhooks/receiver-main.ts',
} as const;
export type PartName = keyof typeof partScripts;

export interface ManagedProcess {
  name: string;
  child: ChildProcess;
  /** Resolves when the process has exited, however it ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** True once the process has exited. */
  hasExited(): boolean;
  /** Sends `signal` to the part's process group (SIGKILL as when a machine dies, SIGSTOP / SIGCONT). */
  signal(signal: NodeJS.Signals): void;
  /** SIGTERM to the group, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

const running = new Set<ChildProcess>();
// A launcher that exits without having stopped its parts (a crash, a second Ctrl-C) must not leave them behind.
process.once('exit', () => {
  for (const child of running) signalGroup(child, 'SIGKILL');
});

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // the group is gone already
  }
}

export interface StartOptions {
  env: NodeJS.ProcessEnv;
  /** The script's own arguments. */
  args?: string[];
  /** Each line the process prints; default: dropped. */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** Its open-file limit (`ulimit -n`, soft and hard), e.g. to exhaust it in a test; default: ours. */
  openFiles?: number;
  /**
   * A command that runs node for it and becomes it (exec), e.g. `ip netns exec <ns>`: the process
   * and its group are still node's.
   */
  wrap?: readonly string[];
}

export function startPart(part: PartName, options: StartOptions, name: string = part): ManagedProcess {
  return startNodeScript(name, partScripts[part], options);
}

/** Runs a TypeScript source file with tsx, as `npm run <part>` does. */
export function startNodeScript(name: string, script: string, options: StartOptions): ManagedProcess {
  return startNode(name, ['--import', 'tsx', resolve(projectRoot, script), ...(options.args ?? [])], options);
}

/** Runs a compiled script from dist/ with plain node, as the Docker image does. */
export function startBuiltScript(name: string, script: string, options: StartOptions): ManagedProcess {
  return startNode(name, [resolve(projectRoot, script), ...(options.args ?? [])], options);
}

function startNode(
  name: string,
  args: string[],
  { env, onLine, openFiles, wrap = [] }: StartOptions,
): ManagedProcess {
  // With a limit, a shell sets it and becomes node (exec): the process and its group are node's.
  const node: string[] =
    openFiles === undefined
      ? [process.execPath, ...args]
      : ['/bin/sh', '-c', `ulimit -n ${openFiles} && exec "$0" "$@"`, process.execPath, ...args];
  const [command, ...argv] = [...wrap, ...node] as [string, ...string[]];
  const child = spawn(command, argv, {
    cwd: projectRoot,
    env,
    stdio: ['ignore', onLine ? 'pipe' : 'ignore', onLine ? 'pipe' : 'ignore'],
    detached: true,
  });
  running.add(child);
  if (onLine) {
    createInterface({ input: child.stdout! }).on('line', (line) => onLine(line, 'stdout'));
    createInterface({ input: child.stderr! }).on('line', (line) => onLine(line, 'stderr'));
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      done({ code, signal });
    }),
  );
  const hasExited = () => child.exitCode !== null || child.signalCode !== null;
  const signal = (sig: NodeJS.Signals) => {
    if (!hasExited()) signalGroup(child, sig);
  };
  const stop = async (graceMs = 15_000) => {
    if (hasExited()) return;
    signal('SIGTERM');
    // A frozen part (bench's SIGSTOP) acts on the SIGTERM only once it runs again.
    signal('SIGCONT');
    const killTimer = setTimeout(() => signal('SIGKILL'), graceMs);
    await exited;
    clearTimeout(killTimer);
  };
  return { name, child, exited, hasExited, signal, stop };
}

/** Polls `url` until it answers below 500 (or `ok` says so), or throws after `timeoutMs`. */
export async function waitForHttp(
  url: string,
  { timeoutMs = 120_000, ok = (status: number) => status < 500, headers = {} as Record<string, string> } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url, { headers, signal: AbortSignal.timeout(2_000) });
      await response.body?.cancel();
      if (ok(response.status)) return;
      last = `HTTP ${response.status}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`${url} was not ready within ${timeoutMs / 1000} s (${last})`);
}
