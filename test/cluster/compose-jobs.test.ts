/**
 * docker-compose.yml's own commands, run without containers against the cluster tier's
 * PostgreSQL and Temporal (`npm run test:cluster` only): its schema and setup jobs are safe to run
 * again (a second `docker compose up`), and the compose services — schema job, the Temporal server
 * started from the compose environment as its image starts it, setup job — come up on a fresh
 * database at the first try. Only addresses change: loopback and free ports for the container
 * network and the fixed ports.
 */
import { searchAttributeDefinitions } from '../../contract/order';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { findTemporalServer, type TemporalServerInstall } from '../../src/temporal/server-install';
import { freePortBetween, startServerProcess, waitUntilServing } from '../../src/temporal/process';
import { queryPostgres, startPrivatePostgres, type PostgresAddress } from '../../scripts/cluster/postgres';
import {
  projectRoot,
  readComposeServices,
  runComposeSchemaJob,
  runComposeSetupJob,
  type ComposeService,
} from '../../scripts/lib/compose';

const vars = {
  POSTGRES_PASSWORD: 'temporal',
  API_CLIENTS_FILE: './clients.yaml',
  CODEC_AUTH_TOKENS: randomBytes(16).toString('hex'),
  GRAFANA_ADMIN_PASSWORD: randomBytes(16).toString('hex'),
  PAYLOAD_ENCRYPTION_KEYS: `t:${randomBytes(32).toString('base64')}`,
};
const services = readComposeServices(vars);

/** The newest schema version the admin-tools image (and our install) carries for a database. */
function newestSchemaVersion(install: TemporalServerInstall, dir: 'temporal' | 'visibility'): string {
  const versions = readdirSync(join(install.postgresSchemaDir, dir, 'versioned')).map((v) => v.slice(1));
  const key = (v: string) => v.split('.').map(Number) as [number, number];
  return versions.sort((a, b) => key(b)[0] - key(a)[0] || key(b)[1] - key(a)[1])[0]!;
}

const runSchemaJob = (install: TemporalServerInstall, pg: PostgresAddress) =>
  runComposeSchemaJob(services, install, pg);
const runSetupJob = (address: string) => runComposeSetupJob(services, address);

function schemaVersions(pg: PostgresAddress): Record<string, string> {
  return Object.fromEntries(
    ['temporal', 'temporal_visibility'].map((db) => [
      db,
      queryPostgres(pg, 'SELECT curr_version FROM schema_version', db),
    ]),
  );
}

describe("docker-compose.yml's commands on a real PostgreSQL and Temporal", () => {
  let install: TemporalServerInstall;
  let tierPostgres: PostgresAddress;

  before(() => {
    const found = findTemporalServer();
    const pg = process.env.TEST_CLUSTER_POSTGRES;
    assert.ok(found && pg && process.env.TEST_TEMPORAL_ADDRESS, 'run these with npm run test:cluster');
    install = found;
    tierPostgres = JSON.parse(pg) as PostgresAddress;
  });

  it('the schema job, run again on the set-up database (a second `up`), succeeds and leaves the newest schema', () => {
    const job = runSchemaJob(install, tierPostgres);
    assert.equal(job.status, 0, job.output);
    assert.deepEqual(schemaVersions(tierPostgres), {
      temporal: newestSchemaVersion(install, 'temporal'),
      temporal_visibility: newestSchemaVersion(install, 'visibility'),
    });
  });

  it('the setup job, run again, succeeds and changes nothing', () => {
    const job = runSetupJob(process.env.TEST_TEMPORAL_ADDRESS!);
    assert.equal(job.status, 0, job.output);
    assert.match(
      job.output,
      /"namespaceCreated":false,"retentionChanged":false,"searchAttributesAdded":\[\]/,
    );
  });

  describe('the compose services on a fresh database: schema job, Temporal as its image starts it, setup job', () => {
    let pg: Awaited<ReturnType<typeof startPrivatePostgres>> | undefined;
    let stopServer: (() => Promise<void>) | undefined;

    after(async () => {
      await stopServer?.();
      await pg?.stop();
    });

    it('come up at the first try, and the setup job registers what the service needs', async () => {
      pg = await startPrivatePostgres({ password: vars.POSTGRES_PASSWORD });
      const schema = runSchemaJob(install, pg);
      assert.equal(schema.status, 0, schema.output);

      // The image's entrypoint is `exec temporal-server start`, configured by the environment.
      const temporal: ComposeService = services.temporal!;
      const env = temporal.environment!;
      const [hostDir, containerDir] = temporal.volumes![0]!.split(':');
      const port = () => freePortBetween(20_000, 32_767).then(String);
      const frontendPort = await port();
      const local: Record<string, string> = {
        POSTGRES_SEEDS: pg.host,
        DB_PORT: String(pg.port),
        BIND_ON_IP: '127.0.0.1',
        TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
        DYNAMIC_CONFIG_FILE_PATH: join(
          projectRoot,
          hostDir!,
          env.DYNAMIC_CONFIG_FILE_PATH!.slice(containerDir!.length),
        ),
        FRONTEND_GRPC_PORT: frontendPort,
        FRONTEND_HTTP_PORT: await port(),
        FRONTEND_MEMBERSHIP_PORT: await port(),
        HISTORY_GRPC_PORT: await port(),
        HISTORY_MEMBERSHIP_PORT: await port(),
        MATCHING_GRPC_PORT: await port(),
        MATCHING_MEMBERSHIP_PORT: await port(),
        WORKER_GRPC_PORT: await port(),
        WORKER_MEMBERSHIP_PORT: await port(),
      };
      const logFile = join(pg.dir, 'temporal-compose.log');
      const server = startServerProcess({
        name: 'temporal (compose environment)',
        command: install.serverBin,
        args: ['start'],
        env: { PATH: process.env.PATH ?? '', ...env, ...local },
        output: { file: logFile },
      });
      stopServer = () => server.stop();
      const address = `127.0.0.1:${frontendPort}`;
      await waitUntilServing(
        server,
        async () => {
          const connection = await Connection.connect({ address, connectTimeout: 1_000 });
          try {
            await connection.workflowService.getSystemInfo({});
          } finally {
            await connection.close();
          }
        },
        { timeoutMs: 120_000 },
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}; server log: ${logFile}`);
      });
      const connection = await Connection.connect({ address });
      try {
        const info = await connection.workflowService.getClusterInfo({});
        assert.equal(String(info.historyShardCount), env.NUM_HISTORY_SHARDS, 'the shard count compose sets');
      } finally {
        await connection.close();
      }

      const setup = runSetupJob(address);
      assert.equal(setup.status, 0, setup.output);
      assert.match(setup.output, /"namespaceCreated":true/);
      assert.ok(
        setup.output.includes(
          `"searchAttributesAdded":${JSON.stringify(Object.keys(searchAttributeDefinitions))}`,
        ),
        setup.output,
      );
    });
  });
});
