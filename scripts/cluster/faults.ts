/**
 * The cluster tier's fault run: the faults of a real deployment, one after another, under load.
 *
 * A stack of the chaos run's parts (scripts/chaos/stack.ts) on the tier's Temporal cluster: the
 * sandbox as the provider, an intake API whose one client has a webhook endpoint (a receiver in
 * this process), two workers, and a third worker in a network namespace of its own
 * (isolation.ts). Orders of every type are submitted all through the run at a steady pace (with
 * the chaos mix's special numbers, repeats, conflicts and races), and a reader lists orders every
 * second. The faults, each followed by a recovery window:
 *
 *   frontend, matching, history, worker   Temporal's service SIGKILLed, started again at once
 *   postgres-restart                      PostgreSQL's fast shutdown, started again at once
 *   postgres-stop                         PostgreSQL stopped for the outage, then started
 *   worker-temporal-cut                   the isolated worker's link to Temporal cut for the outage
 *   worker-provider-cut                   its link to the provider cut for the outage
 *   worker-clock-ahead, -behind           a worker whose clock is 3 minutes ahead, then one 3 minutes
 *                                         behind (libfaketime), joins for a while, then is stopped
 *
 * Then control orders (no fault) and every order to its end. The verdict is the chaos run's
 * (scripts/chaos/verify.ts: none lost, none sent twice by the sandbox's counts, nothing the
 * provider's records show delivered reported FAILED/REFUNDED, no 500, one workflow per order)
 * plus, per fault (fault-verdict.ts): the same counts for its orders, the orders it left in
 * review, p99 latency during and after it, and the API's answers — 503 with Retry-After where it
 * cannot accept, never 500. A submission that met a 503 is retried with the same ref by the
 * client: one workflow per accepted order proves a 503 never left a half-started order.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { hashApiKey } from '../../src/clients/keys';
import { LEGACY_CLIENT_ID, type ClientsFile } from '../../src/clients/model';
import { providerRefFor } from '../../src/orders/provider-ref';
import { SandboxAdmin } from '../../src/sandbox/admin-client';
import { startReceiver } from '../../src/webhooks/receiver';
import { endpointSecret } from '../../src/webhooks/secrets';
import { IntakeClient, type IntakeAnswer } from '../chaos/intake';
import { planOrders } from '../chaos/orders';
import { readProviderRecords } from '../chaos/provider-records';
import { Random } from '../chaos/random';
import {
  buildWorkflowBundle,
  CHAOS_ADMIN_TOKEN,
  CHAOS_API_KEY,
  CHAOS_PROVIDER_KEY,
  ChaosStack,
} from '../chaos/stack';
import { newRecord, settleAll, submitAll, type OrderRecord } from '../chaos/submit';
import { TemporalProbe } from '../chaos/temporal';
import { verify, type Verdict } from '../chaos/verify';
import {
  countAnswer,
  emptyAnswers,
  faultFigures,
  faultProblems,
  LEAD_MS,
  percentile,
  type ApiAnswers,
  type FaultFigures,
  type FaultWindow,
  type OrderFacts,
} from './fault-verdict';
import { isolateNetwork, type IsolatedNetwork } from './isolation';
import type { PrivatePostgres } from './postgres';
import { TEMPORAL_SERVICES, type TemporalCluster, type TemporalService } from './temporal-cluster';
import { libfaketime } from '../lib/faketime';

export interface FaultRunOptions {
  address: string;
  namespace: string;
  cluster: TemporalCluster;
  postgres: PrivatePostgres;
  /** The long version: 60 s outages and longer recoveries (`npm run test:cluster -- --long`). */
  long: boolean;
  seed: number;
  /** Only these faults (FAULT_NAMES, e.g. `worker-clock-ahead`); default all. */
  only?: readonly string[];
  /** Keep the run directory (part logs) even when the run passes. */
  keep?: boolean;
  log: (line: string) => void;
}

export interface FaultRunSummary {
  long: boolean;
  seed: number;
  isolation: { mode: IsolatedNetwork['mode']; fallbackReason?: string };
  /** How far off the skewed workers' clocks were, as their own log lines' timestamps show. */
  clockSkewSeenMs: Partial<Record<'ahead' | 'behind', number>>;
  baselineP99Ms?: number;
  faults: FaultFigures[];
  orders: { submitted: number; accepted: number; byStatus: Record<string, number> };
  /** Submissions that met a 503 (or no answer) and were retried with the same ref: each one order. */
  submitsRetried: number;
  webhooks: { delivered: number; ordersWithDelivery: number; unverified: number };
  reader: { listings: number; answers: ApiAnswers };
  verdict: Pick<Verdict, 'lost' | 'sentTwice' | 'money' | 'underFaults' | 'workflows'>;
  problems: string[];
  durationMs: number;
}

/** Timings of the two versions. */
const PLANS = {
  short: { baselineMs: 20_000, recoveryMs: 20_000, outageMs: 15_000, clockMs: 25_000, ordersPerSecond: 1 },
  long: { baselineMs: 30_000, recoveryMs: 45_000, outageMs: 60_000, clockMs: 60_000, ordersPerSecond: 1 },
};
const SKEW_MS = 3 * 60_000;

export const FAULT_NAMES = [
  'frontend',
  'matching',
  'history',
  'worker',
  'postgres-restart',
  'postgres-stop',
  'worker-temporal-cut',
  'worker-provider-cut',
  'worker-clock-ahead',
  'worker-clock-behind',
] as const;
export type FaultName = (typeof FAULT_NAMES)[number];
const SETTLE_TIMEOUT_MS = 300_000;
const TIME_SCALE = 0.05;
const WEBHOOK_ENDPOINT = 'faults';

/**
 * How far the worker's clock is off: the time on its "worker started" line (its Date.now) against
 * ours when the launcher saw that line (`seenAt`, within milliseconds of it).
 */
function clockSkewOf(logFile: string, seenAt: number): number | undefined {
  if (!existsSync(logFile)) return undefined;
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('"msg":"worker started"')) continue;
    try {
      const time = (JSON.parse(line) as { time?: number }).time;
      if (typeof time === 'number') return time - seenAt;
    } catch {
      // not a JSON log line
    }
  }
  return undefined;
}

function settledAtOf(record: OrderRecord): number | undefined {
  const view = record.view;
  if (!view) return undefined;
  const entry = view.timeline.find((e) =>
    ['FULFILLED', 'REFUNDED', 'FAILED', 'NEEDS_REVIEW'].includes(e.status),
  );
  return entry ? Date.parse(entry.at) : undefined;
}

export async function runFaults(options: FaultRunOptions): Promise<FaultRunSummary> {
  const { cluster, postgres, long, seed } = options;
  const plan = long ? PLANS.long : PLANS.short;
  const started = Date.now();
  const log = (line: string) =>
    options.log(`faults ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s  ${line}`);
  const done = new AbortController();
  setMaxListeners(0, done.signal);
  const dir = mkdtempSync(join(tmpdir(), 'topup-faults-'));
  const problems: string[] = [];
  let stack: ChaosStack | undefined;
  let network: IsolatedNetwork | undefined;
  let receiverClose: (() => Promise<void>) | undefined;
  let passed = false;
  try {
    // ---- the webhook endpoint, and the clients file naming it ----
    const signingKey = randomBytes(32);
    const receiver = await startReceiver({
      secrets: [endpointSecret(signingKey, LEGACY_CLIENT_ID, WEBHOOK_ENDPOINT, 1)],
    });
    receiverClose = () => receiver.close();
    const clientsFile = (webhookBase: string): string => {
      const file: ClientsFile = {
        defaultClient: LEGACY_CLIENT_ID,
        clients: [
          {
            id: LEGACY_CLIENT_ID,
            name: 'Fault run',
            scopes: ['orders:write', 'orders:read'],
            keys: [{ id: 'k1', hash: hashApiKey(CHAOS_API_KEY) }],
            webhooks: [{ id: WEBHOOK_ENDPOINT, url: `${webhookBase}/webhooks` }],
          },
        ],
      };
      const path = join(dir, `clients-${randomBytes(3).toString('hex')}.yaml`);
      writeFileSync(path, stringify(file));
      return path;
    };

    network = await isolateNetwork(log);
    const isolated = network;
    stack = new ChaosStack({
      dir,
      temporal: { address: options.address, namespace: options.namespace },
      apis: 1,
      timeScale: TIME_SCALE,
      workflowBundlePath: await buildWorkflowBundle(dir),
      encrypt: true,
      env: {
        // The clients file is the only source of clients; its default client is the chaos key's.
        API_KEYS: '',
        API_CLIENTS_FILE: clientsFile(receiver.url),
        WEBHOOK_SIGNING_KEY: signingKey.toString('base64'),
        WEBHOOK_TASK_QUEUE: `faults-webhooks-${randomBytes(3).toString('hex')}`,
        WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32,10.231.0.0/16',
        WEBHOOK_IDLE_CLOSE_MS: '2000',
        WEBHOOK_RETRY_INITIAL_MS: '1000',
        WEBHOOK_RETRY_MAX_INTERVAL_MS: '5000',
      },
      log,
    });
    const parts = stack;
    await parts.start(2);
    const admin = new SandboxAdmin(parts.sandboxUrl, CHAOS_ADMIN_TOKEN);
    await admin.settings({ uniqueRefs: false });

    // ---- the isolated worker: Temporal, the provider and the endpoint through cuttable links ----
    const sandboxPort = Number(new URL(parts.sandboxUrl).port);
    const temporalPort = Number(options.address.split(':').pop());
    const temporalVia = await isolated.relay('temporal', temporalPort);
    const providerVia = await isolated.relay('provider', sandboxPort);
    const webhooksVia = await isolated.relay('webhooks', receiver.port);
    const isolatedWorker = await parts.startExtraWorker('worker-isolated', {
      env: {
        TEMPORAL_ADDRESS: temporalVia,
        PROVIDER_BASE_URL: `http://${providerVia}`,
        API_CLIENTS_FILE: clientsFile(`http://${webhooksVia}`),
      },
      wrap: isolated.wrap,
    });
    log(`worker-isolated polls through ${temporalVia} (${isolated.mode})`);

    // ---- the load: orders all through, a reader listing them ----
    const windows: FaultWindow[] = [];
    const answers = new Map<string, { during: ApiAnswers; after: ApiAnswers }>();
    const baselineAnswers = emptyAnswers();
    const bucketAt = (t: number): ApiAnswers => {
      const w = windows.find((x) => t >= x.startedAt && t < x.nextAt);
      if (!w) return baselineAnswers;
      const a = answers.get(w.name)!;
      return t < w.endedAt ? a.during : a.after;
    };
    const onAttempt = (_method: string, _path: string, outcome: IntakeAnswer | Error) =>
      countAnswer(bucketAt(Date.now()), outcome);
    let submitsRetried = 0;
    const intake = new IntakeClient(parts.apiUrls, CHAOS_API_KEY, done.signal, 240_000, (m, p, outcome) => {
      onAttempt(m, p, outcome);
      if (m === 'POST' && (outcome instanceof Error || outcome.status === 503)) submitsRetried++;
    });
    const readerAnswers = emptyAnswers();
    let listings = 0;
    const reader = new IntakeClient(parts.apiUrls, CHAOS_API_KEY, done.signal, 0, (m, p, outcome) => {
      onAttempt(m, p, outcome);
      countAnswer(readerAnswers, outcome);
    });

    /** Each fault's window: how long it lasts (a restart takes seconds), then the recovery. */
    const slotMs: Record<FaultName, number> = {
      frontend: 5_000,
      matching: 5_000,
      history: 5_000,
      worker: 5_000,
      'postgres-restart': 5_000,
      'postgres-stop': plan.outageMs,
      'worker-temporal-cut': plan.outageMs,
      'worker-provider-cut': plan.outageMs,
      // The skewed worker starts (seconds), then runs for clockMs.
      'worker-clock-ahead': plan.clockMs + 10_000,
      'worker-clock-behind': plan.clockMs + 10_000,
    };
    const selected = FAULT_NAMES.filter((name) => !options.only || options.only.includes(name));
    const faultCount = selected.length;
    const plannedMs =
      plan.baselineMs + selected.reduce((sum, name) => sum + slotMs[name] + plan.recoveryMs, 0);
    const rng = new Random(seed);
    const records = planOrders(rng.fork(), {
      count: Math.round((plannedMs / 1000) * plan.ordersPerSecond),
      spreadMs: plannedMs,
      refPrefix: `faults${seed.toString(36)}`,
      control: false,
    }).map(newRecord);
    const controlRecords = planOrders(rng.fork(), {
      count: 6,
      spreadMs: 2_000,
      refPrefix: `faults${seed.toString(36)}-ctl`,
      control: true,
    }).map(newRecord);
    log(`${records.length} orders over ~${Math.round(plannedMs / 1000)} s and ${faultCount} faults`);
    let over = false;
    const loadStarted = Date.now();
    const submitting = submitAll(intake, records, {
      concurrency: 8,
      startedAt: loadStarted,
      signal: done.signal,
    });
    submitting.catch(() => undefined);
    const reading = (async () => {
      while (!over) {
        await reader.request('GET', '/v1/orders?pageSize=20', undefined, 0).catch(() => undefined);
        listings++;
        await sleep(1_000, undefined, { signal: done.signal }).catch(() => undefined);
      }
    })();

    // ---- the faults ----
    const exitedServices = (): TemporalService[] => TEMPORAL_SERVICES.filter((s) => !cluster.running(s));
    /** Checks that outlive their fault's injection (awaited before the verdict). */
    const checks: Promise<void>[] = [];
    const fault = async (
      name: FaultName,
      what: string,
      inject: (w: FaultWindow) => Promise<string[] | void>,
    ) => {
      if (options.only && !options.only.includes(name)) return;
      answers.set(name, { during: emptyAnswers(), after: emptyAnswers() });
      const w: FaultWindow = {
        name,
        what,
        startedAt: Date.now(),
        endedAt: Infinity,
        nextAt: Infinity,
        notes: [],
      };
      windows.push(w);
      log(`fault ${name}: ${what}`);
      try {
        w.notes.push(...((await inject(w)) ?? []));
      } catch (err) {
        const message = `${name}: ${err instanceof Error ? err.message : String(err)}`;
        problems.push(message);
        w.notes.push(message);
      }
      w.endedAt = Date.now();
      log(
        `fault ${name} over after ${((w.endedAt - w.startedAt) / 1000).toFixed(1)} s; recovery ${plan.recoveryMs / 1000} s`,
      );
      await sleep(plan.recoveryMs, undefined, { signal: done.signal });
      // A Temporal service that exited on its own is started again, as an orchestrator would.
      for (const service of exitedServices()) {
        w.notes.push(`Temporal ${service} exited on its own; started again`);
        log(`Temporal ${service} exited on its own; starting it again`);
        await cluster.startService(service);
      }
      w.nextAt = Date.now();
    };

    await sleep(plan.baselineMs, undefined, { signal: done.signal });
    const baselineEnd = Date.now();
    for (const service of ['frontend', 'matching', 'history', 'worker'] as const) {
      await fault(service, `Temporal ${service} SIGKILLed and started again`, async () => {
        await cluster.killService(service);
        await cluster.startService(service);
      });
    }
    await fault('postgres-restart', 'PostgreSQL restarted (fast shutdown, start)', async () => {
      await postgres.stopServer();
      await postgres.startServer();
    });
    await fault('postgres-stop', `PostgreSQL stopped for ${plan.outageMs / 1000} s`, async () => {
      await postgres.stopServer();
      await sleep(plan.outageMs, undefined, { signal: done.signal });
      await postgres.startServer();
    });
    await fault(
      'worker-temporal-cut',
      `worker-isolated's link to Temporal cut for ${plan.outageMs / 1000} s (${isolated.mode})`,
      async (w) => {
        isolated.cut('temporal');
        await sleep(plan.outageMs, undefined, { signal: done.signal });
        isolated.restore('temporal');
        // The worker's own connection must come back by itself: its polls go through again.
        // Watched in the background: the outage ends with the link's return.
        const restoredAt = Date.now();
        const before = isolated.sent('temporal');
        checks.push(
          (async () => {
            while (isolated.sent('temporal') === before && Date.now() - restoredAt < plan.recoveryMs)
              await sleep(250);
            if (isolated.sent('temporal') === before)
              problems.push(
                `worker-isolated sent nothing to Temporal within ${plan.recoveryMs / 1000} s of the link's return`,
              );
            else
              w.notes.push(
                `worker-isolated's polls went through ${((Date.now() - restoredAt) / 1000).toFixed(1)} s after the link was back`,
              );
          })(),
        );
      },
    );
    await fault(
      'worker-provider-cut',
      `worker-isolated's link to the provider cut for ${plan.outageMs / 1000} s (${isolated.mode})`,
      async () => {
        isolated.cut('provider');
        await sleep(plan.outageMs, undefined, { signal: done.signal });
        isolated.restore('provider');
      },
    );
    const clockSkewSeenMs: Partial<Record<'ahead' | 'behind', number>> = {};
    for (const direction of ['ahead', 'behind'] as const) {
      const skew = direction === 'ahead' ? SKEW_MS : -SKEW_MS;
      await fault(
        `worker-clock-${direction}`,
        `a worker with its clock 3 minutes ${direction} joins for ${plan.clockMs / 1000} s`,
        async () => {
          const lib = libfaketime();
          if (!lib) throw new Error('libfaketime is not installed (apt-get install faketime)');
          const name = `worker-clock-${direction}`;
          const skewed = await parts.startExtraWorker(name, {
            env: {
              LD_PRELOAD: lib,
              FAKETIME: `${skew > 0 ? '+' : '-'}${Math.abs(skew) / 1000}s`,
              // Timers and timeouts run on the monotonic clock, which no wrong date moves.
              FAKETIME_DONT_FAKE_MONOTONIC: '1',
            },
          });
          const startedAt = Date.now();
          await sleep(plan.clockMs, undefined, { signal: done.signal });
          // Read now: the log file is written asynchronously.
          const seen = clockSkewOf(join(parts.logDir, `${name}.log`), startedAt);
          await parts.stopWorker(skewed);
          if (seen === undefined || Math.abs(seen - skew) > 10_000) {
            throw new Error(`the skewed worker's clock was ${seen ?? '?'} ms off, not ${skew} (libfaketime)`);
          }
          clockSkewSeenMs[direction] = seen;
          return [`its log's clock ran ${(Math.abs(seen) / 1000).toFixed(0)} s ${direction}`];
        },
      );
    }

    await submitting;
    await Promise.all(checks);
    over = true;
    await reading;
    log('faults over; control orders');
    await submitAll(intake, controlRecords, { concurrency: 8, startedAt: Date.now(), signal: done.signal });
    const all = [...records, ...controlRecords];
    let lastReport = 0;
    const unsettled = await settleAll(intake, all, {
      deadline: Date.now() + SETTLE_TIMEOUT_MS,
      signal: done.signal,
      progress: (left) => {
        if (left.length === 0 || Date.now() - lastReport < 10_000) return;
        lastReport = Date.now();
        log(`waiting for ${left.length} order(s) to settle`);
      },
    });
    log(
      unsettled.length ? `${unsettled.length} order(s) did not settle` : 'every order is final or in review',
    );
    if (isolatedWorker.process.hasExited()) problems.push('worker-isolated exited during the run');

    // ---- the verdict ----
    const sends = await admin.sends();
    const provider = await readProviderRecords(parts.sandboxUrl, CHAOS_PROVIDER_KEY);
    const probe = await TemporalProbe.connect(options.address, options.namespace);
    let verdict: Verdict;
    try {
      const accepted = all.filter((r) => r.accepted).length;
      verdict = await verify({
        records: all,
        sends,
        provider,
        workflowCount: await probe.countOrders(accepted),
        intakeStats: intake.stats,
        placements: await admin.giftCardOrders(),
        troubleOf: (ref) => probe.troubleOf(ref),
      });
    } finally {
      await probe.close();
    }
    problems.push(...verdict.problems);
    const delivered = new Set(provider.topups.filter((t) => t.status === 'FULFILLED').map((t) => t.ref));
    const giftDelivered = new Set(
      provider.giftCardOrders
        .filter((g) => ['FULFILLED', 'PARTIALLY_FILLED'].includes(g.status))
        .map((g) => g.orderId),
    );
    const facts: OrderFacts[] = records
      .filter((r) => r.accepted && r.submittedAt !== undefined)
      .map((r) => {
        const request = r.planned.request;
        const status = r.view?.status;
        const providerRef = providerRefFor(LEGACY_CLIENT_ID, request.ref);
        const wasDelivered =
          request.type === 'gift_card'
            ? giftDelivered.has(r.view?.providerReference ?? '')
            : delivered.has(providerRef);
        return {
          ref: request.ref,
          submittedAt: r.submittedAt!,
          settledAt: settledAtOf(r),
          lost: !r.view || !['FULFILLED', 'REFUNDED', 'FAILED', 'NEEDS_REVIEW'].includes(r.view.status),
          sentTwice: request.type !== 'gift_card' && (sends.refs[providerRef]?.accepted ?? 0) > 1,
          wronglyFailed: wasDelivered && (status === 'FAILED' || status === 'REFUNDED'),
          inReviewByFault: status === 'NEEDS_REVIEW' && r.planned.expected.special !== 'unknownError',
        };
      });
    const figures = faultFigures(windows, facts, answers);
    problems.push(...faultProblems(figures));
    if (readerAnswers.internalErrors > 0)
      problems.push(`the reader's listings met ${readerAnswers.internalErrors} 500s`);
    const baselineP99Ms = percentile(
      facts
        // Past the stack's first seconds (its first tasks are slower), and settled before the first fault.
        .filter(
          (o) =>
            o.submittedAt >= loadStarted + plan.baselineMs / 3 &&
            o.submittedAt < baselineEnd - LEAD_MS &&
            o.settledAt,
        )
        .map((o) => o.settledAt! - o.submittedAt),
      99,
    );
    const deliveries = receiver.deliveries;
    const webhooks = {
      delivered: deliveries.filter((d) => d.verified).length,
      ordersWithDelivery: new Set(deliveries.flatMap((d) => (d.message ? [d.message.data.ref] : []))).size,
      unverified: deliveries.filter((d) => !d.verified).length,
    };
    if (webhooks.delivered === 0) problems.push('no webhook was delivered');
    if (webhooks.unverified > 0) problems.push(`${webhooks.unverified} webhook deliveries did not verify`);
    passed = problems.length === 0;
    return {
      long,
      seed,
      isolation: {
        mode: isolated.mode,
        ...(isolated.fallbackReason && { fallbackReason: isolated.fallbackReason }),
      },
      clockSkewSeenMs,
      ...(baselineP99Ms !== undefined && { baselineP99Ms }),
      faults: figures,
      orders: { submitted: all.length, accepted: verdict.submissions.accepted, byStatus: verdict.byStatus },
      submitsRetried,
      webhooks,
      reader: { listings, answers: readerAnswers },
      verdict: {
        lost: verdict.lost,
        sentTwice: verdict.sentTwice,
        money: verdict.money,
        underFaults: verdict.underFaults,
        workflows: verdict.workflows,
      },
      problems,
      durationMs: Date.now() - started,
    };
  } finally {
    done.abort();
    // A Temporal service or PostgreSQL a failed fault left down is started again for what follows.
    for (const service of TEMPORAL_SERVICES.filter((s) => !cluster.running(s))) {
      await cluster.startService(service).catch(() => undefined);
    }
    await postgres.startServer().catch(() => undefined);
    await stack?.stop();
    await network?.close();
    await receiverClose?.();
    if (passed && !options.keep) rmSync(dir, { recursive: true, force: true });
    else log(`run directory kept: ${dir}`);
  }
}
