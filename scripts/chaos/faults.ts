/**
 * The chaos run's fault schedule, applied through the sandbox's admin surface:
 * phases of random fault rules that replace each other, so the provider is by turns slow,
 * failing before or after it commits a send, rate limiting, hanging, dropping answers, committing
 * sends after the worker gave up on them while its reads lag behind, down altogether — or fine —
 * and phases where the account itself cannot take orders: its balance runs out, or /v3/ping
 * reports an operator down (docs/contributors.md "Chaos and hostile input").
 */
import { orderRoutes, type SandboxAdmin } from '../../src/sandbox/admin-client';
import type { OperatorName } from '../../src/provider/wire';
import type { FaultRule, FaultSpecInput, RouteName } from '../../src/sandbox/faults';
import type { Random } from './random';

const sendRoutes: readonly RouteName[] = ['mobile.send', 'internet.send', 'giftcards.placeOrder'];

/** The rule kinds that may target any route (late commits and lagging reads have routes of their own). */
type AnyRouteRule = Exclude<FaultSpecInput, { kind: 'late_commit' | 'lagging_reads' }>;

export interface FaultPhase {
  name: 'calm' | 'mixed' | 'flaky-sends' | 'late-commit' | 'outage' | 'balance-outage' | 'operator-down';
  rules: FaultSpecInput[];
  /**
   * What the phase does to the provider's account (its data, kept in the sandbox's state file):
   * the balance it sets, or the operator /v3/ping reports down. Undone when the phase ends.
   */
  account?: { balance?: number; operatorDown?: OperatorName };
}

/** The operators of the plans the chaos orders use (orders.ts). */
const orderOperators: readonly OperatorName[] = ['mobilis', 'djezzy', 'ooredoo'];

/**
 * The balance runs out: 0, or a few dinars, below the cheapest order of the mix (a 100 DZD mobile
 * top-up costs 98), so the provider refuses every send with INSUFFICIENT_BALANCE until it is topped up.
 */
export function balanceOutagePhase(rng: Random): FaultPhase {
  return { name: 'balance-outage', rules: [], account: { balance: rng.chance(0.5) ? 0 : rng.int(1, 90) } };
}

/**
 * /v3/ping reports one operator of the mix down (`operator`, else one at random); its mobile
 * orders are held until it is up again.
 */
export function operatorDownPhase(rng: Random, operator?: OperatorName): FaultPhase {
  return {
    name: 'operator-down',
    rules: [],
    account: { operatorDown: operator ?? rng.pick(orderOperators) },
  };
}

/**
 * The provider of docs/contributors.md "Never send twice: what we assume of the provider" at its worst: sends
 * committed up to 4 s after they arrived — mostly after the worker's 1.5 s headers timeout gave up
 * on them, and after a look-up one retry later would have come — and reads up to 1.5 s behind.
 * Commit delay plus read lag stays under the run's settle window (at least 6 s, stack.ts): what
 * the send path assumes, and what it must survive.
 */
export function lateCommitPhase(rng: Random): FaultPhase {
  return {
    name: 'late-commit',
    rules: [
      { kind: 'late_commit', commitDelayMs: rng.int(1_000, 4_000), probability: rng.between(0.3, 0.8) },
      { kind: 'lagging_reads', lagMs: rng.int(200, 1_500), probability: rng.between(0.3, 0.9) },
    ],
  };
}

/** One phase's rules. Probabilities stay below 1 except in a short outage, so orders keep moving. */
export function randomFaultPhase(rng: Random): FaultPhase {
  const roll = rng.next();
  if (roll < 0.15) return { name: 'calm', rules: [] };
  if (roll < 0.3) return lateCommitPhase(rng);
  if (roll < 0.35) return rng.chance(0.5) ? balanceOutagePhase(rng) : operatorDownPhase(rng);
  if (roll < 0.45) {
    return {
      name: 'outage',
      rules: [{ kind: 'error', routes: rng.subset(orderRoutes), status: rng.pick([502, 503] as const) }],
    };
  }
  if (roll < 0.6) {
    // The case never-send-twice exists for: the send commits and the answer is lost.
    return {
      name: 'flaky-sends',
      rules: [
        { kind: 'drop_after_commit', routes: [...sendRoutes], probability: rng.between(0.1, 0.4) },
        { kind: 'error', afterCommit: true, routes: [...sendRoutes], probability: rng.between(0.1, 0.3) },
        { kind: 'hang', afterCommit: true, routes: [...sendRoutes], probability: rng.between(0.02, 0.1) },
      ],
    };
  }
  const candidates: (() => AnyRouteRule)[] = [
    // Some latencies exceed the provider headers timeout (1.5 s): the call times out, yet the sandbox acts on it.
    () => ({
      kind: 'latency',
      latencyMs: rng.chance(0.2) ? rng.int(1_200, 2_500) : rng.int(20, 600),
      probability: rng.between(0.1, 0.6),
    }),
    () => ({
      kind: 'error',
      status: rng.pick([500, 502, 503, 504] as const),
      probability: rng.between(0.05, 0.25),
    }),
    () => ({
      kind: 'error',
      afterCommit: true,
      status: rng.pick([500, 503] as const),
      probability: rng.between(0.05, 0.2),
    }),
    () => ({ kind: 'rate_limit', retryAfterSeconds: rng.int(0, 1), probability: rng.between(0.05, 0.25) }),
    () => ({ kind: 'hang', probability: rng.between(0.02, 0.08) }),
    () => ({ kind: 'hang', afterCommit: true, probability: rng.between(0.02, 0.08) }),
    () => ({ kind: 'drop_after_commit', probability: rng.between(0.05, 0.2) }),
  ];
  const rules = rng.subset(candidates).map((make) => ({ ...make(), routes: rng.subset(orderRoutes) }));
  return { name: 'mixed', rules };
}

/** How a rule is counted in the summary: its kind, and whether it acts after the commit. */
export function faultLabel(rule: Pick<FaultRule, 'kind'> & { afterCommit?: boolean }): string {
  return rule.afterCommit ? `${rule.kind} after commit` : rule.kind;
}

/**
 * The phases every run has, whatever the dice say: the first three, while orders are still being
 * submitted — the lean lifecycle sends at submission, so a later phase may find no send to delay
 * or hold. The run keeps each of them until it has done its work (run.ts).
 */
const promisedPhases: Record<number, (rng: Random, operator?: OperatorName) => FaultPhase> = {
  1: lateCommitPhase,
  // Before the balance outage: while orders wait for the balance the gate holds every send for
  // the balance first, so an operator down after it may find no order to hold for its own reason.
  2: operatorDownPhase,
  3: balanceOutagePhase,
};

/**
 * Applies phase after phase and counts how many requests each kind of fault hit. A sandbox
 * restart forgets the rules (they are a test's set-up, not the provider's data): `aroundRestart`
 * counts them first and puts the phase's rules back after.
 */
export class FaultSchedule {
  readonly injected: Record<string, number> = {};
  readonly phases: Record<FaultPhase['name'], number> = {
    calm: 0,
    mixed: 0,
    'flaky-sends': 0,
    'late-commit': 0,
    outage: 0,
    'balance-outage': 0,
    'operator-down': 0,
  };
  #current: FaultPhase = { name: 'calm', rules: [] };
  #count = 0;
  /** Whether the current phase is one every run promises (or one owed again). */
  #currentPromised = false;
  /** Promised phases that ended before they had done their work: they come again next. */
  readonly #owed: ((rng: Random, operator?: OperatorName) => FaultPhase)[] = [];
  /** The balance before a balance outage, put back when it ends. */
  #balanceBefore?: number;
  /** Phase changes and restarts one at a time: never a rule added to a sandbox that is down. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly admin: SandboxAdmin,
    private readonly rng: Random,
    /**
     * The operator of the next mobile order to be submitted: the promised operator-down phase
     * takes it down, so the phase holds an order within one order's time rather than by luck.
     */
    private readonly nextOperator: () => OperatorName | undefined = () => undefined,
  ) {}

  next(): Promise<FaultPhase> {
    return this.#serial(async () => {
      await this.#clear();
      const promised = promisedPhases[++this.#count] ?? this.#owed.shift();
      const phase = (promised ?? randomFaultPhase)(this.rng, this.nextOperator());
      for (const rule of phase.rules) await this.admin.add(rule);
      if (phase.account?.balance !== undefined) {
        this.#balanceBefore = (await this.admin.settings({})).balance;
        await this.admin.settings({ balance: phase.account.balance });
      }
      if (phase.account?.operatorDown) await this.admin.operators({ [phase.account.operatorDown]: 'down' });
      this.phases[phase.name]++;
      this.#current = phase;
      this.#currentPromised = promised !== undefined;
      return phase;
    });
  }

  /**
   * Whether a promised phase is still to run or to finish its work: the chaos window then goes on
   * until it has (run.ts), since a promise left for the calm would prove nothing of its fault.
   */
  promisesLeft(): boolean {
    return this.#currentPromised || this.#owed.length > 0 || promisedPhases[this.#count + 1] !== undefined;
  }

  /** The current phase has done its work. */
  kept(): void {
    this.#currentPromised = false;
  }

  /** The phase ended before it had done its work (delayed a send, held an order): it comes again next. */
  owe(phase: FaultPhase): void {
    const again = {
      'late-commit': lateCommitPhase,
      'balance-outage': balanceOutagePhase,
      'operator-down': operatorDownPhase,
    }[phase.name as 'late-commit' | 'balance-outage' | 'operator-down'];
    if (again) this.#owed.push(again);
    this.#currentPromised = false;
  }

  /**
   * How many requests a kind of fault has hit so far, the current phase's rules included. Serial
   * with restarts, so it never asks a sandbox that is down.
   */
  hits(kind: FaultRule['kind']): Promise<number> {
    return this.#serial(async () => {
      let total = this.injected[kind] ?? 0;
      for (const rule of await this.admin.rules()) if (faultLabel(rule) === kind) total += rule.applied;
      return total;
    });
  }

  /** Removes every rule and undoes the account's trouble: the calm after the chaos. */
  clear(): Promise<void> {
    return this.#serial(async () => {
      await this.#clear();
      this.#current = { name: 'calm', rules: [] };
      this.#currentPromised = false;
    });
  }

  /**
   * Runs `restart` (the sandbox going down and up again), then re-applies the current phase's
   * rules. The account's state is the provider's data, not a rule: the restarted sandbox must
   * still hold it from its state file, or the run fails (a provider that forgot its balance would
   * end an outage no one topped up).
   */
  aroundRestart<T>(restart: () => Promise<T>): Promise<T> {
    return this.#serial(async () => {
      await this.#countRules();
      await this.admin.clear();
      const result = await restart();
      for (const rule of this.#current.rules) await this.admin.add(rule);
      const { balance, operatorDown } = this.#current.account ?? {};
      if (balance !== undefined) {
        const { balance: now } = await this.admin.settings({});
        if (now !== balance)
          throw new Error(`the restarted sandbox lost the outage's balance (${now} DZD, set ${balance})`);
      }
      if (operatorDown) {
        const { [operatorDown]: state } = await this.admin.operators({});
        if (state !== 'down')
          throw new Error(`the restarted sandbox lost operator ${operatorDown}'s state (${state}, set down)`);
      }
      return result;
    });
  }

  /** Ends the current phase: counts and removes its rules, tops the balance up, brings the operator up. */
  async #clear(): Promise<void> {
    await this.#countRules();
    await this.admin.clear();
    const { balance, operatorDown } = this.#current.account ?? {};
    if (balance !== undefined && this.#balanceBefore !== undefined) {
      await this.admin.settings({ balance: this.#balanceBefore });
      this.#balanceBefore = undefined;
    }
    if (operatorDown) await this.admin.operators({ [operatorDown]: 'up' });
  }

  /** Adds what each rule did (`applied` is per rule) to the counts. */
  async #countRules(): Promise<void> {
    for (const rule of await this.admin.rules()) {
      const label = faultLabel(rule);
      this.injected[label] = (this.injected[label] ?? 0) + rule.applied;
    }
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }
}
