/**
 * `npm run bench -- [flags]`. Every flag also has a BENCH_* environment variable (flags win).
 */
import { parseArgs } from 'node:util';
import { orderTypes, type OrderType } from '../../contract/schemas';

export interface BenchOptions {
  /** Orders (and workflows of each baseline) in the normal run. */
  orders: number;
  /** Requests or starts in flight at once. */
  concurrency: number;
  /** The normal run's phases this many times (ABBA order), pooled: steadier figures on a noisy machine. */
  rounds: number;
  /** Scale mode: this many orders at full spec timings, no baselines. */
  scale?: number;
  /** Noisy-neighbour mode: client A floods this many orders in batches of 500, fairness off then on. */
  noisy?: number;
  /** With `noisy`: the reconciliation of a day of this many orders under the flood, fairness on only. */
  noisyReconcile?: number;
  /** Noisy-neighbour mode: the runs with fairness off, on, or both (default). */
  noisyFairness: 'off' | 'on' | 'both';
  /** Only one part of the normal run, on a stack of its own (quicker to measure a change to it). */
  part?: 'webhook-fairness' | 'provider-pace' | 'readers';
  /** The provider-pace part: orders of each type per polling, and the sandbox's draws' seed. */
  paceOrders: number;
  paceSeed: number;
  /** The readers part: orders on its stacks, seconds of readers per route, and the variants, each on a stack of its own. */
  readersOrders: number;
  readersSeconds: number;
  readersVariants: string[];
  /** Scale mode: submit through the API (default) or through OrderService in-process (no HTTP). */
  scaleSubmit: 'api' | 'direct';
  /** Multiplies the sandbox's delays and our polling timings (normal run 0.05, scale run 1). */
  timeScale: number;
  /** Order types, submitted round-robin. */
  mix: OrderType[];
  /** Orders and baseline workflows run before measuring (JIT, connections, caches). */
  warmup: number;
  /** Longest wait for a phase's workflows to close. */
  waitTimeoutS: number;
  /** Histories fetched at once when analysing. */
  historyConcurrency: number;
  /** Latency the sandbox adds to every send and check (ms), like a real provider's. */
  providerLatencyMs: number;
  /** Extra KEY=VALUE for the worker and API we start (tuning runs). */
  partEnv: Record<string, string>;
  /** Extra dynamic config for the dev server we start (server-side tuning runs). */
  serverConfig: Record<string, string | number | boolean>;
  /** Freeze the workers (SIGSTOP) while each phase submits: intake alone, without the processing it triggers. */
  isolateIntake: boolean;
  /** Leave out the diagnostic phase that submits through OrderService in-process. */
  skipDirect: boolean;
  /** The batch phase: orders per POST /v1/orders/batch, and batches in flight at once. */
  batchSize: number;
  batchConcurrency: number;
  /** Read phase: GETs (and as many describes) per case; 0 leaves the phase out. */
  reads: number;
  /** Let the workers bundle their workflows at start instead of running pre-built bundles. */
  bundleAtStart: boolean;
  /** Encrypt payloads (PAYLOAD_ENCRYPTION_KEYS with a random key) in the parts we start. */
  encrypt: boolean;
  logLevel: string;
  outDir: string;
  /** A running stack instead of our own. */
  apiUrl?: string;
  apiKey?: string;
  temporalAddress?: string;
  namespace: string;
  sandboxUrl?: string;
  sandboxAdminToken?: string;
  /** PIDs of a running stack's parts, for CPU and RSS. */
  pids: { worker?: number; api?: number; temporal?: number };
  label?: string;
  /** Compare saved results instead of running: JSON files written by earlier runs. */
  compare: string[];
}

export const usage = `npm run bench -- [flags]

  --orders N               orders in the normal run (default 500)
  --concurrency C          requests / starts in flight at once (default 16; scale run 64)
  --scale N                scale run: N orders at the spec's full timings (e.g. 10000)
  --noisy N                noisy-neighbour run (the issue's N: 3000): fairness off, then on, each on a
                           fresh stack (mobile top-ups, time scale 1) — client A
                           floods N orders in batches of 500 while B submits one order every 2 s and A
                           one single order every 5 s, against the same orders on the idle stack
  --noisy-fairness on|off|both  the noisy run with fairness on only, off only, or both (default)
  --noisy-reconcile N      with --noisy M: a day of N orders reconciled alone, then B's trickle idle,
                           during A's flood of M and during another flood of M with the day reconciled
                           meanwhile (fairness on; docs/benchmarks.md "The other runs")
  --part webhook-fairness  only the normal run's webhook fairness part (a prompt endpoint's client
                           idle, beside a 10 s endpoint, beside a client without one), on its own stack
  --part provider-pace     the sandbox at the provider's documented timings, time scale 1: provider
                           settled → known / → webhook, checks and actions per order, with the polling
                           of before (a second API, POLL_INTERVAL_MS=0) and the provider's pace
  --pace-orders N          provider-pace: orders of each type per polling (default 30)
  --pace-seed S            provider-pace: the sandbox's draws (default 32)
  --part readers           reads that scale: 20 readers of two clients on the list, statements, the
                           export and (two operators) the review queue, route after route, while an
                           operator's Temporal UI query and the account round's listing are timed;
                           each variant on a stack of its own (default: before, after)
  --readers-orders N       readers: orders of two clients on each stack (default 200)
  --readers-seconds S      readers: seconds of readers per route (default 15)
  --readers-variants a,b   readers: before (main: no read cache, the CLI's visibility limit), limits,
                           cache, after (default before,after); --server-config applies to the
                           variants on the project's limits (limits, after)
  --scale-submit api|direct  scale run: through the API (default) or OrderService in-process
  --time-scale F           sandbox delays and polling timings x F (default 0.05; scale run 1)
  --mix a,b,c              order types, round-robin (default mobile_topup,internet_topup,gift_card)
  --warmup N               unmeasured orders first (default 30)
  --rounds R               repeat the phases R times (ABBA order) and pool them (default 1)
  --wait-timeout S         longest wait for a phase to finish (default 300; scale run 1800)
  --history-concurrency N  histories fetched at once when analysing (default 16)
  --provider-latency MS    the sandbox answers every send and check MS later (a real provider's latency)
  --env KEY=VALUE          extra environment for the worker and API we start (repeatable)
  --server-config KEY=V    extra dynamic config for the dev server we start (repeatable)
  --encrypt                payload encryption on in the parts we start
  --bundle-at-start        workers bundle their workflows at start (default: pre-built, as in production)
  --isolate-intake         freeze the workers we started while each phase submits (intake alone)
  --skip-direct            leave out the phase that submits through OrderService in-process (no HTTP)
  --batch-size N           the batch phase: orders per POST /v1/orders/batch (default 100)
  --batch-concurrency N    the batch phase: batches in flight at once (default 1; the API runs
                           API_BATCH_CONCURRENCY starts of each at once, 16 = the baseline's concurrency)
  --reads N                read phase: N GETs and N raw describes per case (default 2000; 0 = no read phase)
  --log-level L            LOG_LEVEL of the parts we start (default info)
  --out DIR                where the JSON goes (default bench-results)
  --label TEXT             stored in the JSON (e.g. the tuning being tried)
  --compare FILE           (repeatable) print saved normal runs side by side instead of running

  A running stack instead of our own (each part independently):
  --api-url URL --api-key KEY           the intake API (then no sandbox/worker/API are started)
  --temporal-address HOST:PORT          Temporal (then no dev server is started)
  --namespace NS                        (default "default")
  --sandbox-url URL --sandbox-admin-token T   the sandbox admin surface, for send counts
  --worker-pid P --api-pid P --temporal-pid P  processes to measure CPU and RSS of
  (environment: BENCH_API_URL, BENCH_API_KEY, BENCH_TEMPORAL_ADDRESS, BENCH_NAMESPACE,
   BENCH_SANDBOX_URL, BENCH_SANDBOX_ADMIN_TOKEN, BENCH_ORDERS, BENCH_CONCURRENCY)
`;

function positive(name: string, value: string | undefined, fallback: number, integer = true): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new Error(`--${name}: expected a positive ${integer ? 'integer' : 'number'}, got "${value}"`);
  }
  return n;
}

function optionalPid(name: string, value: string | undefined): number | undefined {
  return value ? positive(name, value, 0) : undefined;
}

function keyValuePairs(flag: string, pairs: string[] = []): Record<string, string> {
  const result: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--${flag}: expected KEY=VALUE, got "${pair}"`);
    result[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return result;
}

export function parseBenchArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): BenchOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      help: { type: 'boolean', short: 'h' },
      orders: { type: 'string' },
      concurrency: { type: 'string' },
      scale: { type: 'string' },
      'scale-submit': { type: 'string' },
      noisy: { type: 'string' },
      part: { type: 'string' },
      'pace-orders': { type: 'string' },
      'pace-seed': { type: 'string' },
      'readers-orders': { type: 'string' },
      'readers-seconds': { type: 'string' },
      'readers-variants': { type: 'string' },
      'noisy-fairness': { type: 'string' },
      'noisy-reconcile': { type: 'string' },
      'time-scale': { type: 'string' },
      mix: { type: 'string' },
      warmup: { type: 'string' },
      rounds: { type: 'string' },
      'wait-timeout': { type: 'string' },
      'history-concurrency': { type: 'string' },
      env: { type: 'string', multiple: true },
      'server-config': { type: 'string', multiple: true },
      'provider-latency': { type: 'string' },
      encrypt: { type: 'boolean' },
      'bundle-at-start': { type: 'boolean' },
      'skip-direct': { type: 'boolean' },
      'batch-size': { type: 'string' },
      'batch-concurrency': { type: 'string' },
      reads: { type: 'string' },
      'isolate-intake': { type: 'boolean' },
      'log-level': { type: 'string' },
      out: { type: 'string' },
      label: { type: 'string' },
      compare: { type: 'string', multiple: true },
      'api-url': { type: 'string' },
      'api-key': { type: 'string' },
      'temporal-address': { type: 'string' },
      namespace: { type: 'string' },
      'sandbox-url': { type: 'string' },
      'sandbox-admin-token': { type: 'string' },
      'worker-pid': { type: 'string' },
      'api-pid': { type: 'string' },
      'temporal-pid': { type: 'string' },
    },
  });
  if (values.help) return 'help';

  const scale = values.scale !== undefined ? positive('scale', values.scale, 0) : undefined;
  const noisy = values.noisy !== undefined ? positive('noisy', values.noisy, 3_000) : undefined;
  const noisyReconcile =
    values['noisy-reconcile'] !== undefined
      ? positive('noisy-reconcile', values['noisy-reconcile'], 2_000)
      : undefined;
  if (noisyReconcile !== undefined && noisy === undefined)
    throw new Error('--noisy-reconcile needs --noisy M (the flood)');
  const mix = (values.mix ?? orderTypes.join(',')).split(',').map((t) => t.trim());
  for (const type of mix) {
    if (!(orderTypes as readonly string[]).includes(type)) {
      throw new Error(`--mix: unknown order type "${type}" (known: ${orderTypes.join(', ')})`);
    }
  }
  const noisyFairness = values['noisy-fairness'] ?? 'both';
  if (noisyFairness !== 'on' && noisyFairness !== 'off' && noisyFairness !== 'both')
    throw new Error('--noisy-fairness: on, off or both');
  const part = values.part;
  if (part !== undefined && part !== 'webhook-fairness' && part !== 'provider-pace' && part !== 'readers')
    throw new Error('--part: webhook-fairness, provider-pace or readers');
  const readersVariants = (values['readers-variants'] ?? 'before,after').split(',').map((v) => v.trim());
  for (const variant of readersVariants) {
    if (!['before', 'limits', 'cache', 'after'].includes(variant))
      throw new Error(`--readers-variants: unknown variant "${variant}" (before, limits, cache, after)`);
  }
  const scaleSubmit = values['scale-submit'] ?? 'api';
  if (scaleSubmit !== 'api' && scaleSubmit !== 'direct') throw new Error('--scale-submit: api or direct');
  const partEnv = keyValuePairs('env', values.env);
  // Dynamic config values are typed: `true` and `5` are a boolean and a number, anything else a string.
  const serverConfig = Object.fromEntries(
    Object.entries(keyValuePairs('server-config', values['server-config'])).map(([key, value]) => [
      key,
      value === 'true' || value === 'false'
        ? value === 'true'
        : /^-?\d+(\.\d+)?$/.test(value)
          ? Number(value)
          : value,
    ]),
  );
  const apiUrl = values['api-url'] ?? env.BENCH_API_URL;
  const apiKey = values['api-key'] ?? env.BENCH_API_KEY;
  if (apiUrl && !apiKey) throw new Error('--api-url needs --api-key (or BENCH_API_KEY)');

  return {
    orders: positive('orders', values.orders ?? env.BENCH_ORDERS, 500),
    concurrency: positive('concurrency', values.concurrency ?? env.BENCH_CONCURRENCY, scale ? 64 : 16),
    rounds: positive('rounds', values.rounds, 1),
    scale,
    noisy,
    noisyReconcile,
    noisyFairness,
    part,
    paceOrders: positive('pace-orders', values['pace-orders'], 30),
    paceSeed: values['pace-seed'] === undefined ? 32 : positive('pace-seed', values['pace-seed'], 32),
    readersOrders: positive('readers-orders', values['readers-orders'], 200),
    readersSeconds: positive('readers-seconds', values['readers-seconds'], 15),
    readersVariants,
    scaleSubmit,
    // The noisy-neighbour run, like the scale run, at the spec's timings (an idle final is ~20 s).
    // The provider-pace part measures the provider's own timings: never scaled.
    timeScale:
      part === 'provider-pace'
        ? 1
        : positive('time-scale', values['time-scale'], scale || noisy ? 1 : 0.05, false),
    mix: (noisy && !values.mix ? ['mobile_topup'] : mix) as OrderType[],
    warmup: values.warmup === '0' ? 0 : positive('warmup', values.warmup, 30),
    waitTimeoutS: positive('wait-timeout', values['wait-timeout'], scale ? 1_800 : 300),
    historyConcurrency: positive('history-concurrency', values['history-concurrency'], 16),
    partEnv,
    serverConfig,
    providerLatencyMs:
      values['provider-latency'] === undefined
        ? 0
        : positive('provider-latency', values['provider-latency'], 0),
    encrypt: values.encrypt ?? false,
    bundleAtStart: values['bundle-at-start'] ?? false,
    skipDirect: values['skip-direct'] ?? false,
    batchSize: positive('batch-size', values['batch-size'], 100),
    batchConcurrency: positive('batch-concurrency', values['batch-concurrency'], 1),
    reads: values.reads === '0' ? 0 : positive('reads', values.reads, 2_000),
    isolateIntake: values['isolate-intake'] ?? false,
    logLevel: values['log-level'] ?? 'info',
    outDir: values.out ?? 'bench-results',
    apiUrl,
    apiKey,
    temporalAddress: values['temporal-address'] ?? env.BENCH_TEMPORAL_ADDRESS,
    namespace: values.namespace ?? env.BENCH_NAMESPACE ?? 'default',
    sandboxUrl: values['sandbox-url'] ?? env.BENCH_SANDBOX_URL,
    sandboxAdminToken: values['sandbox-admin-token'] ?? env.BENCH_SANDBOX_ADMIN_TOKEN,
    pids: {
      worker: optionalPid('worker-pid', values['worker-pid']),
      api: optionalPid('api-pid', values['api-pid']),
      temporal: optionalPid('temporal-pid', values['temporal-pid']),
    },
    label: values.label,
    compare: values.compare ?? [],
  };
}
