/**
 * The chaos run's fault schedule, applied through the sandbox's admin surface:
 * phases of random fault rules that replace each other, so the provider is by turns slow,
 * failing before or after it commits a send, rate limiting, hanging, dropping answers, down
 * altogether — or fine.
 */
import { orderRoutes, type SandboxAdmin } from '../../src/sandbox/admin-client';
import type { FaultRule, FaultSpecInput, RouteName } from '../../src/sandbox/faults';
import type { Random } from './random';

const sendRoutes: readonly RouteName[] = ['mobile.send', 'internet.send', 'giftcards.placeOrder'];

/** The rule kinds that may target any route (late commits and lagging reads have routes of their own). */
type AnyRouteRule = Exclude<FaultSpecInput, { kind: 'late_commit' | 'lagging_reads' }>;

export interface FaultPhase {
  name: 'calm' | 'mixed' | 'flaky-sends' | 'outage';
  rules: FaultSpecInput[];
}

/** One phase's rules. Probabilities stay below 1 except in a short outage, so orders keep moving. */
export function randomFaultPhase(rng: Random): FaultPhase {
  const roll = rng.next();
  if (roll < 0.15) return { name: 'calm', rules: [] };
  if (roll < 0.25) {
    return {
      name: 'outage',
      rules: [{ kind: 'error', routes: rng.subset(orderRoutes), status: rng.pick([502, 503] as const) }],
    };
  }
  if (roll < 0.4) {
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

/** Applies phase after phase and counts how many requests each kind of fault hit. */
export class FaultSchedule {
  readonly injected: Record<string, number> = {};
  readonly phases: Record<FaultPhase['name'], number> = { calm: 0, mixed: 0, 'flaky-sends': 0, outage: 0 };

  constructor(
    private readonly admin: SandboxAdmin,
    private readonly rng: Random,
  ) {}

  async next(): Promise<FaultPhase> {
    await this.clear();
    const phase = randomFaultPhase(this.rng);
    for (const rule of phase.rules) await this.admin.add(rule);
    this.phases[phase.name]++;
    return phase;
  }

  /** Removes every rule, first counting what each one did (`applied` is per rule). */
  async clear(): Promise<void> {
    for (const rule of await this.admin.rules()) {
      const label = faultLabel(rule);
      this.injected[label] = (this.injected[label] ?? 0) + rule.applied;
    }
    await this.admin.clear();
  }
}
