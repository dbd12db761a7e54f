/**
 * Starts `temporal server start-dev` on free loopback ports with the project's search attributes,
 * waits until it answers, and stops it. Shared by the tests, the dev stack, chaos and bench.
 *
 * We start the server ourselves instead of TestWorkflowEnvironment.createLocal: that waits only
 * 5 s for start-up, which a busy 2-core machine can exceed, and it tries to download the binary.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Connection } from '@temporalio/client';
import { searchAttributeDefinitions } from '../../workflows/contract';
import { ensureTemporalCli } from './cli';

export interface DevServerOptions {
  /** gRPC port; 0 or unset picks a free one. */
  port?: number;
  /** Web UI port; false = headless. Unset picks a free one. */
  uiPort?: number | false;
  /** SQLite file that keeps workflows across restarts; unset = in memory. */
  dbFile?: string;
  namespace?: string;
  /** Codec server the UI uses to decode payloads. */
  uiCodecEndpoint?: string;
  /** Where the server's own output goes. */
  stdio?: 'ignore' | 'inherit';
  startupTimeoutMs?: number;
  /** Dynamic config values (`--dynamic-config-value KEY=JSON`), e.g. the timer queue's granularity for bench. */
  dynamicConfig?: Record<string, string | number | boolean>;
}

export interface DevServer {
  address: string;
  namespace: string;
  uiUrl?: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** A fixed port that is taken would let us talk to someone else's server: refuse clearly instead. */
async function assertPortFree(port: number): Promise<void> {
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

async function waitUntilReady(address: string, namespace: string, child: ChildProcess, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`temporal server exited with code ${child.exitCode} during start-up`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await connection.workflowService.describeNamespace({ namespace });
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`temporal server did not answer within ${timeoutMs} ms: ${String(lastError)}`);
}

export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const cli = ensureTemporalCli();
  if (options.port) await assertPortFree(options.port);
  if (options.uiPort) await assertPortFree(options.uiPort);
  const port = options.port || (await freePort());
  const namespace = options.namespace ?? 'default';
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'error'];
  args.push('--http-port', String(await freePort()), '--metrics-port', String(await freePort()));
  for (const [name, type] of Object.entries(searchAttributeDefinitions))
    args.push('--search-attribute', `${name}=${type}`);
  if (namespace !== 'default') args.push('--namespace', namespace);
  if (options.dbFile) args.push('--db-filename', options.dbFile);
  for (const [key, value] of Object.entries(options.dynamicConfig ?? {}))
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  let uiUrl: string | undefined;
  if (options.uiPort === false) {
    args.push('--headless');
  } else {
    const uiPort = options.uiPort || (await freePort());
    args.push('--ui-port', String(uiPort));
    uiUrl = `http://127.0.0.1:${uiPort}`;
    if (options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  }

  const child = spawn(cli, args, { stdio: ['ignore', options.stdio ?? 'ignore', options.stdio ?? 'ignore'] });
  running.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => running.delete(child));
  const address = `127.0.0.1:${port}`;

  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const killTimer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killTimer);
  };

  try {
    await waitUntilReady(address, namespace, child, options.startupTimeoutMs ?? 60_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { address, namespace, uiUrl, process: child, stop };
}
