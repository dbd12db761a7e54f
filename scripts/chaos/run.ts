/**
 * One chaos run: start a stack of its own, submit orders while the provider misbehaves, workers
 * are SIGKILLed and Temporal restarts, then calm everything down, let the orders settle and
 * check that none was lost or sent twice. Everything it starts, it stops, whatever happens.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { setMaxListeners } from 'node:events';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SandboxAdmin } from '../../src/sandbox/admin-client';
import { faultLabel, FaultSchedule, type FaultPhase } from './faults';
import { IntakeClient } from './intake';
import type { ChaosOptions } from './options';
import { operatorOfPlanCode, planOrders } from './orders';
import { Random } from './random';
import {
  buildWorkflowBundle,
  CHAOS_ADMIN_TOKEN,
  CHAOS_API_KEY,
  CHAOS_PROVIDER_KEY,
  ChaosStack,
  type ExternalTemporal,
} from './stack';
import { newRecord, submitAll, settleAll, type OrderRecord } from './submit';
import { readProviderRecords } from './provider-records';
import { TemporalProbe } from './temporal';
import { orderSecrets, secretsInLogs } from './log-secrets';
import { holdReasons, verify, type Verdict } from './verify';

export interface ChaosSummary extends Verdict {
  seed: number;
  options: ChaosOptions;
  durationMs: number;
  chaosPhaseMs: number;
  settleMs: number;
  chaos: {
    killRounds: number;
    workersKilled: number;
    workerStarts: number;
    unexpectedWorkerExits: number;
    temporalRestarts: number;
    temporalDowntimeMs: number[];
    sandboxRestarts: number;
    sandboxDowntimeMs: number[];
    apiRestarts: number;
    apiDowntimeMs: number[];
    faultPhases: Record<string, number>;
    faultsInjected: Record<string, number>;
    /** The most orders /readyz showed held at once, for the balance and for an operator. */
    heldSeen: { balance: number; operator: number };
  };
  /** Where the Temporal database and part logs are, when kept. */
  runDir?: string;
}

/**
 * The longest an account phase waits for an order to hold (then it comes again later): with the
 * resume after it, well under the stack's ORDER_MAX_HOLD_MS (stack.ts).
 */
const ACCOUNT_PHASE_MAX_MS = 15_000;
/**
 * How long the chaos window may run on past its planned end while a promised phase is still to run
 * or to do its work (held orders still to send, say, when the window closes): two tries of one.
 */
const PROMISES_OVERTIME_MS = 2 * ACCOUNT_PHASE_MAX_MS;
/** How many order views an account phase reads per check, the latest submitted. */
const VIEWS_READ_PER_CHECK = 6;

interface Disruption {
  atMs: number;
  kind: 'kill' | 'restart' | 'restart-sandbox' | 'restart-api';
}

/**
 * Kills every `killEveryMs` (± a quarter, so a run of D ms gets about D / killEveryMs of them, at
 * most maxKills); Temporal, sandbox and API restarts each spread evenly, the sandbox's a quarter
 * slot before Temporal's and the API's a quarter slot after, all inside the chaos phase.
 */
function planDisruptions(rng: Random, options: ChaosOptions): Disruption[] {
  const plan: Disruption[] = [];
  if (options.killEveryMs > 0) {
    for (let k = 1; k <= options.maxKills; k++) {
      const atMs = k * options.killEveryMs + rng.between(-0.25, 0.25) * options.killEveryMs;
      if (atMs >= options.durationMs) break;
      plan.push({ atMs, kind: 'kill' });
    }
  }
  const spread = (count: number, offset: number, kind: Disruption['kind']) => {
    const slot = options.durationMs / (count + 1);
    for (let r = 1; r <= count; r++) {
      plan.push({ atMs: (r + offset) * slot + rng.between(-0.15, 0.15) * slot, kind });
    }
  };
  spread(options.temporalRestarts, 0, 'restart');
  spread(options.sandboxRestarts, -0.4, 'restart-sandbox');
  spread(options.apiRestarts, 0.4, 'restart-api');
  return plan.sort((a, b) => a.atMs - b.atMs);
}

export async function runChaos(
  options: ChaosOptions,
  context: {
    signal?: AbortSignal;
    log?: (line: string) => void;
    /** Run against this Temporal instead of a dev server of the run's own. */
    temporal?: ExternalTemporal;
  } = {},
): Promise<ChaosSummary> {
  if (context.temporal && !context.temporal.restart && options.temporalRestarts > 0) {
    throw new Error('temporalRestarts needs a Temporal the run can restart');
  }
  // Aborted when the run ends however it ends, so no loop or retry outlives it.
  const done = new AbortController();
  const signal = context.signal ? AbortSignal.any([context.signal, done.signal]) : done.signal;
  // Every request and sleep listens to it: hundreds at once are expected, not a leak.
  setMaxListeners(0, signal);
  const started = Date.now();
  const log = (line: string) =>
    context.log?.(`${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s  ${line}`);
  const rng = new Random(options.seed);
  const dir = mkdtempSync(join(tmpdir(), 'topup-chaos-'));
  log(`seed ${options.seed}; run directory ${dir}`);
  let toStop: ChaosStack | undefined;
  let passed = false;
  try {
    const stack = new ChaosStack({
      dir,
      temporal: context.temporal,
      apis: options.apis,
      builtWorkers: options.builtWorkers,
      timeScale: options.timeScale,
      workflowBundlePath: await buildWorkflowBundle(dir),
      encrypt: options.encrypt,
      log,
    });
    toStop = stack;
    await stack.start(options.workers);
    const intake = new IntakeClient(stack.apiUrls, CHAOS_API_KEY, signal);
    const admin = new SandboxAdmin(stack.sandboxUrl, CHAOS_ADMIN_TOKEN);
    // A provider without an atomic uniqueness check commits every send it receives: a send made
    // twice shows as a ref accepted twice, instead of hiding behind a 409.
    await admin.settings({ uniqueRefs: false });

    // A twentieth of the orders (at least 6) come after the chaos, as the fault-free control group.
    const controlCount = Math.min(options.orders, Math.max(6, Math.round(options.orders * 0.05)));
    const refPrefix = `chaos${options.seed.toString(36)}`;
    const chaosRecords = planOrders(rng.fork(), {
      count: options.orders - controlCount,
      spreadMs: options.durationMs,
      refPrefix,
      control: false,
    }).map(newRecord);
    const controlRecords = planOrders(rng.fork(), {
      count: controlCount,
      spreadMs: 2_000,
      refPrefix: `${refPrefix}-ctl`,
      control: true,
    }).map(newRecord);
    const disruptions = planDisruptions(rng.fork(), options);
    const chaosRng = rng.fork();
    let chaosStarted = Date.now();
    const nextOperator = () => {
      const elapsedMs = Date.now() - chaosStarted;
      const next = chaosRecords.find(
        (r) => r.planned.atMs > elapsedMs && r.planned.request.type === 'mobile_topup',
      )?.planned.request;
      return next?.type === 'mobile_topup' ? operatorOfPlanCode(next.planCode) : undefined;
    };
    const faults = new FaultSchedule(admin, rng.fork(), nextOperator);

    // ---- the chaos phase ----
    chaosStarted = Date.now();
    log(
      `chaos phase: ${chaosRecords.length} orders over ${options.durationMs / 1000} s, ${disruptions.length} disruptions planned`,
    );
    const chaos = {
      killRounds: 0,
      workersKilled: 0,
      temporalRestarts: 0,
      temporalDowntimeMs: [] as number[],
      sandboxRestarts: 0,
      sandboxDowntimeMs: [] as number[],
      apiRestarts: 0,
      apiDowntimeMs: [] as number[],
    };
    let chaosOver = false;
    let chaosEndedAt = 0;
    /** The most orders seen held at once for each reason, while a phase that holds them ran. */
    const heldSeen = { balance: 0, operator: 0 };
    /**
     * Whether the phase has done its work. A balance outage has once the provider received a send
     * since it began (refused: the balance covers no order). Either account phase has when /readyz
     * shows an order held for its reason, or when the view of an order submitted since it began
     * shows one. The provider's side comes first: /readyz asks the one account workflow, and views
     * ask the orders' workflows, which a burst of holds can keep workers too busy to answer.
     */
    const phaseDone = async (phase: FaultPhase, startedAt: number): Promise<boolean> => {
      if (phase.name === 'late-commit') return (await faults.hits('late_commit')) > 0;
      const reason =
        phase.name === 'balance-outage' ? 'balance' : phase.name === 'operator-down' ? 'operator' : undefined;
      if (!reason) return true;
      if (reason === 'balance' && (await sendsSince(startedAt)) > 0) return true;
      const held = (await intake.held())?.[reason] ?? 0;
      heldSeen[reason] = Math.max(heldSeen[reason], held);
      if (held > 0) return true;
      const recent = chaosRecords
        .filter((r) => r.accepted && chaosStarted + r.planned.atMs >= startedAt)
        .slice(-VIEWS_READ_PER_CHECK);
      for (const record of recent) {
        const view = await intake.view(record.planned.request.ref);
        if (view && holdReasons(view).has(reason)) return true;
      }
      return false;
    };
    const sendRoutes: readonly string[] = ['mobile.send', 'internet.send', 'giftcards.placeOrder'];
    /** Sends the provider received since `at` (0 while the sandbox is down). */
    const sendsSince = async (at: number) => {
      const requests = await admin.requests().catch(() => []);
      return requests.filter((r) => sendRoutes.includes(r.route) && r.receivedAt >= at).length;
    };
    const guard = () => {
      signal.throwIfAborted();
      if (stack.fatal) throw stack.fatal;
    };

    const submitting = submitAll(intake, chaosRecords, {
      concurrency: options.concurrency,
      startedAt: chaosStarted,
      signal,
    });
    const disrupting = (async () => {
      for (const disruption of disruptions) {
        const wait = chaosStarted + disruption.atMs - Date.now();
        if (wait > 0) await sleep(wait, undefined, { signal });
        guard();
        if (disruption.kind === 'restart') {
          log(
            context.temporal
              ? 'restarting Temporal'
              : 'restarting the Temporal dev server (same port, same database)',
          );
          const downMs = await stack.restartTemporal();
          chaos.temporalRestarts++;
          chaos.temporalDowntimeMs.push(downMs);
          log(`Temporal is back after ${(downMs / 1000).toFixed(1)} s`);
        } else if (disruption.kind === 'restart-sandbox') {
          log('SIGKILL the sandbox; starting it again on its state file');
          const downMs = await faults.aroundRestart(async () => {
            const ms = await stack.restartPart('sandbox');
            // The setting lives in the state file: a sandbox that lost it would hide double sends.
            const { uniqueRefs } = await admin.settings({});
            if (uniqueRefs)
              throw new Error('the restarted sandbox lost its settings (uniqueRefs is back on)');
            return ms;
          });
          chaos.sandboxRestarts++;
          chaos.sandboxDowntimeMs.push(downMs);
          log(`the sandbox is back after ${(downMs / 1000).toFixed(1)} s`);
        } else if (disruption.kind === 'restart-api') {
          log('SIGKILL the intake API; starting it again');
          const downMs = await stack.restartPart('api');
          chaos.apiRestarts++;
          chaos.apiDowntimeMs.push(downMs);
          log(`the API is back after ${(downMs / 1000).toFixed(1)} s`);
        } else {
          const live = [...stack.workers];
          // Sometimes every worker at once: nothing polls until the replacements are up.
          const victims = chaosRng.chance(0.25) ? live : live.length > 0 ? [chaosRng.pick(live)] : [];
          log(`SIGKILL ${victims.map((w) => w.name).join(', ') || '(no worker running)'}`);
          await stack.kill(victims);
          chaos.killRounds++;
          chaos.workersKilled += victims.length;
          await stack.ensureWorkers(options.workers);
        }
      }
    })();
    let faultsOver = false;
    /** The planned window is over and no promised phase is left to run or to finish, or the overtime is spent. */
    const overtimeOver = () =>
      chaosOver && (!faults.promisesLeft() || Date.now() - chaosEndedAt >= PROMISES_OVERTIME_MS);
    const faulting = (async () => {
      while (!overtimeOver()) {
        guard();
        const phase = await faults.next();
        const { balance, operatorDown } = phase.account ?? {};
        const what = [
          ...phase.rules.map((rule) => faultLabel(rule)),
          ...(balance !== undefined ? [`balance ${balance} DZD`] : []),
          ...(operatorDown ? [`${operatorDown} down`] : []),
        ].join(', ');
        log(`provider: ${phase.name}${what ? ` (${what})` : ''}`);
        const phaseStarted = Date.now();
        await sleep(options.faultPhaseMs * chaosRng.between(0.5, 1.5), undefined, { signal });
        // The phases every run promises last until they have done their work — delayed a send,
        // held an order for the balance, held one for its operator — so a slow start of the
        // submissions or an operator no order wanted for a while cannot leave the run without one.
        // An account phase stops waiting after ACCOUNT_PHASE_MAX_MS (its held orders must not
        // reach their longest hold) and comes again later.
        for (;;) {
          if (overtimeOver()) break;
          if (await phaseDone(phase, phaseStarted)) {
            faults.kept();
            break;
          }
          if (phase.account && Date.now() - phaseStarted >= ACCOUNT_PHASE_MAX_MS) {
            faults.owe(phase);
            log(`provider: ${phase.name} held no order in ${ACCOUNT_PHASE_MAX_MS / 1000} s; it comes again`);
            break;
          }
          await sleep(250, undefined, { signal });
        }
      }
    })().finally(() => {
      faultsOver = true;
    });
    // A worker that died on its own is replaced, as an orchestrator would.
    const keeping = (async () => {
      while (!faultsOver) {
        guard();
        if (stack.workers.size < options.workers) await stack.ensureWorkers(options.workers);
        await sleep(1_000, undefined, { signal });
      }
    })();
    const reporting = (async () => {
      while (!chaosOver) {
        await sleep(5_000, undefined, { signal });
        const answered = chaosRecords.filter((r) => r.status !== undefined || r.error !== undefined).length;
        log(`submitted ${answered}/${chaosRecords.length}, ${stack.workers.size} worker(s) up`);
      }
    })();
    // Background loops fail the run through the Promise.all below; until then their rejections are handled.
    const background = [faulting, keeping, reporting];
    for (const loop of background) loop.catch(() => undefined);
    try {
      await Promise.all([submitting, disrupting, sleep(options.durationMs, undefined, { signal })]);
    } finally {
      chaosOver = true;
      chaosEndedAt = Date.now();
    }
    await Promise.all([faulting, keeping]);
    if (Date.now() - chaosEndedAt > 1_000)
      log(
        `the chaos window ran ${((Date.now() - chaosEndedAt) / 1000).toFixed(1)} s over for its promised phases`,
      );
    const chaosPhaseMs = Date.now() - chaosStarted;

    // ---- calm: no faults, every worker up, then the control group ----
    await faults.clear();
    await stack.ensureWorkers(options.workers);
    guard();
    log(`chaos over; faults cleared; submitting ${controlRecords.length} control orders`);
    await submitAll(intake, controlRecords, {
      concurrency: options.concurrency,
      startedAt: Date.now(),
      signal,
    });

    const records: OrderRecord[] = [...chaosRecords, ...controlRecords];
    const settleStarted = Date.now();
    let lastReport = 0;
    const unsettled = await settleAll(intake, records, {
      deadline: settleStarted + options.settleTimeoutMs,
      signal,
      progress: (left) => {
        guard();
        if (left.length === 0 || Date.now() - lastReport < 5_000) return;
        lastReport = Date.now();
        log(`waiting for ${left.length} order(s) to settle`);
      },
    });
    const settleMs = Date.now() - settleStarted;
    log(
      unsettled.length
        ? `${unsettled.length} order(s) did not settle in time`
        : 'every order is final or in review',
    );

    const probe = await TemporalProbe.connect(stack.temporalAddress, stack.namespace);
    try {
      const accepted = records.filter((r) => r.accepted).length;
      const verdict = await verify({
        records,
        sends: await admin.sends(),
        provider: await readProviderRecords(stack.sandboxUrl, CHAOS_PROVIDER_KEY),
        workflowCount: await probe.countOrders(accepted),
        intakeStats: intake.stats,
        placements: await admin.giftCardOrders(),
        troubleOf: (ref) => probe.troubleOf(ref),
      });
      verdict.problems.push(...secretsInLogs(stack.logDir, [...stack.secrets, ...orderSecrets(records)]));
      // The account phases every run promises must have held orders, or the run proved nothing of
      // holds (a run too small to have orders to hold excepted).
      const mayHold = {
        balance: chaosRecords.length > 0,
        operator: chaosRecords.some((r) => r.planned.request.type === 'mobile_topup'),
      };
      for (const [phase, reason] of [
        ['balance-outage', 'balance'],
        ['operator-down', 'operator'],
      ] as const) {
        if (mayHold[reason] && verdict.held[reason] === 0)
          verdict.problems.push(
            `no order was held for the ${reason === 'balance' ? 'balance' : 'operator down'} (${faults.phases[phase]} ${phase} phase(s), at most ${heldSeen[reason]} seen held on /readyz)`,
          );
      }
      if (stack.unexpectedWorkerExits > 0) {
        verdict.problems.push(`${stack.unexpectedWorkerExits} worker(s) exited on their own (see the logs)`);
      }
      passed = verdict.problems.length === 0;
      return {
        ...verdict,
        seed: options.seed,
        options,
        durationMs: Date.now() - started,
        chaosPhaseMs,
        settleMs,
        chaos: {
          ...chaos,
          workerStarts: stack.workerStarts,
          unexpectedWorkerExits: stack.unexpectedWorkerExits,
          faultPhases: faults.phases,
          faultsInjected: faults.injected,
          heldSeen,
        },
        ...(passed && !options.keep ? {} : { runDir: dir }),
      };
    } finally {
      await probe.close();
    }
  } finally {
    done.abort();
    log('stopping the stack');
    await toStop?.stop();
    if (passed && !options.keep) rmSync(dir, { recursive: true, force: true });
    else log(`run directory kept: ${dir}`);
  }
}
