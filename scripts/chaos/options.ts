/**
 * The chaos run's parameters: CLI flags (`npm run chaos -- --orders 500`), else CHAOS_* environment
 * variables, else defaults sized for a few minutes on a 2-core machine.
 */
import { parseArgs } from 'node:util';

export interface ChaosOptions {
  /** Orders submitted (not counting deliberate repeats). */
  orders: number;
  /** Submissions in flight at once. */
  concurrency: number;
  /** Length of the chaos phase: submissions are spread over it while faults, kills and restarts happen. */
  durationMs: number;
  /** Mean time between worker kills (SIGKILL); 0 = no kills. */
  killEveryMs: number;
  /** At most this many kill rounds (a round may kill every worker at once). */
  maxKills: number;
  /** Worker processes kept running. */
  workers: number;
  /** Temporal dev server restarts during the chaos phase. */
  temporalRestarts: number;
  /** Sandbox kills (SIGKILL) and restarts on its state file during the chaos phase. */
  sandboxRestarts: number;
  /** Intake API kills (SIGKILL) and restarts during the chaos phase. */
  apiRestarts: number;
  /** Mean length of one fault phase (the sandbox's rules change after it). */
  faultPhaseMs: number;
  /** SANDBOX_TIME_SCALE; polling timings and deadlines are scaled with it. */
  timeScale: number;
  /** After the chaos phase, how long orders may take to become final or go to review. */
  settleTimeoutMs: number;
  /** Seeds the order mix, the fault schedule and the kill times (not the sandbox's dice or thread timing). */
  seed: number;
  /** Keep the run's directory (Temporal database, part logs) even when the run passes. */
  keep: boolean;
  /** Run the API and workers with PAYLOAD_ENCRYPTION_KEYS, as production does (--plain-payloads: without). */
  encrypt: boolean;
  /** Intake API instances, requests spread over them round-robin. */
  apis: number;
  /** How many of the workers run compiled (`node dist/src/worker/main.js`), as the Docker image does. */
  builtWorkers: number;
}

const numericFlags = {
  orders: { env: 'CHAOS_ORDERS', min: 1 },
  concurrency: { env: 'CHAOS_CONCURRENCY', min: 1 },
  'duration-ms': { env: 'CHAOS_DURATION_MS', min: 1_000 },
  'kill-every-ms': { env: 'CHAOS_KILL_EVERY_MS', min: 0 },
  'max-kills': { env: 'CHAOS_MAX_KILLS', min: 0 },
  workers: { env: 'CHAOS_WORKERS', min: 1 },
  'temporal-restarts': { env: 'CHAOS_TEMPORAL_RESTARTS', min: 0 },
  'sandbox-restarts': { env: 'CHAOS_SANDBOX_RESTARTS', min: 0 },
  'api-restarts': { env: 'CHAOS_API_RESTARTS', min: 0 },
  'fault-phase-ms': { env: 'CHAOS_FAULT_PHASE_MS', min: 200 },
  'time-scale': { env: 'CHAOS_TIME_SCALE', min: 0.001 },
  'settle-timeout-ms': { env: 'CHAOS_SETTLE_TIMEOUT_MS', min: 1_000 },
  seed: { env: 'CHAOS_SEED', min: 0 },
} as const;
type NumericFlag = keyof typeof numericFlags;

export const chaosUsage = `Usage: npm run chaos -- [options]   (each also as CHAOS_<NAME>, e.g. CHAOS_ORDERS=500)
  --orders N              orders to submit (default 200)
  --concurrency C         submissions in flight at once (default 8)
  --duration-ms MS        chaos phase length (default: 150 ms per order, at least 30 s)
  --kill-every-ms MS      mean time between worker SIGKILLs, 0 = none (default 8000)
  --max-kills N           at most N kill rounds (default unlimited)
  --workers N             worker processes kept running (default 2)
  --temporal-restarts N   Temporal dev server restarts (default 1)
  --sandbox-restarts N    sandbox SIGKILLs and restarts on its state file (default 1)
  --api-restarts N        intake API SIGKILLs and restarts (default 1)
  --fault-phase-ms MS     mean length of one fault phase (default 3000)
  --time-scale X          SANDBOX_TIME_SCALE; timings scale with it (default 0.05)
  --settle-timeout-ms MS  how long orders may take to settle afterwards (default 300000)
  --seed N                random seed (default: random, printed)
  --keep                  keep the run directory (Temporal database, logs)
  --plain-payloads        no payload encryption (default: PAYLOAD_ENCRYPTION_KEYS set, as in production)`;

export function defaultChaosOptions(overrides: Partial<ChaosOptions> = {}): ChaosOptions {
  const orders = overrides.orders ?? 200;
  return {
    orders,
    concurrency: 8,
    durationMs: Math.max(30_000, orders * 150),
    killEveryMs: 8_000,
    maxKills: Number.MAX_SAFE_INTEGER,
    workers: 2,
    temporalRestarts: 1,
    sandboxRestarts: 1,
    apiRestarts: 1,
    faultPhaseMs: 3_000,
    timeScale: 0.05,
    settleTimeoutMs: 300_000,
    seed: Math.floor(Math.random() * 2 ** 31),
    keep: false,
    encrypt: true,
    apis: 1,
    builtWorkers: 0,
    ...overrides,
  };
}

const flag = (value: string | undefined) => value === '1' || value === 'true';

/** Throws an Error with the usage text on an unknown flag or a bad value. */
export function parseChaosOptions(argv: string[], env: NodeJS.ProcessEnv = process.env): ChaosOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        ...Object.fromEntries(Object.keys(numericFlags).map((name) => [name, { type: 'string' as const }])),
        keep: { type: 'boolean' },
        'plain-payloads': { type: 'boolean' },
      },
      strict: true,
    }));
  } catch (err) {
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n\n${chaosUsage}`);
  }

  const read = (flag: NumericFlag): number | undefined => {
    const { env: envName, min } = numericFlags[flag];
    const raw = (values as Record<string, string | undefined>)[flag] ?? env[envName];
    if (raw === undefined || raw === '') return undefined;
    const value = Number(raw);
    const integral = flag !== 'time-scale';
    if (!Number.isFinite(value) || value < min || (integral && !Number.isInteger(value))) {
      const kind = integral ? 'an integer' : 'a number';
      throw new Error(`--${flag} (${envName}) must be ${kind} ≥ ${min}, got "${raw}"\n\n${chaosUsage}`);
    }
    return value;
  };
  const given: Partial<ChaosOptions> = {
    orders: read('orders'),
    concurrency: read('concurrency'),
    durationMs: read('duration-ms'),
    killEveryMs: read('kill-every-ms'),
    maxKills: read('max-kills'),
    workers: read('workers'),
    temporalRestarts: read('temporal-restarts'),
    sandboxRestarts: read('sandbox-restarts'),
    apiRestarts: read('api-restarts'),
    faultPhaseMs: read('fault-phase-ms'),
    timeScale: read('time-scale'),
    settleTimeoutMs: read('settle-timeout-ms'),
    seed: read('seed'),
    keep: values.keep ?? flag(env.CHAOS_KEEP),
    encrypt: !(values['plain-payloads'] ?? flag(env.CHAOS_PLAIN_PAYLOADS)),
  };
  // Unset values must not override the defaults (some depend on --orders).
  const defined = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
  return defaultChaosOptions(defined);
}
