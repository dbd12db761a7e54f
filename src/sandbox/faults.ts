/**
 * Fault injection: rules an admin adds so tests can make the provider slow, failing, rate
 * limiting, hanging, or — the case never-send-twice exists for — committing a send and then
 * losing the answer.
 *
 * Rules are matched per request in insertion order. At most one latency rule and one other rule
 * apply to a request: latency first, then the first matching non-latency rule whose dice roll
 * fires. A rule with `times` is removed once it has applied that many times.
 */
import { z } from 'zod';
import { errorCodes } from '../provider/wire';
import { SandboxError } from './errors';

/** The /v3 operations a rule can target. */
export const routeNames = [
  'validate',
  'mobile.send',
  'mobile.check',
  'internet.send',
  'internet.check',
  'giftcards.catalog',
  'giftcards.placeOrder',
  'giftcards.checkOrder',
] as const;
export const RouteName = z.enum(routeNames);
export type RouteName = z.infer<typeof RouteName>;

/** A latency longer than any sane client timeout is a hang: use kind `hang` for that. */
const MAX_LATENCY_MS = 120_000;
/** Retry-After is whole seconds (RFC 9110 delta-seconds); an hour is already "come back later". */
const MAX_RETRY_AFTER_SECONDS = 3_600;

const common = {
  /** Unset: every /v3 route. */
  routes: z.array(RouteName).min(1).optional(),
  probability: z.number().min(0).max(1).default(1),
  /** Unset: unlimited. */
  times: z.number().int().positive().optional(),
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
type LatencyRule = Extract<FaultRule, { kind: 'latency' }>;
export type ActionRule = Exclude<FaultRule, LatencyRule>;

/** What one request gets: a delay, then possibly a rule that changes the answer. */
export interface FaultPlan {
  latencyMs: number;
  action?: ActionRule;
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
    let latency: LatencyRule | undefined;
    let action: ActionRule | undefined;
    for (const rule of this.#rules) {
      if (latency && action) break;
      if (rule.routes && !rule.routes.includes(route)) continue;
      if (rule.kind === 'latency' ? latency : action) continue;
      if (!this.#fires(rule)) continue;
      if (rule.kind === 'latency') latency = rule;
      else action = rule;
    }
    for (const rule of [latency, action]) if (rule) this.#consume(rule);
    return { latencyMs: latency?.latencyMs ?? 0, action };
  }

  #fires(rule: FaultRule): boolean {
    return rule.probability >= 1 || this.random() < rule.probability;
  }

  #consume(rule: FaultRule): void {
    rule.applied++;
    if (rule.times !== undefined && rule.applied >= rule.times) this.remove(rule.id);
  }
}
