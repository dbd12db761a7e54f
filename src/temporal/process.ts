/**
 * Starting and stopping the servers the tests and tools run beside the service — the Temporal dev
 * server, the Temporal services of the cluster tier, PostgreSQL — one way: a child process that is
 * tracked (and SIGKILLed if the parent exits without stopping it), waited for until a probe says it
 * serves, and stopped with SIGTERM then SIGKILL. Free loopback ports come from here too.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * Where free ports are picked: below the kernel's ephemeral range (32768 and up on Linux), which
 * every server listening on port 0 (the tests' sandboxes, receivers, APIs) and every outgoing
 * connection draws from. A port the kernel handed out and took back could be given to one of them
 * before our server binds it (a worker's metrics exporter failed so once, "Address already in
 * use", with the suite running beside it); a port picked at random from here only meets another
 * picker's.
 */
const FREE_PORT_MIN = 10_000;
const FREE_PORT_MAX = 32_767;

export async function freePort(): Promise<number> {
  return freePortBetween(FREE_PORT_MIN, FREE_PORT_MAX);
}

/**
 * A free loopback port in [min, max], tried at random: for servers that cannot take a port from
 * the kernel's ephemeral range (Temporal keeps membership ports in a PostgreSQL smallint).
 */
export async function freePortBetween(min: number, max: number): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = min + Math.floor(Math.random() * (max - min + 1));
    const free = await assertPortFree(port).then(
      () => true,
      () => false,
    );
    if (free) return port;
  }
  throw new Error(`no free port between ${min} and ${max}`);
}

/** A fixed port that is taken would let us talk to someone else's server: refuse clearly instead. */
export async function assertPortFree(port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const server = createServer();
    server.once('error', () => reject(new Error(`port ${port} on 127.0.0.1 is already in use`)));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
  });
}

const running = new Set<ChildProcess>();
// A test runner that crashes must not leave servers behind.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export interface ServerProcessOptions {
  /** Shown in errors: "temporal history", "postgres". */
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Where stdout and stderr go: dropped, the parent's, or appended to a file. */
  output?: 'ignore' | 'inherit' | { file: string };
  /** Run as this user (the parent must be root), e.g. PostgreSQL, which refuses to run as root. */
  user?: { uid: number; gid: number };
  /** The signal that asks for a clean, quick stop (PostgreSQL: SIGINT, its "fast" shutdown). */
  stopSignal?: NodeJS.Signals;
}

export interface ServerProcess {
  name: string;
  process: ChildProcess;
  /** Resolves once the process has exited, however it ended. */
  exited: Promise<void>;
  /** True once the process has exited. */
  hasExited(): boolean;
  /** The stop signal, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL, as when a machine dies; resolves once it has exited. */
  kill(): Promise<void>;
}

export function startServerProcess(options: ServerProcessOptions): ServerProcess {
  const output = options.output ?? 'ignore';
  const fd = typeof output === 'object' ? openSync(output.file, 'a') : undefined;
  const stdio: StdioOptions = ['ignore', fd ?? output, fd ?? output] as StdioOptions;
  const child = spawn(options.command, options.args, {
    stdio,
    env: options.env ?? process.env,
    cwd: options.cwd,
    ...(options.user ? { uid: options.user.uid, gid: options.user.gid } : {}),
  });
  if (fd !== undefined) closeSync(fd);
  running.add(child);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    // A command that cannot be spawned emits 'error' and never 'exit'.
    child.once('error', () => resolve());
  });
  void exited.then(() => running.delete(child));
  const hasExited = () => child.exitCode !== null || child.signalCode !== null || !running.has(child);

  const stop = async (graceMs = 10_000) => {
    if (hasExited()) return;
    child.kill(options.stopSignal ?? 'SIGTERM');
    const killTimer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(killTimer);
  };
  const kill = async () => {
    if (hasExited()) return;
    child.kill('SIGKILL');
    await exited;
  };
  return { name: options.name, process: child, exited, hasExited, stop, kill };
}

/**
 * Calls `probe` until it resolves, every `intervalMs`, and throws after `timeoutMs` with the last
 * error — or at once when the server process exits, since it will never answer then.
 */
export async function waitUntilServing(
  server: ServerProcess,
  probe: () => Promise<unknown>,
  { timeoutMs, intervalMs = 250 }: { timeoutMs: number; intervalMs?: number },
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (server.hasExited()) {
      const how = server.process.signalCode ?? `code ${server.process.exitCode}`;
      throw new Error(`${server.name} exited (${how}) during start-up`);
    }
    try {
      await probe();
      return;
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
  const reason = lastError instanceof Error ? lastError.message : String(lastError);
  throw new Error(`${server.name} did not answer within ${timeoutMs} ms: ${reason}`);
}
