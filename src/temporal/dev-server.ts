/**
 * Starts `temporal server start-dev` on free loopback ports with the project's search attributes,
 * waits until it answers, and stops it. Shared by the tests, the dev stack, chaos and bench.
 *
 * We start the server ourselves instead of TestWorkflowEnvironment.createLocal: that waits only
 * 5 s for start-up, which a busy 2-core machine can exceed, and it tries to download the binary.
 */
import type { ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { searchAttributeDefinitions } from '../../contract/order';
import { loadConfig } from '../config';
import { ensureTemporalCli } from './cli';
import { assertPortFree, freePort, startServerProcess, waitUntilServing } from './process';
import { ensureTemporalSetup } from './setup';
import { visibilityDynamicConfig } from './visibility-limits';

export { freePort } from './process';

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
  /** The namespace's retention (the dev server creates it with 24 h); default: TEMPORAL_NAMESPACE_RETENTION's default. */
  retentionMs?: number;
  /** Dynamic config values (`--dynamic-config-value KEY=JSON`), e.g. the timer queue's granularity for bench. */
  dynamicConfig?: Record<string, string | number | boolean>;
  /**
   * Task-queue fairness and priority on (docs/deployers.md "Fair under load"), as on every server
   * we run; false starts a server that serves each queue first come, first served (the bench's
   * "fairness off" phase, the probe's test). `dynamicConfig` wins over it.
   */
  fairness?: boolean;
}

/** The dynamic config that makes a server honour fairness keys (≥ 1.29) and priority keys (default from 1.31). */
export const fairnessDynamicConfig = {
  'matching.enableFairness': true,
  'matching.useNewMatcher': true,
} as const;

/**
 * Worker Deployments need no flag on 1.32 (`system.enableDeploymentVersions` and
 * `frontend.workerVersioningWorkflowAPIs` default to true). But every test stack joins a
 * deployment of its own on the run's one dev server, and the server allows 100 per namespace.
 */
export const devDeploymentsDynamicConfig = {
  'matching.maxDeployments': 10_000,
} as const;

export interface DevServer {
  address: string;
  namespace: string;
  uiUrl?: string;
  /** The server's Prometheus metrics (per-operation request and error counts: the bench's visibility figures). */
  metricsUrl: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Answers once the frontend serves the namespace (the dev server creates it at start). */
async function describeNamespace(address: string, namespace: string): Promise<void> {
  const connection = await Connection.connect({ address, connectTimeout: 1_000 });
  try {
    await connection.workflowService.describeNamespace({ namespace });
  } finally {
    await connection.close();
  }
}

export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const cli = ensureTemporalCli();
  if (options.port) await assertPortFree(options.port);
  if (options.uiPort) await assertPortFree(options.uiPort);
  const port = options.port || (await freePort());
  const namespace = options.namespace ?? 'default';
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'error'];
  const metricsPort = await freePort();
  args.push('--http-port', String(await freePort()), '--metrics-port', String(metricsPort));
  for (const [name, type] of Object.entries(searchAttributeDefinitions))
    args.push('--search-attribute', `${name}=${type}`);
  if (namespace !== 'default') args.push('--namespace', namespace);
  if (options.dbFile) args.push('--db-filename', options.dbFile);
  const dynamicConfig = {
    // Off said so: the dev server of CLI 1.9 turns fairness on by itself. One partition, as the
    // servers before it had: with several, a fairness-off queue hands out tasks in no set order,
    // and the fairness probe can take that for fairness honoured.
    ...(options.fairness === false
      ? {
          'matching.enableFairness': false,
          'matching.numTaskqueueReadPartitions': 1,
          'matching.numTaskqueueWritePartitions': 1,
        }
      : fairnessDynamicConfig),
    ...devDeploymentsDynamicConfig,
    ...visibilityDynamicConfig,
    ...options.dynamicConfig,
  };
  for (const [key, value] of Object.entries(dynamicConfig))
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

  const server = startServerProcess({
    name: 'temporal server start-dev',
    command: cli,
    args,
    output: options.stdio ?? 'ignore',
  });
  const address = `127.0.0.1:${port}`;
  try {
    await waitUntilServing(server, () => describeNamespace(address, namespace), {
      timeoutMs: options.startupTimeoutMs ?? 60_000,
    });
    // The search attributes came with the flags above; this sets the retention the service asks for.
    const connection = await Connection.connect({ address });
    try {
      await ensureTemporalSetup(connection, {
        namespace,
        retentionMs: options.retentionMs ?? loadConfig({}).TEMPORAL_NAMESPACE_RETENTION,
        timeoutMs: options.startupTimeoutMs ?? 60_000,
      });
    } finally {
      await connection.close();
    }
  } catch (err) {
    await server.stop();
    throw err;
  }
  return {
    address,
    namespace,
    uiUrl,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    process: server.process,
    stop: () => server.stop(),
  };
}
