/**
 * Starting the service's parts as child processes, for the dev stack, chaos and bench: each part
 * runs exactly as `npm run <part>` would (node + tsx, configuration from the environment).
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
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

export interface StartOptions {
  env: NodeJS.ProcessEnv;
  /** Each line the process prints; default: dropped. */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
}

export function startPart(part: PartName, options: StartOptions, name: string = part): ManagedProcess {
  return startNodeScript(name, partScripts[part], options);
}

/** Runs a TypeScript source file with tsx, as `npm run <part>` does. */
export function startNodeScript(name: string, script: string, options: StartOptions): ManagedProcess {
  return startNode(name, ['--import', 'tsx', resolve(projectRoot, script)], options);
}

/** Runs a compiled script from dist/ with plain node, as the Docker image does. */
export function startBuiltScript(name: string, script: string, options: StartOptions): ManagedProcess {
  return startNode(name, [resolve(projectRoot, script)], options);
}

function startNode(name: string, args: string[], { env, onLine }: StartOptions): ManagedProcess {
  const child = spawn(process.execPath, args, {
    cwd: projectRoot,
    env,
    stdio: ['ignore', onLine ? 'pipe' : 'ignore', onLine ? 'pipe' : 'ignore'],
  });
  if (onLine) {
    createInterface({ input: child.stdout! }).on('line', (line) => onLine(line, 'stdout'));
    createInterface({ input: child.stderr! }).on('line', (line) => onLine(line, 'stderr'));
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once('exit', (code, signal) => done({ code, signal })),
  );
  const stop = async (graceMs = 15_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const killTimer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(killTimer);
  };
  return { name, child, exited, stop };
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
