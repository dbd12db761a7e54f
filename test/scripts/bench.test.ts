/**
 * `npm run bench`: the statistics and flags it reports with, and one small run end to end as a
 * user starts it (its own Temporal dev server, sandbox, worker and API), so the command keeps
 * working. The run checks the JSON's shape and the figures that do not depend on machine speed.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { parseBenchArgs, type BenchOptions } from '../../scripts/bench/args';
import type { NormalReport } from '../../scripts/bench/run-normal';
import { percentile, ratio, summarize } from '../../scripts/bench/stats';
import { SPEC_PACE_CALLS } from '../../scripts/bench/report';
import { LEAN_ORDER_EVENTS } from '../helpers/orders';

const root = resolve(__dirname, '..', '..');

function parse(argv: string[], env: NodeJS.ProcessEnv = {}): BenchOptions {
  const options = parseBenchArgs(argv, env);
  assert.notEqual(options, 'help');
  return options as BenchOptions;
}

describe('bench statistics', () => {
  it('takes nearest-rank percentiles', () => {
    const oneToHundred = Array.from({ length: 100 }, (_, i) => i + 1);
    assert.deepEqual(
      [50, 95, 99, 100].map((p) => percentile(oneToHundred, p)),
      [50, 95, 99, 100],
    );
    assert.equal(percentile([7], 99), 7);
    assert.ok(Number.isNaN(percentile([], 50)));
    // Ten values: p95 and p99 are the largest, p50 the fifth.
    const s = summarize([10, 1, 9, 2, 8, 3, 7, 4, 6, 5]);
    assert.deepEqual(
      { min: s.min, p50: s.p50, p95: s.p95, p99: s.p99, max: s.max, mean: s.mean },
      { min: 1, p50: 5, p95: 10, p99: 10, max: 10, mean: 5.5 },
    );
  });

  it('gives no ratio against a missing or zero baseline', () => {
    assert.equal(ratio(50, 200), 0.25);
    assert.ok(Number.isNaN(ratio(50, 0)));
    assert.ok(Number.isNaN(ratio(Number.NaN, 10)));
  });
});

describe('bench flags', () => {
  it('defaults differ for the normal and the scale run', () => {
    const normal = parse([]);
    assert.deepEqual([normal.orders, normal.concurrency, normal.timeScale], [500, 16, 0.05]);
    const scale = parse(['--scale', '10000']);
    assert.deepEqual(
      [scale.scale, scale.concurrency, scale.timeScale, scale.waitTimeoutS],
      [10000, 64, 1, 1800],
    );
  });

  it('--noisy N: the noisy-neighbour run at the spec’s timings, mobile top-ups unless --mix says otherwise', () => {
    const noisy = parse(['--noisy', '600']);
    assert.deepEqual([noisy.noisy, noisy.timeScale, noisy.mix], [600, 1, ['mobile_topup']]);
    assert.deepEqual(parse(['--noisy', '600', '--mix', 'gift_card']).mix, ['gift_card']);
    assert.equal(parse([]).noisy, undefined);
    assert.throws(() => parse(['--noisy', '0']), /--noisy: expected a positive integer/);
  });

  it('--noisy-reconcile N: the day reconciled under the flood, only beside --noisy M', () => {
    const run = parse(['--noisy', '1000', '--noisy-reconcile', '2000']);
    assert.deepEqual([run.noisy, run.noisyReconcile, run.timeScale], [1000, 2000, 1]);
    assert.equal(parse(['--noisy', '1000']).noisyReconcile, undefined);
    assert.throws(() => parse(['--noisy-reconcile', '2000']), /--noisy-reconcile needs --noisy M/);
    assert.throws(
      () => parse(['--noisy', '1000', '--noisy-reconcile', 'x']),
      /--noisy-reconcile: expected a positive integer/,
    );
  });

  it('reads --env as text and --server-config as typed dynamic config', () => {
    const options = parse([
      '--env',
      'WORKER_MAX_CACHED_WORKFLOWS=500',
      '--server-config',
      'system.enableActivityEagerExecution=true',
      '--server-config',
      'history.timerProcessorMaxTimeShift=50ms',
      '--server-config',
      'limit.maxIDLength=600',
    ]);
    assert.deepEqual(options.partEnv, { WORKER_MAX_CACHED_WORKFLOWS: '500' });
    assert.deepEqual(options.serverConfig, {
      'system.enableActivityEagerExecution': true,
      'history.timerProcessorMaxTimeShift': '50ms',
      'limit.maxIDLength': 600,
    });
  });

  it('refuses what it cannot use, naming the flag', () => {
    assert.throws(() => parse(['--env', 'NOEQUALS']), /--env: expected KEY=VALUE/);
    assert.throws(() => parse(['--server-config', '=1']), /--server-config: expected KEY=VALUE/);
    assert.throws(() => parse(['--mix', 'mobile_topup,phone']), /--mix: unknown order type "phone"/);
    assert.throws(() => parse(['--api-url', 'http://127.0.0.1:3000']), /--api-url needs --api-key/);
    assert.throws(() => parse(['--orders', '0']), /orders/);
  });
});

describe('npm run bench', () => {
  const outDir = mkdtempSync(join(tmpdir(), 'bench-test-'));
  let bench: ChildProcess | undefined;
  after(() => {
    // On a timeout the bench is still running: SIGTERM makes it stop everything it started.
    if (bench?.exitCode === null) bench.kill('SIGTERM');
    rmSync(outDir, { recursive: true, force: true });
  });

  it('runs a small normal run end to end and writes its JSON', { timeout: 600_000 }, async (t) => {
    const env: NodeJS.ProcessEnv = { ...process.env };
    // The test run's own Temporal, provider and keys must not leak into the bench's stack.
    for (const name of Object.keys(env)) {
      if (/^(TEMPORAL_|PROVIDER_|API_|BENCH_|PAYLOAD_)/.test(name) || name === 'NODE_TEST_CONTEXT')
        delete env[name];
    }
    const orders = 12;
    const args = ['--orders', String(orders), '--warmup', '0', '--concurrency', '4', '--skip-direct'];
    const child = (bench = spawn(
      process.execPath,
      ['--import', 'tsx', 'scripts/bench.ts', ...args, '--out', outDir],
      {
        cwd: root,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    ));
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((done) => child.once('exit', done));
    assert.equal(code, 0, `bench exited ${code}:\n${output.slice(-4_000)}`);

    for (const heading of [
      'INTAKE',
      'INTAKE THROUGH BATCHES',
      'END TO END',
      'PER ORDER',
      'WEBHOOKS',
      'RESOURCES',
      'TARGETS',
    ]) {
      assert.match(output, new RegExp(`^${heading}`, 'm'), `table ${heading} printed`);
    }
    const files = readdirSync(outDir).filter((f) => f.endsWith('.json'));
    assert.equal(files.length, 1);
    const saved = JSON.parse(readFileSync(join(outDir, files[0]!), 'utf8')) as {
      report: NormalReport;
      targets: { name: string; pass: boolean }[];
    };
    const { report } = saved;
    assert.equal(report.kind, 'normal');
    const { rawStart, api, batch, minimal, webhooks } = report.phases;
    for (const phase of [rawStart, api, batch!, minimal, webhooks!]) {
      assert.equal(phase.load.ok, orders);
      assert.ok(phase.load.perSecond > 0 && phase.load.latencyMs.p99 > 0);
    }
    // Every order of the webhook phase had its final event delivered, each verified by the receiver.
    const deliveries = report.webhookDeliveries!;
    assert.equal(deliveries.ordersWithFinalEvent, orders);
    assert.ok(deliveries.events >= 2 * orders, `${deliveries.events} events`);
    assert.equal(deliveries.unverified, 0);
    assert.ok(deliveries.latencyMs.count === deliveries.events && deliveries.latencyMs.p50 > 0);
    // The webhook fairness phase: the prompt client's events measured idle and beside the slow endpoint.
    const fairness = report.webhookFairness!;
    // At least each order's first and final event (order.processing is left out).
    assert.ok(fairness.idle.count >= 2 * fairness.promptOrders, `${fairness.idle.count} idle events`);
    assert.ok(fairness.loaded.count >= 2 * fairness.promptOrders, `${fairness.loaded.count} loaded events`);
    assert.ok(fairness.ratio.p99 > 0);
    // An endpoint adds a marker per announcement (each status change).
    for (const type of report.perTypeWithWebhooks!) {
      assert.ok(type.events.max <= 45, `${type.type} with an endpoint: ${type.events.max} history events`);
      assert.equal(type.sends.max, 1);
    }
    // Figures that do not depend on the machine: a normal order's shape and never sending twice.
    assert.equal(report.perType.length, 3);
    for (const type of report.perType) {
      assert.equal(type.sends.max, 1, `${type.type}: sent once`);
      assert.ok(type.checkAttempts.min >= 1, `${type.type}: checks counted`);
      // The normal order's shape, over the orders whose first workflow task did not time out (a
      // starved worker's order looks its ref up first: not the shape asserted here, still sent once).
      if (type.firstTaskMissed > 0)
        t.diagnostic(`${type.type}: ${type.firstTaskMissed} of ${type.orders} missed their first task`);
      assert.ok(type.firstTaskMissed < type.orders / 2, `${type.type}: most orders took the normal path`);
      const shape = type.normalShape!;
      // One polling activity (the lean lifecycle); its checks follow the provider's pace: the send,
      // then a check every interval until the spec's timeline ends (4), and one more when a check
      // met the provider just before it settled (timers and activities run late under load).
      assert.equal(shape.checkActivities.max, 1, `${type.type}: one polling activity`);
      assert.ok(
        shape.providerCalls.max <= SPEC_PACE_CALLS + 1,
        `${type.type}: ${shape.providerCalls.max} provider calls`,
      );
      // The internet check reports no debit, so no settlement memo: the lean 14 exactly.
      const budget = LEAN_ORDER_EVENTS;
      assert.ok(shape.events.max <= budget, `${type.type}: ${shape.events.max} history events`);
      t.diagnostic(`${type.type}: ${shape.events.max} history events at most (normal shape)`);
    }
    for (const type of report.perTypeWithWebhooks!)
      t.diagnostic(`${type.type} with an endpoint: ${type.events.max} history events at most`);
    assert.ok(saved.targets.length >= 5);
    assert.ok(saved.targets.some((t) => /end-to-end/.test(t.name)));
  });
});
