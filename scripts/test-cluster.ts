/**
 * `npm run test:cluster`: the service on Temporal as production runs it, without containers.
 *
 * 1. the pinned Temporal server and temporal-sql-tool, built once into .tools/ (src/temporal/server-install.ts);
 * 2. the build the Docker image makes (`npm run build && npm run build:bundle`);
 * 3. a private PostgreSQL (scripts/cluster/postgres.ts) whose schemas are set up by
 *    docker-compose.yml's own `temporal-schema` job script, on the fresh database;
 * 4. Temporal as four services — frontend, history, matching, worker — on it, with the compose
 *    file's history shard count (scripts/cluster/temporal-cluster.ts);
 * 5. docker-compose.yml's own `temporal-setup` job command (namespace, retention, search attributes);
 * 6. the test files under test/cluster/ and the ones that run on both servers (CLUSTER_TEST_FILES);
 * 7. the rainbow deploy: a Worker Deployment's v1 holds orders in every phase (sending, polling,
 *    HELD, QUEUED, in review, watching) while v2 (a workflow change with no patch, in a second
 *    bundle) ramps to 10 % then becomes current; v1 is retired once Temporal reports it drained;
 *    then the rollback (v1 current again). No non-determinism error, none lost, none sent twice,
 *    no pinned run moved, each old version drained (scripts/cluster/rainbow-deploy.ts);
 * 8. the end-to-end run: a few hundred orders of every type through two API instances and two
 *    workers (one compiled as the image runs it), one worker SIGKILLed and the history service
 *    restarted mid-run, the provider misbehaving; every order must end final or in review and none
 *    may be sent twice (scripts/chaos/, the same checks as `npm run chaos`);
 * 9. the faults of a real deployment under load: each Temporal service SIGKILLed and restarted,
 *    PostgreSQL restarted and stopped, a worker's link to Temporal and to the provider cut (in a
 *    network namespace of its own), a worker with its clock 3 minutes off (scripts/cluster/faults.ts);
 *    short outages here, 60 s ones with --long.
 *
 * `npm run test:cluster -- listing` runs only matching test files; --skip-e2e / --e2e-only /
 * --rainbow-only / --faults-only / --skip-faults pick a part; --long runs the faults' long version,
 * --fault NAME (repeatable) only the faults named, --keep keeps the fault run's part logs.
 * The figures go to the terminal and to bench-results/cluster-<time>.json.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultChaosOptions } from './chaos/options';
import { runChaos } from './chaos/run';
import { formatSummary } from './chaos/summary';
import { startPrivatePostgres, type PrivatePostgres } from './cluster/postgres';
import { runRainbowDeploy } from './cluster/rainbow-deploy';
import { formatRainbowDeploy, rainbowProblems, type RainbowDeploySummary } from './cluster/rainbow-verdict';
import { startTemporalCluster, type TemporalCluster } from './cluster/temporal-cluster';
import { runFaults, type FaultRunSummary } from './cluster/faults';
import { formatFaultTable } from './cluster/fault-verdict';
import { readComposeServices, runComposeSchemaJob, runComposeSetupJob } from './lib/compose';
import { projectRoot, runTestFiles, testFiles } from './lib/test-files';
import { ensureTemporalServer } from '../src/temporal/server-install';

/** Files outside test/cluster/ that also run here: what differs between the dev server and SQL visibility on PostgreSQL. */
export const CLUSTER_TEST_FILES = [
  'test/orders/order-list.test.ts',
  'test/api/readiness.test.ts',
  // The server as deployed (its dynamic config, four partitions per queue) honours fairness.
  'test/temporal/fairness-probe.test.ts',
];
const E2E_NAMESPACE = 'e2e';
const E2E_SEED = Number(process.env.CLUSTER_E2E_SEED ?? 20_251_123);
const FAULTS_NAMESPACE = 'faults';

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s`;
const log = (line: string) => console.error(`[cluster ${elapsed()}] ${line}`);
const timings: [string, number][] = [];

async function timed<T>(label: string, fn: () => Promise<T> | T): Promise<T> {
  const t = Date.now();
  log(`${label}…`);
  const result = await fn();
  timings.push([label, Date.now() - t]);
  return result;
}

function npmRun(script: string): void {
  const result = spawnSync('npm', ['run', '--silent', script], { cwd: projectRoot, stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`npm run ${script} failed`);
}

/** Samples PostgreSQL's client connections, for the production checklist's sizing. */
function watchConnections(pg: PrivatePostgres): { peak: () => number; stop: () => void } {
  let peak = 0;
  const sample = () => {
    try {
      const n = Number(
        pg.query("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"),
      );
      peak = Math.max(peak, n);
    } catch {
      // PostgreSQL is stopping; the samples so far stand.
    }
  };
  sample();
  const timer = setInterval(sample, 2_000);
  return { peak: () => peak, stop: () => clearInterval(timer) };
}

function databaseBytes(pg: PrivatePostgres): number {
  return Number(pg.query("SELECT pg_database_size('temporal') + pg_database_size('temporal_visibility')"));
}

/** The run's figures, for the docs to point at instead of copying them (bench-results/ is not committed). */
function writeReport(figures: object): string {
  const dir = join(projectRoot, 'bench-results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `cluster-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(figures, null, 2)}\n`);
  return file;
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: {
      'skip-e2e': { type: 'boolean' },
      'e2e-only': { type: 'boolean' },
      'rainbow-only': { type: 'boolean' },
      'faults-only': { type: 'boolean' },
      'skip-faults': { type: 'boolean' },
      long: { type: 'boolean' },
      fault: { type: 'string', multiple: true },
      keep: { type: 'boolean' },
    },
    allowPositionals: true,
  });
  const runDir = mkdtempSync(join(tmpdir(), 'topup-cluster-'));
  const install = await timed('Temporal server (install once into .tools/)', () => ensureTemporalServer(log));
  log(`Temporal server ${install.version}: ${install.serverBin}`);
  await timed('the Docker image build (npm run build && npm run build:bundle)', () => {
    npmRun('build');
    npmRun('build:bundle');
  });

  const encryptionKey = randomBytes(32).toString('base64');
  const services = readComposeServices({
    POSTGRES_PASSWORD: 'temporal',
    API_CLIENTS_FILE: './clients.yaml',
    CODEC_AUTH_TOKENS: randomBytes(16).toString('hex'),
    GRAFANA_ADMIN_PASSWORD: randomBytes(16).toString('hex'),
    PAYLOAD_ENCRYPTION_KEYS: `cluster:${encryptionKey}`,
  });

  let pg: PrivatePostgres | undefined;
  let cluster: TemporalCluster | undefined;
  let connections: ReturnType<typeof watchConnections> | undefined;
  let failed = false;
  let storage: string | undefined;
  let rainbow: { summary: RainbowDeploySummary; problems: string[]; text: string } | undefined;
  let e2eFigures: object | undefined;
  let faults: { summary: FaultRunSummary; text: string } | undefined;
  const only = values['e2e-only'] || values['rainbow-only'] || values['faults-only'];
  try {
    pg = await timed('a private PostgreSQL', () => startPrivatePostgres({ password: 'temporal' }));
    log(`PostgreSQL on ${pg.host}:${pg.port} (${pg.dir})`);
    connections = watchConnections(pg);
    const postgres = pg;

    await timed("docker-compose.yml's temporal-schema job, on the fresh database", () => {
      const job = runComposeSchemaJob(services, install, postgres);
      if (job.status !== 0) throw new Error(`the temporal-schema job failed:\n${job.output}`);
    });

    const shards = Number(services.temporal?.environment?.NUM_HISTORY_SHARDS);
    cluster = await timed(`Temporal: frontend, history, matching and worker (${shards} history shards)`, () =>
      startTemporalCluster({ serverBin: install.serverBin, postgres, dir: runDir, numHistoryShards: shards }),
    );
    log(`Temporal frontend at ${cluster.address}; service logs in ${runDir}`);
    const address = cluster.address;

    await timed("docker-compose.yml's temporal-setup job", () => {
      const job = runComposeSetupJob(services, address);
      if (job.status !== 0) throw new Error(`the temporal-setup job failed:\n${job.output}`);
    });

    if (!only) {
      const files = [...testFiles(join(projectRoot, 'test', 'cluster')), ...CLUSTER_TEST_FILES].filter(
        (f) => positionals.length === 0 || positionals.some((x) => f.includes(x)),
      );
      const code = await timed(`test files: ${files.join(', ')}`, () =>
        runTestFiles(files, {
          TEST_TEMPORAL_ADDRESS: address,
          TEST_TEMPORAL_SERVER: 'cluster',
          TEST_WORKFLOW_BUNDLE_PATH: join(projectRoot, 'dist', 'workflow-bundle.js'),
          TEST_CLUSTER_POSTGRES: JSON.stringify({
            host: postgres.host,
            port: postgres.port,
            user: postgres.user,
            password: postgres.password,
          }),
        }),
      );
      if (code !== 0) failed = true;
    }

    if (!values['e2e-only'] && !values['faults-only'] && positionals.length === 0) {
      const summary = await timed(
        'rainbow deploy: v2 ramps and becomes current, v1 drains; the rollback',
        () =>
          runRainbowDeploy({
            address,
            namespace: 'default',
            oldBundlePath: join(projectRoot, 'dist', 'workflow-bundle.js'),
            log,
          }),
      );
      const problems = rainbowProblems(summary);
      rainbow = { summary, problems, text: formatRainbowDeploy(summary) };
      console.error(rainbow.text);
      for (const problem of problems) console.error(`rainbow deploy: ${problem}`);
      if (problems.length > 0) failed = true;
    }

    if (
      !values['skip-e2e'] &&
      !values['rainbow-only'] &&
      !values['faults-only'] &&
      positionals.length === 0
    ) {
      const temporalCluster = cluster;
      const sizeBefore = databaseBytes(postgres);
      const summary = await timed('end to end: orders through two APIs and two workers', () =>
        runChaos(
          defaultChaosOptions({
            orders: 300,
            concurrency: 8,
            durationMs: 60_000,
            workers: 2,
            builtWorkers: 1,
            apis: 2,
            killEveryMs: 25_000,
            maxKills: 1,
            temporalRestarts: 1,
            faultPhaseMs: 4_000,
            settleTimeoutMs: 240_000,
            seed: E2E_SEED,
          }),
          {
            log,
            temporal: {
              address,
              namespace: E2E_NAMESPACE,
              restart: () => temporalCluster.restart('history'),
            },
          },
        ),
      );
      e2eFigures = {
        accepted: summary.submissions.accepted,
        lost: summary.lost,
        sentTwice: summary.sentTwice,
        problems: summary.problems,
      };
      console.error(formatSummary(summary));
      const grown = databaseBytes(postgres) - sizeBefore;
      storage = `PostgreSQL grew ${(grown / 1e6).toFixed(1)} MB for the end-to-end run's ${summary.submissions.accepted} orders (≈ ${Math.round(grown / Math.max(1, summary.submissions.accepted) / 1024)} KiB per order, history and visibility)`;
      if (summary.problems.length > 0 || summary.lost > 0 || summary.sentTwice > 0) failed = true;
    }

    const runFaultsPart =
      !values['skip-faults'] &&
      !values['e2e-only'] &&
      !values['rainbow-only'] &&
      (positionals.length === 0 || values['faults-only']);
    if (runFaultsPart) {
      const temporalCluster = cluster;
      const summary = await timed(`faults under load (${values.long ? 'long: 60 s outages' : 'short'})`, () =>
        runFaults({
          address,
          namespace: FAULTS_NAMESPACE,
          cluster: temporalCluster,
          postgres,
          long: values.long ?? false,
          seed: E2E_SEED,
          ...(values.fault && { only: values.fault }),
          keep: values.keep ?? false,
          log,
        }),
      );
      faults = { summary, text: formatFaultTable(summary.faults, summary.baselineP99Ms) };
      console.error(faults.text);
      for (const problem of summary.problems) console.error(`faults: ${problem}`);
      if (summary.problems.length > 0) failed = true;
    }
  } catch (err) {
    failed = true;
    console.error(err instanceof Error ? err.message : err);
  } finally {
    connections?.stop();
    await cluster?.stop();
    await pg?.stop();
  }

  console.error(`\n=== cluster tier (Temporal ${install.version} on PostgreSQL, four services) ===`);
  for (const [label, ms] of timings) console.error(`  ${(ms / 1000).toFixed(1).padStart(7)} s  ${label}`);
  if (connections) console.error(`  PostgreSQL client connections, peak: ${connections.peak()}`);
  if (storage) console.error(`  ${storage}`);
  if (rainbow) console.error(rainbow.text.replace(/^/gm, '  '));
  if (faults) console.error(faults.text.replace(/^/gm, '  '));
  console.error(`  total ${elapsed().trim()}; ${failed ? 'FAILED' : 'PASSED'}`);
  const reportFile = writeReport({
    temporal: install.version,
    passed: !failed,
    totalMs: Date.now() - started,
    timings: Object.fromEntries(timings),
    ...(connections && { postgresConnectionsPeak: connections.peak() }),
    ...(storage && { storage }),
    ...(rainbow && { rainbowDeploy: { ...rainbow.summary, problems: rainbow.problems } }),
    ...(e2eFigures && { endToEnd: e2eFigures }),
    ...(faults && { faults: faults.summary }),
  });
  console.error(`  figures written to ${reportFile}`);
  if (failed) console.error(`  Temporal service logs kept in ${runDir}`);
  else rmSync(runDir, { recursive: true, force: true });
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
