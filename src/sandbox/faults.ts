/**
 * Fault injection: rules an admin adds so tests can make the provider slow, failing, rate
 * limiting, hanging, or — the cases never-send-twice exists for — committing a send and then
 * losing the answer, committing it only after the client gave up, or showing a commit to reads
 * only some time after it happened.
 *
 * Every rule kind fills one slot of a request's plan: `latency` (a delay before anything),
 * `late_commit` (sends: when the send is committed), `lagging_reads` (checks: how far behind the
 * reads are) and the action (every other kind: what happens to the answer). Rules are matched per
 * request in insertion order; the first matching rule of each slot whose dice roll fires applies,
 * so one request may be slow, commit late and then lose its answer. A rule with `times` is removed
 * once it has applied that many times.
 */
import { z } from 'zod';
import { errorCodes } from '../provider';
import { SandboxError } from './errors';

/** The /v3 operations a rule can target. */
export const routeNames = [
  'validate',
  'ping',
  'account.balance',
  'account.transactions',
  'mobile.plans',
  'mobile.send',
  'mobile.check',
  'mobile.checkId',
  'mobile.list',
  'internet.products',
  'internet.checkNumber',
  'internet.send',
  'internet.check',
  'internet.checkId',
  'internet.list',
  'giftcards.catalog',
  'giftcards.checkProduct',
  'giftcards.placeOrder',
  'giftcards.checkOrder',
  'giftcards.list',
] as const;
export const RouteName = z.enum(routeNames);
export type RouteName = z.infer<typeof RouteName>;

/** The routes that create something (money moves): the only ones a `late_commit` rule can target. */
export const sendRouteNames = ['mobile.send', 'internet.send', 'giftcards.placeOrder'] as const;
/**
 * The routes that read a top-up or order back, the lists and the ledger included: the only ones a
 * `lagging_reads` rule can target (a list or ledger read as of `lagMs` ago leaves out what was
 * committed since, as a replica behind its primary would).
 */
export const readRouteNames = [
  'mobile.check',
  'mobile.checkId',
  'internet.check',
  'internet.checkId',
  'giftcards.checkOrder',
  'mobile.list',
  'internet.list',
  'giftcards.list',
  'account.transactions',
] as const;

/** A latency longer than any sane client timeout is a hang: use kind `hang` for that. */
const MAX_LATENCY_MS = 120_000;
/** Retry-After is whole seconds (RFC 9110 delta-seconds); an hour is already "come back later". */
const MAX_RETRY_AFTER_SECONDS = 3_600;

const odds = {
  probability: z.number().min(0).max(1).default(1),
  /** Unset: unlimited. */
  times: z.number().int().positive().optional(),
};
const common = {
  /** Unset: every /v3 route. */
  routes: z.array(RouteName).min(1).optional(),
  ...odds,
};

export const FaultSpec = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('latency'), ...common, latencyMs: z.number().min(0).max(MAX_LATENCY_MS) }),
  z.strictObject({
    kind: z.literal('error'),
    ...common,
    status: z.literal([500, 502, 503, 504]).default(503),
    afterCommit: z.boolean().default(false),
  }),
  z.strictObject({
    kind: z.literal('rate_limit'),
    ...common,
    retryAfterSeconds: z.number().int().min(0).max(MAX_RETRY_AFTER_SECONDS).default(1),
  }),
  z.strictObject({ kind: z.literal('hang'), ...common, afterCommit: z.boolean().default(false) }),
  z.strictObject({ kind: z.literal('drop_after_commit'), ...common }),
  /**
   * The send is validated at once, committed `commitDelayMs` later whether or not the client is
   * still connected, and answered after the commit if its connection is still open. Until the
   * commit, check-ref does not know the ref. Routes unset: every send route.
   */
  z.strictObject({
    kind: z.literal('late_commit'),
    routes: z.array(z.enum(sendRouteNames)).min(1).optional(),
    ...odds,
    commitDelayMs: z.number().min(0).max(MAX_LATENCY_MS),
  }),
  /**
   * The read is answered as of `lagMs` ago, like a replica behind the primary: a commit younger
   * than that is not found, an older one shows the status it had then. Routes unset: every read route.
   */
  z.strictObject({
    kind: z.literal('lagging_reads'),
    routes: z.array(z.enum(readRouteNames)).min(1).optional(),
    ...odds,
    lagMs: z.number().min(0).max(MAX_LATENCY_MS),
  }),
]);
/** What an admin posts (defaults optional). */
export type FaultSpecInput = z.input<typeof FaultSpec>;
export type FaultSpec = z.output<typeof FaultSpec>;

interface RuleBookkeeping {
  id: string;
  /** How many requests it has applied to so far. */
  applied: number;
}
export type FaultRule = FaultSpec & RuleBookkeeping;
type TimingRule = Extract<FaultRule, { kind: 'latency' | 'late_commit' | 'lagging_reads' }>;
export type ActionRule = Exclude<FaultRule, TimingRule>;

/** What one request gets: a delay, when a send commits, how stale a read is, and what happens to the answer. */
export interface FaultPlan {
  latencyMs: number;
  /** Sends: commit this long after the request was validated (0: at once). */
  commitDelayMs: number;
  /** Reads: answer as of this long ago (0: now). */
  readLagMs: number;
  action?: ActionRule;
}

type Slot = 'latency' | 'commit' | 'read' | 'action';

function slotOf(rule: FaultRule): Slot {
  switch (rule.kind) {
    case 'latency':
      return 'latency';
    case 'late_commit':
      return 'commit';
    case 'lagging_reads':
      return 'read';
    default:
      return 'action';
  }
}

/** Rules without routes apply to every route their slot makes sense for. */
function appliesTo(rule: FaultRule, route: RouteName): boolean {
  if (rule.routes) return (rule.routes as readonly RouteName[]).includes(route);
  const slot = slotOf(rule);
  if (slot === 'commit') return (sendRouteNames as readonly RouteName[]).includes(route);
  if (slot === 'read') return (readRouteNames as readonly RouteName[]).includes(route);
  return true;
}

/** How a rule changes the answer: another answer, no answer at all, or a reset connection. */
export type FaultEffect = { kind: 'answer'; error: SandboxError } | { kind: 'hang' } | { kind: 'drop' };

/** Does the rule let the request be processed (the send committed) before it acts? */
export function actsAfterCommit(rule: ActionRule): boolean {
  return rule.kind === 'drop_after_commit' || ('afterCommit' in rule && rule.afterCommit);
}

export function effectOf(rule: ActionRule): FaultEffect {
  switch (rule.kind) {
    case 'error':
      return {
        kind: 'answer',
        error: new SandboxError(
          rule.status,
          errorCodes.internal,
          `injected fault ${rule.id}: ${rule.status}`,
        ),
      };
    case 'rate_limit':
      return {
        kind: 'answer',
        error: new SandboxError(429, errorCodes.rateLimited, 'too many requests, retry later', {
          'Retry-After': String(rule.retryAfterSeconds),
        }),
      };
    case 'hang':
      return { kind: 'hang' };
    case 'drop_after_commit':
      return { kind: 'drop' };
  }
}

export class FaultStore {
  #rules: FaultRule[] = [];
  #nextId = 1;

  /** `random` is injectable so probability can be tested without flakiness. */
  constructor(private readonly random: () => number = Math.random) {}

  add(spec: FaultSpec): FaultRule {
    const rule: FaultRule = { ...spec, id: `fault-${this.#nextId++}`, applied: 0 };
    this.#rules.push(rule);
    return rule;
  }

  list(): readonly FaultRule[] {
    return this.#rules;
  }

  remove(id: string): boolean {
    const before = this.#rules.length;
    this.#rules = this.#rules.filter((rule) => rule.id !== id);
    return this.#rules.length < before;
  }

  /** Returns how many rules were removed. */
  clear(): number {
    const removed = this.#rules.length;
    this.#rules = [];
    return removed;
  }

  /**
   * Choose (and count) the rules that apply to one request on `route`. Synchronous, so under any
   * concurrency a rule with `times: n` applies to exactly n requests.
   */
  plan(route: RouteName): FaultPlan {
    const chosen = new Map<Slot, FaultRule>();
    for (const rule of this.#rules) {
      const slot = slotOf(rule);
      if (chosen.has(slot) || !appliesTo(rule, route) || !this.#fires(rule)) continue;
      chosen.set(slot, rule);
    }
    const plan: FaultPlan = { latencyMs: 0, commitDelayMs: 0, readLagMs: 0 };
    for (const rule of chosen.values()) {
      this.#consume(rule);
      if (rule.kind === 'latency') plan.latencyMs = rule.latencyMs;
      else if (rule.kind === 'late_commit') plan.commitDelayMs = rule.commitDelayMs;
      else if (rule.kind === 'lagging_reads') plan.readLagMs = rule.lagMs;
      else plan.action = rule;
    }
    return plan;
  }

  #fires(rule: FaultRule): boolean {
    return rule.probability >= 1 || this.random() < rule.probability;
  }

  #consume(rule: FaultRule): void {
    rule.applied++;
    if (rule.times !== undefined && rule.applied >= rule.times) this.remove(rule.id);
  }
}
