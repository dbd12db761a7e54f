/**
 * Temporal as a production deployment runs it: four services — frontend, history, matching and
 * worker — as separate `temporal-server` processes on PostgreSQL (default store and SQL
 * visibility), each on its own loopback ports, sharing one config file written here.
 *
 * Start order: on a fresh database the first service to start writes the cluster metadata; four
 * starting at once race on that insert and one exits. So the frontend starts alone, and the others
 * start once it serves (its metadata is written by then).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import { parse, stringify } from 'yaml';
import {
  freePortBetween,
  startServerProcess,
  waitUntilServing,
  type ServerProcess,
} from '../../src/temporal/process';
import { grpcCode, GrpcStatus } from '../../src/temporal/grpc';
import type { PrivatePostgres } from './postgres';

export const TEMPORAL_SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;
export type TemporalService = (typeof TEMPORAL_SERVICES)[number];

export interface TemporalClusterOptions {
  serverBin: string;
  postgres: Pick<PrivatePostgres, 'host' | 'port' | 'user' | 'password'>;
  /** Where the config file and one log per service go. */
  dir: string;
  /** Fixed for the life of the database: the first start writes it. */
  numHistoryShards: number;
  /** Databases created by the schema job (docker-compose.yml's names by default). */
  databases?: { default: string; visibility: string };
  /** Connections each service may open to each store (the server's own defaults: 20 and 10). */
  maxConns?: { default: number; visibility: number };
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  startupTimeoutMs?: number;
}

export interface TemporalCluster {
  /** The frontend's gRPC address: what clients, workers and the API connect to. */
  address: string;
  configFile: string;
  logFile(service: TemporalService): string;
  /** Stops one service and starts it again on the same ports (a deploy, a crash and restart). */
  restart(service: TemporalService): Promise<void>;
  /** Whether the service's process is up (it may have exited on its own). */
  running(service: TemporalService): boolean;
  /** SIGKILLs one service (a crash: no drain, no handing over of shards or partitions). */
  killService(service: TemporalService): Promise<void>;
  /** Stops one service (an outage of that part of Temporal). */
  stopService(service: TemporalService): Promise<void>;
  /** Starts a stopped service again and waits until it serves. */
  startService(service: TemporalService): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Temporal records each service's ports in cluster_membership, a PostgreSQL smallint: a port from
 * the kernel's ephemeral range (32768 and up) makes the service exit at start.
 */
const MIN_PORT = 20_000;
const MAX_PORT = 32_767;

interface ServicePorts {
  grpcPort: number;
  membershipPort: number;
  httpPort?: number;
}

/** docker-compose.yml's dynamic config (fairness on): the cluster tier runs the server as deployed. */
export const dynamicConfigFile = resolve(
  __dirname,
  '..',
  '..',
  'deploy',
  'temporal',
  'dynamicconfig',
  'dynamicconfig.yaml',
);

/**
 * What the tier sets on top of the compose file's dynamic config, each for every namespace.
 * Worker Versioning needs nothing (on 1.32 its flags default on: see dynamicconfig.yaml); only the
 * drainage of a version is sped up. Temporal reports a version that stopped being current as
 * draining, and checks whether pinned runs still use it by a visibility count: first after
 * `VersionDrainageStatusVisibilityGracePeriod` (3 min by default, for visibility to catch up with
 * the runs' versions), then every `VersionDrainageStatusRefreshInterval` (3 min). The rainbow
 * deploy waits for "drained" before it retires a version, so at the defaults it would wait 3 to 6
 * minutes per switch; SQL visibility on loopback lags by well under a second, so 5 s of grace
 * keeps the count honest, and a check every 2 s reports the drain within 2 s of it.
 */
export const tierDynamicConfig: Record<string, unknown> = {
  'matching.wv.VersionDrainageStatusVisibilityGracePeriod': [{ value: '5s', constraints: {} }],
  'matching.wv.VersionDrainageStatusRefreshInterval': [{ value: '2s', constraints: {} }],
};

/** The compose file's dynamic config with the tier's settings over it, written into `dir`. */
export function writeTierDynamicConfig(dir: string): string {
  const composed = (parse(readFileSync(dynamicConfigFile, 'utf8')) ?? {}) as Record<string, unknown>;
  const file = join(dir, 'dynamicconfig.yaml');
  writeFileSync(file, stringify({ ...composed, ...tierDynamicConfig }));
  return file;
}

/** The server's configuration (config/development-postgres12.yaml's shape), every address on loopback. */
export function clusterConfig(
  options: TemporalClusterOptions,
  ports: Record<TemporalService, ServicePorts>,
  dynamicConfig: string = dynamicConfigFile,
): object {
  const { postgres } = options;
  const databases = options.databases ?? { default: 'temporal', visibility: 'temporal_visibility' };
  const maxConns = options.maxConns ?? { default: 20, visibility: 10 };
  const store = (databaseName: string, conns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${postgres.host}:${postgres.port}`,
      connectProtocol: 'tcp',
      user: postgres.user,
      password: postgres.password,
      maxConns: conns,
      maxIdleConns: conns,
      maxConnLifetime: '1h',
    },
  });
  const frontend = ports.frontend;
  return {
    log: { stdout: true, level: options.logLevel ?? 'warn' },
    persistence: {
      numHistoryShards: options.numHistoryShards,
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      datastores: {
        'postgres-default': store(databases.default, maxConns.default),
        'postgres-visibility': store(databases.visibility, maxConns.visibility),
      },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      pprof: { port: 0 },
    },
    services: Object.fromEntries(
      TEMPORAL_SERVICES.map((service) => [service, { rpc: { ...ports[service], bindOnLocalHost: true } }]),
    ),
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: `127.0.0.1:${frontend.grpcPort}`,
          httpAddress: `127.0.0.1:${frontend.httpPort}`,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: dynamicConfig, pollInterval: '60s' },
  };
}

/** Calls `probe` with a fresh connection to the frontend. */
async function withFrontend(address: string, probe: (c: Connection) => Promise<unknown>): Promise<void> {
  const connection = await Connection.connect({ address, connectTimeout: 1_000 });
  try {
    await connection.withDeadline(Date.now() + 5_000, () => probe(connection));
  } finally {
    await connection.close();
  }
}

/** History answers: looking up a workflow that does not exist is a NOT_FOUND from the history service. */
async function historyAnswers(connection: Connection): Promise<void> {
  try {
    await connection.workflowService.describeWorkflowExecution({
      namespace: 'temporal-system',
      execution: { workflowId: 'cluster-start-probe' },
    });
  } catch (err) {
    if (grpcCode(err) === GrpcStatus.NOT_FOUND) return;
    throw err;
  }
}

/** Matching answers: describing a task queue (one nobody polls) is the matching service's. */
async function matchingAnswers(connection: Connection): Promise<void> {
  await connection.workflowService.describeTaskQueue({
    namespace: 'temporal-system',
    taskQueue: { name: 'cluster-start-probe' },
  });
}

export async function startTemporalCluster(options: TemporalClusterOptions): Promise<TemporalCluster> {
  const ports = {} as Record<TemporalService, ServicePorts>;
  const port = () => freePortBetween(MIN_PORT, MAX_PORT);
  for (const service of TEMPORAL_SERVICES) {
    ports[service] = { grpcPort: await port(), membershipPort: await port() };
  }
  ports.frontend.httpPort = await port();
  const configFile = join(options.dir, 'temporal-cluster.yaml');
  writeFileSync(configFile, stringify(clusterConfig(options, ports, writeTierDynamicConfig(options.dir))));
  const address = `127.0.0.1:${ports.frontend.grpcPort}`;
  const timeoutMs = options.startupTimeoutMs ?? 120_000;
  const logFile = (service: TemporalService) => join(options.dir, `temporal-${service}.log`);

  const processes = new Map<TemporalService, ServerProcess>();
  const launch = (service: TemporalService) => {
    const server = startServerProcess({
      name: `temporal ${service}`,
      command: options.serverBin,
      args: ['--config-file', configFile, '--allow-no-auth', 'start', '--service', service],
      output: { file: logFile(service) },
    });
    processes.set(service, server);
    return server;
  };
  const stop = async () => {
    // Clients first go away with the frontend last, so nothing in flight hits a missing service.
    for (const service of ['worker', 'matching', 'history', 'frontend'] as const) {
      await processes.get(service)?.stop();
    }
  };

  try {
    const frontend = launch('frontend');
    await waitUntilServing(
      frontend,
      () => withFrontend(address, (c) => c.workflowService.getSystemInfo({})),
      {
        timeoutMs,
      },
    );
    const others = (['history', 'matching', 'worker'] as const).map(launch);
    // Served once history owns its shards and the frontend reaches it.
    await waitUntilServing(others[0]!, () => withFrontend(address, historyAnswers), { timeoutMs });
    for (const server of others) {
      if (server.hasExited()) throw new Error(`${server.name} exited during start-up`);
    }
  } catch (err) {
    await stop();
    const logs = TEMPORAL_SERVICES.map(logFile).join(', ');
    throw new Error(`${err instanceof Error ? err.message : String(err)} (logs: ${logs})`);
  }

  /** Starts one service (again) and waits until it serves. */
  const startService = async (service: TemporalService) => {
    const server = launch(service);
    const probe =
      service === 'frontend'
        ? () => withFrontend(address, (c) => c.workflowService.getSystemInfo({}))
        : service === 'history'
          ? () => withFrontend(address, historyAnswers)
          : service === 'matching'
            ? () => withFrontend(address, matchingAnswers)
            : () => Promise.resolve();
    await waitUntilServing(server, probe, { timeoutMs });
  };

  return {
    address,
    configFile,
    logFile,
    running: (service) => {
      const server = processes.get(service);
      return server !== undefined && !server.hasExited();
    },
    killService: async (service) => {
      await processes.get(service)?.kill();
    },
    stopService: async (service) => {
      await processes.get(service)?.stop();
    },
    startService,
    restart: async (service) => {
      await processes.get(service)?.stop();
      await startService(service);
    },
    stop,
  };
}
