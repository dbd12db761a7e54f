/**
 * `npm run bench`: throughput, latency and cost of the order service against baselines measured in
 * the same run on the same Temporal server; `npm run bench -- --scale 10000`: many orders in flight
 * at once at the spec's full timings. Prints a table and writes bench-results/bench-<time>.json.
 *
 * Starts its own stack on free loopback ports (or uses a running one, see --help) and stops
 * everything it started at the end, on an error and on Ctrl-C. It only reports: timings on a
 * shared 2-core machine are too noisy to assert anything on.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { projectRoot } from './lib/processes';
import { parseBenchArgs, usage, type BenchOptions } from './bench/args';
import { ProcMonitor } from './bench/proc';
import { addProviderLatency } from './bench/sandbox-admin';
import {
  formatComparison,
  formatNormal,
  formatScale,
  normalTargets,
  webhookFairnessLines,
} from './bench/report';
import type { NormalReport } from './bench/run-normal';
import { runNormal } from './bench/run-normal';
import { runScale } from './bench/run-scale';
import { formatNoisy, runNoisy, type NoisyReport } from './bench/run-noisy';
import {
  formatNoisyReconcile,
  runNoisyReconcile,
  type NoisyReconcileReport,
} from './bench/run-noisy-reconcile';
import { fairnessDynamicConfig } from '../src/temporal/dev-server';
import { runWebhookFairnessPart } from './bench/run-webhook-fairness';
import { formatProviderPace, runProviderPace } from './bench/run-provider-pace';
import { startStack } from './bench/stack';
import { formatReaders, READERS_VARIANTS, runReaders, type ReadersReport } from './bench/run-readers';
import { Launcher } from './lib/stack';

function log(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

/** Everything the bench starts; stopped at the end of the run, on an error and on Ctrl-C / SIGTERM. */
const launcher = new Launcher({ output: 'none', log });

function gitRevision(): string | undefined {
  try {
    const rev = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: projectRoot,
      encoding: 'utf8',
    }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain'], {
      cwd: projectRoot,
      encoding: 'utf8',
    }).trim();
    return dirty ? `${rev}+changes` : rev;
  } catch {
    return undefined;
  }
}

function timestamp(date: Date): string {
  return date.toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
}

/** A fresh stack for one run of a part, with a client and a process monitor that the launcher stops. */
async function startRun(runLauncher: Launcher, options: BenchOptions, runId: string) {
  const stack = await startStack(runLauncher, options, runId, { withBaselineWorker: false, log });
  const connection = await Connection.connect(stack.connectionOptions);
  runLauncher.onStop('bench client connection', () => connection.close());
  const client = new Client({ connection, namespace: stack.namespace, dataConverter: stack.dataConverter });
  const monitor = new ProcMonitor({
    worker: stack.pids.worker,
    api: stack.pids.api,
    temporal: stack.pids.temporal,
  });
  runLauncher.onStop('monitor', async () => monitor.close());
  return { options, stack, client, monitor, runId, log };
}

/**
 * `--noisy N`: the noisy-neighbour run twice, each on a fresh stack of its own — Temporal with
 * fairness off (first come, first served), then on — and one table of both.
 */
async function noisyMain(options: BenchOptions): Promise<void> {
  const startedAt = new Date();
  const reports: NoisyReport[] = [];
  const reconciling: NoisyReconcileReport[] = [];
  // The reconciliation's priority and fairness key only mean something with fairness on.
  const runs =
    options.noisyReconcile !== undefined
      ? [true]
      : { both: [false, true], off: [false], on: [true] }[options.noisyFairness];
  for (const fairness of runs) {
    const runLauncher = new Launcher({ output: 'none', log });
    const runId = `${Date.now().toString(36)}${fairness ? 'f' : 'n'}`;
    const off = Object.fromEntries(Object.keys(fairnessDynamicConfig).map((key) => [key, false]));
    const runOptions = { ...options, serverConfig: { ...options.serverConfig, ...(fairness ? {} : off) } };
    try {
      const ctx = await startRun(runLauncher, runOptions, runId);
      if (options.noisyReconcile !== undefined) reconciling.push(await runNoisyReconcile(ctx));
      else reports.push(await runNoisy(ctx, fairness));
    } finally {
      await runLauncher.stop();
    }
  }
  const header = [
    '',
    `bench --noisy ${timestamp(startedAt)}${options.label ? ` “${options.label}”` : ''} — git ${gitRevision() ?? 'n/a'}, ` +
      `${cpus().length} cores, load average at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; time scale ${options.timeScale}, mix ${options.mix.join('/')}`,
  ];
  process.stdout.write(
    `${reconciling[0] ? formatNoisyReconcile(reconciling[0], header) : formatNoisy(reports, header)}\n`,
  );
  const outDir = resolve(projectRoot, options.outDir);
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `bench-${timestamp(startedAt)}-noisy.json`);
  writeFileSync(
    file,
    JSON.stringify(
      { startedAt: startedAt.toISOString(), git: gitRevision(), reports: [...reports, ...reconciling] },
      null,
      2,
    ),
  );
  log(`results written to ${file}`);
}

/**
 * `--part readers`: reads that scale (issue 32 part 4), each variant (before / after, …) on a fresh
 * stack of its own, since the dev server's visibility limits are set at its start.
 */
async function readersMain(options: BenchOptions): Promise<void> {
  const startedAt = new Date();
  const reports: ReadersReport[] = [];
  for (const name of options.readersVariants) {
    const variant = READERS_VARIANTS[name]!;
    const runLauncher = new Launcher({ output: 'none', log });
    const runId = `${Date.now().toString(36)}r`;
    // The variant's server limits, or ours with --server-config on top; its API environment last.
    const serverConfig = Object.keys(variant.serverConfig).length
      ? variant.serverConfig
      : options.serverConfig;
    const runOptions = { ...options, serverConfig, partEnv: { ...options.partEnv, ...variant.apiEnv } };
    try {
      reports.push(await runReaders(await startRun(runLauncher, runOptions, runId), variant));
    } finally {
      await runLauncher.stop();
    }
  }
  const header = [
    '',
    `bench --part readers ${timestamp(startedAt)}${options.label ? ` “${options.label}”` : ''} — git ${gitRevision() ?? 'n/a'}, ` +
      `${cpus().length} cores, load average at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; time scale ${options.timeScale}`,
  ];
  process.stdout.write(`${formatReaders(reports, header)}\n`);
  const outDir = resolve(projectRoot, options.outDir);
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `bench-${timestamp(startedAt)}-readers.json`);
  writeFileSync(
    file,
    JSON.stringify({ startedAt: startedAt.toISOString(), git: gitRevision(), reports }, null, 2),
  );
  log(`results written to ${file}`);
}

async function main(options: BenchOptions): Promise<void> {
  if (options.noisy !== undefined) return noisyMain(options);
  if (options.part === 'readers') return readersMain(options);
  const startedAt = new Date();
  const runId = Date.now().toString(36);
  launcher.stopOnSignals();

  const stack = await startStack(launcher, options, runId, {
    withBaselineWorker: options.scale === undefined && options.part === undefined,
    log,
    // The provider-pace part's baseline: the same worker, orders started with the polling of before.
    ...(options.part === 'provider-pace' && { baselineApiEnv: { POLL_INTERVAL_MS: '0' } }),
  });
  const connection = await Connection.connect(stack.connectionOptions);
  launcher.onStop('bench client connection', () => connection.close());
  const client = new Client({ connection, namespace: stack.namespace, dataConverter: stack.dataConverter });
  const monitor = new ProcMonitor({
    worker: stack.pids.worker,
    api: stack.pids.api,
    temporal: stack.pids.temporal,
    'baseline-worker': stack.pids.baselineWorker,
    sandbox: stack.pids.sandbox,
    bench: process.pid,
  });
  launcher.onStop('monitor', async () => monitor.close());

  if (options.providerLatencyMs > 0) await addProviderLatency(stack.sandbox, options.providerLatencyMs);
  const ctx = { options, stack, client, monitor, runId, log };
  if (options.part === 'provider-pace') {
    const pace = await runProviderPace(ctx);
    const line = `bench --part provider-pace ${timestamp(startedAt)}${options.label ? ` “${options.label}”` : ''} — git ${gitRevision() ?? 'n/a'}, ${cpus().length} cores, load average at the end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`;
    process.stdout.write(`${formatProviderPace(pace, ['', line])}\n`);
    const outDir = resolve(projectRoot, options.outDir);
    mkdirSync(outDir, { recursive: true });
    const file = join(outDir, `bench-${timestamp(startedAt)}-provider-pace.json`);
    writeFileSync(
      file,
      JSON.stringify({ startedAt: startedAt.toISOString(), git: gitRevision(), pace }, null, 2),
    );
    log(`results written to ${file}`);
    return;
  }
  if (options.part === 'webhook-fairness') {
    const fair = await runWebhookFairnessPart(ctx);
    const line = `bench --part webhook-fairness ${timestamp(startedAt)}${options.label ? ` “${options.label}”` : ''} — git ${gitRevision() ?? 'n/a'}, load average at the end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`;
    process.stdout.write(`\n${line}\n${fair ? webhookFairnessLines(fair).join('\n') : ''}\n`);
    const outDir = resolve(projectRoot, options.outDir);
    mkdirSync(outDir, { recursive: true });
    const file = join(outDir, `bench-${timestamp(startedAt)}-webhook-fairness.json`);
    writeFileSync(
      file,
      JSON.stringify({ startedAt: startedAt.toISOString(), git: gitRevision(), fair }, null, 2),
    );
    log(`results written to ${file}`);
    return;
  }
  const report = options.scale === undefined ? await runNormal(ctx) : await runScale(ctx);

  const header = [
    '',
    `bench ${timestamp(startedAt)}${options.label ? ` “${options.label}”` : ''} — git ${gitRevision() ?? 'n/a'}, ` +
      `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, load average at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    `${options.scale ?? options.orders} orders${options.scale === undefined && options.rounds > 1 ? ` × ${options.rounds} rounds` : ''}, concurrency ${options.concurrency}, time scale ${options.timeScale}, mix ${options.mix.join('/')}` +
      `${options.isolateIntake ? ', workers frozen while submitting (--isolate-intake)' : ''}` +
      `${options.providerLatencyMs ? `, provider latency ${options.providerLatencyMs} ms` : ''}`,
    `stack: ${stack.started.length ? `started ${stack.started.join(', ')}` : 'given'}; Temporal ${stack.temporalAddress}; API ${stack.apiUrl}`,
    `parts' environment: ${Object.entries(stack.partEnv)
      .filter(([k]) => !k.startsWith('API_RATE'))
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  ];
  const text = report.kind === 'normal' ? formatNormal(report, header) : formatScale(report, header);
  process.stdout.write(`${text}\n`);

  const outDir = resolve(projectRoot, options.outDir);
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `bench-${timestamp(startedAt)}${report.kind === 'scale' ? '-scale' : ''}.json`);
  const json = {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    label: options.label,
    git: gitRevision(),
    machine: { cores: cpus().length, memoryGiB: totalmem() / 2 ** 30, loadavgAtEnd: loadavg() },
    options: { ...options, apiKey: options.apiKey ? '[set]' : undefined, sandboxAdminToken: undefined },
    stack: {
      temporalAddress: stack.temporalAddress,
      apiUrl: stack.apiUrl,
      started: stack.started,
      partEnv: stack.partEnv,
    },
    ...(report.kind === 'normal' ? { targets: normalTargets(report) } : {}),
    report,
  };
  writeFileSync(file, JSON.stringify(json, null, 2));
  log(`results written to ${file}`);
}

let options: BenchOptions | 'help';
try {
  options = parseBenchArgs(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n\n${usage}`);
  process.exit(2);
}
if (options === 'help') {
  process.stdout.write(usage);
} else if (options.compare.length > 0) {
  try {
    const runs = options.compare.map((file) => {
      const saved = JSON.parse(readFileSync(file, 'utf8')) as { label?: string; report?: NormalReport };
      if (saved.report?.kind !== 'normal') throw new Error(`${file}: not the JSON of a normal bench run`);
      return { file: basename(file), label: saved.label, report: saved.report };
    });
    process.stdout.write(`${formatComparison(runs)}\n`);
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
  }
} else {
  main(options)
    .then(
      () => launcher.stop(),
      async (err: unknown) => {
        // After Ctrl-C the parts stop under the run's feet: the signal handler exits, quietly.
        if (launcher.stopping) return new Promise<never>(() => {});
        log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
        process.exitCode = 1;
        await launcher.stop();
      },
    )
    .finally(() => process.exit());
}
