/**
 * The provider account as the worker sees it (docs/operators.md "Orders on hold"): the activities
 * of the account workflow (src/provider-account/provider-account.workflow.ts) and of a held order, and the send gate.
 *
 * A held order only makes sure the account workflow runs (a start that finds it running changes
 * nothing in it); the account's round finds the held orders by visibility and lets them go with a
 * signal each, from the activity, so neither a burst of holds nor of resumptions goes through the
 * account workflow's history.
 *
 * The gate is asked before every send or placement, in the worker's memory, so a held account
 * costs no provider call and no history event per order: while orders wait for the balance (the
 * account workflow says so), a new order is held without being sent — it would only be refused —
 * and while /v3/ping reports a mobile order's operator down, it is held. Its readings are cached:
 * the account workflow's state for `stateMaxAgeMs`, /v3/ping for `pingMaxAgeMs`. A reading that
 * fails opens the gate: the provider's own answer to the send then decides.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, WorkflowIdConflictPolicy, type Client } from '@temporalio/client';
import type { ProviderClient } from '../provider';
import { operatorOfPlan, type MobilePlans, type OperatorName } from '../provider';
import type { OrderRequest } from '../../contract/schemas';
import {
  ACCOUNT_WORKFLOW_TYPE,
  accountStateQuery,
  accountWorkflowId,
  heldCounts,
  resumableHeld,
  resumeHeldSignal,
  type AccountReading,
  type AccountRound,
  type AccountState,
  type HeldOrder,
  type ListedHold,
} from '../../contract/account';
import {
  AcceptedAtAttribute,
  HoldOperatorAttribute,
  HoldReasonAttribute,
  HoldRequiredAttribute,
} from '../../contract/order';
import { ProviderFailureType, type ProviderFailureDetails } from '../../contract/activity-outcomes';
import { withinAttempt } from '../provider';

export type AccountProvider = Pick<ProviderClient, 'getBalance' | 'ping' | 'getMobilePlans'>;

export interface AccountOptions {
  provider: AccountProvider;
  /** The account workflow's reading interval while orders are held (PROVIDER_ACCOUNT_CHECK_MS). */
  checkMs: number;
  /** How old a /v3/ping reading the gate may use (documented: every 30–60 s). */
  pingMaxAgeMs?: number;
  /** How old the account workflow's state the gate may use; default `checkMs`. */
  stateMaxAgeMs?: number;
  /** How old the plan list the gate maps plans to operators with may be (documented: daily). */
  plansMaxAgeMs?: number;
}

const DEFAULT_PING_MAX_AGE_MS = 30_000;
/** The gate runs inside the send's attempt (a local send has seconds): a slow reading opens it. */
const GATE_READ_TIMEOUT_MS = 1_000;
const DEFAULT_PLANS_MAX_AGE_MS = 60 * 60_000;
/**
 * The account workflow's task-queue priority, inherited by its rounds: ahead of every order
 * (singles 2, batch items 4, src/orders/priority.ts). It shares the orders' queue, and at the
 * default 3 its tasks waited minutes behind a backlog of singles (the long chaos run: its first
 * task 194 s), while the orders it would let go waited for it. A round every `checkMs` is little work.
 */
const ACCOUNT_PRIORITY = { priorityKey: 1, fairnessKey: 'provider-account' };
/** Held orders let go at once by a round (signals in flight). */
const RELEASE_CONCURRENCY = 16;
/** A round's calls to Temporal: one signal; the whole listing. Slower is the next round's. */
const CALL_TIMEOUT_MS = 5_000;
const LIST_TIMEOUT_MS = 10_000;
/**
 * A provider read of the round: well inside the round's heartbeat timeout, so a provider that hangs
 * on one read (the balance) fails that read, and the round still lets go what the other allows.
 */
const READ_TIMEOUT_MS = 5_000;
/**
 * A value read at most once per `maxAgeMs`, concurrent callers sharing one read; undefined when it
 * fails. A failed read is not kept: the next caller reads again, so one slow answer does not open
 * the gate for a whole `maxAgeMs` (an hour for the plans).
 */
export function cachedReading<T>(read: () => Promise<T>, maxAgeMs: number) {
  let last: { at: number; value: T } | undefined;
  let inFlight: Promise<T | undefined> | undefined;
  const refresh = () =>
    (inFlight ??= read()
      .then(
        (value) => {
          last = { at: Date.now(), value };
          return value as T | undefined;
        },
        () => undefined,
      )
      .finally(() => {
        inFlight = undefined;
      }));
  return {
    async get(): Promise<T | undefined> {
      if (last && Date.now() - last.at < maxAgeMs) return last.value;
      return refresh();
    },
    set(value: T): void {
      last = { at: Date.now(), value };
    },
    peek: () => last?.value,
  };
}

export type AccountGate = ReturnType<typeof createAccountGate>;

export function createAccountGate(options: AccountOptions, temporal: Client | undefined) {
  const { provider } = options;
  const states = new Map<string, ReturnType<typeof cachedReading<AccountState>>>();
  const stateOf = (taskQueue: string) => {
    let reading = states.get(taskQueue);
    if (!reading) {
      reading = cachedReading(async () => {
        if (!temporal) throw new Error('no Temporal client');
        return temporal.withDeadline(Date.now() + GATE_READ_TIMEOUT_MS, () =>
          temporal.workflow.getHandle(accountWorkflowId(taskQueue)).query(accountStateQuery),
        );
      }, options.stateMaxAgeMs ?? options.checkMs);
      states.set(taskQueue, reading);
    }
    return reading;
  };
  const ping = cachedReading(
    () => provider.ping({ signal: AbortSignal.timeout(GATE_READ_TIMEOUT_MS) }),
    options.pingMaxAgeMs ?? DEFAULT_PING_MAX_AGE_MS,
  );
  const plans = cachedReading<MobilePlans>(
    () => provider.getMobilePlans({ signal: AbortSignal.timeout(GATE_READ_TIMEOUT_MS) }),
    options.plansMaxAgeMs ?? DEFAULT_PLANS_MAX_AGE_MS,
  );

  async function operatorOf(request: OrderRequest): Promise<OperatorName | undefined> {
    if (request.type !== 'mobile_topup') return undefined;
    const listed = await plans.get();
    const plan = [...(listed?.dynamicPlans ?? []), ...(listed?.fixedPlans ?? [])].find(
      (p) => p.code === request.planCode,
    );
    return plan ? operatorOfPlan(plan) : undefined;
  }

  return {
    /**
     * Throws a held-order failure (nothing sent) when the order must wait; returns when it may be
     * sent. `released`: the account workflow let this order go, so the account's hold is not its.
     */
    async beforeSend(request: OrderRequest, operation: string, released = false): Promise<void> {
      const taskQueue = Context.current().info.taskQueue;
      if (!released && ((await stateOf(taskQueue).get())?.held.balance ?? 0) > 0) {
        throw heldFailure(
          ProviderFailureType.insufficientBalance,
          'orders wait for the account balance: not sent, held with them',
          { kind: 'insufficient_balance', operation, code: 'ACCOUNT_ON_HOLD' },
        );
      }
      const operator = await operatorOf(request);
      if (operator && (await ping.get())?.operators[operator] === 'down') {
        throw heldFailure(
          ProviderFailureType.operatorDown,
          `the provider reports operator ${operator} down: not sent`,
          { kind: 'not_reached', operation, code: 'OPERATOR_DOWN', operator },
        );
      }
    },
    /** A send refused for the balance: later sends from this worker wait without asking. */
    noteBalanceHold(taskQueue: string): void {
      const state = stateOf(taskQueue);
      const known = state.peek();
      const held = known?.held ?? { balance: 0, operator: 0, byOperator: {} };
      state.set({ ...known, held: { ...held, balance: held.balance + 1 } });
    },
    operatorOf,
  };
}

function heldFailure(type: string, message: string, details: ProviderFailureDetails): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true, details: [details] });
}

/** The activities of the account workflow and of a held order. */
export function createAccountActivities(
  options: AccountOptions | undefined,
  temporal: Client | undefined,
  gate: AccountGate | undefined,
) {
  /** The account's balance and each operator's state; a failed read says why (codes only). */
  async function readAccount(): Promise<AccountReading> {
    if (!options) return { failure: 'this worker watches no account' };
    const call = () => ({
      signal: AbortSignal.any([withinAttempt().signal, AbortSignal.timeout(READ_TIMEOUT_MS)]),
    });
    const [balance, ping] = await Promise.allSettled([
      options.provider.getBalance(call()),
      options.provider.ping(call()),
    ]);
    const reading: AccountReading = {};
    const failures: string[] = [];
    if (balance.status === 'fulfilled') reading.balance = balance.value.balance;
    else failures.push(`balance: ${failureCode(balance.reason)}`);
    if (ping.status === 'fulfilled') {
      reading.operators = ping.value.operators as AccountReading['operators'];
    } else failures.push(`ping: ${failureCode(ping.reason)}`);
    if (failures.length > 0) reading.failure = failures.join('; ');
    return reading;
  }

  // One start per task queue and `checkMs` in this worker, whatever the number of orders held.
  const starts = new Map<string, ReturnType<typeof cachedReading<true>>>();
  const accountStarted = (taskQueue: string) => {
    let started = starts.get(taskQueue);
    if (!started) {
      started = cachedReading(async () => {
        if (!temporal || !options) throw new Error('this worker watches no account');
        await temporal.workflow.start(ACCOUNT_WORKFLOW_TYPE, {
          workflowId: accountWorkflowId(taskQueue),
          taskQueue,
          args: [{ checkMs: options.checkMs }],
          workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
          priority: ACCOUNT_PRIORITY,
        });
        return true as const;
      }, options?.checkMs ?? 0);
      starts.set(taskQueue, started);
    }
    return started;
  };

  return {
    /**
     * Makes sure the task queue's account workflow runs: the round finds the held order by
     * visibility (its hold's search attributes). A start that finds it running adds nothing to its
     * history; one start per worker and `checkMs` serves every order held meanwhile. `held`: the
     * order's hold (a balance hold makes this worker's later sends wait without asking).
     */
    async holdOrder(held: HeldOrder): Promise<void> {
      if (!temporal || !options) throw ApplicationFailure.nonRetryable('this worker watches no account');
      const taskQueue = Context.current().info.taskQueue;
      if (held.reason === 'balance') gate?.noteBalanceHold(taskQueue);
      if ((await accountStarted(taskQueue).get()) === undefined) {
        throw ApplicationFailure.retryable('the account workflow could not be started', 'AccountNotStarted');
      }
    },

    /**
     * One round of the account workflow: reads the account, lists the held orders of this task
     * queue, lets go those the account can take now (a `resumeHeld` signal each) and says how many
     * remain. A listing that fails lets nothing go (the next round lists again).
     */
    async accountRound(): Promise<AccountRound> {
      const context = Context.current();
      const reading = await readAccount();
      context.heartbeat();
      if (!temporal) return { reading, held: heldCounts([]), released: 0, listFailure: 'no Temporal client' };
      const taskQueue = context.info.taskQueue;
      let held: ListedHold[];
      try {
        held = await listHeld(temporal, taskQueue, () => context.heartbeat());
        context.heartbeat();
      } catch (err) {
        return { reading, held: heldCounts([]), released: 0, listFailure: failureCode(err) };
      }
      const go = new Set(resumableHeld(held, reading));
      const queue = [...go];
      let released = 0;
      await Promise.all(
        Array.from({ length: Math.min(RELEASE_CONCURRENCY, queue.length) }, async () => {
          for (let order = queue.shift(); order; order = queue.shift()) {
            // A round Temporal has given up on (timed out) lets nothing more go: the next round decides.
            if (context.cancellationSignal.aborted) return;
            context.heartbeat();
            // An order that closed meanwhile (it gave up, it was terminated) has nothing to resume.
            const signalled = await temporal
              .withDeadline(Date.now() + CALL_TIMEOUT_MS, () =>
                temporal.workflow.getHandle(order.workflowId).signal(resumeHeldSignal),
              )
              .then(() => true)
              .catch(() => false);
            if (signalled) released++;
          }
        }),
      );
      return { reading, held: heldCounts(held.filter((order) => !go.has(order))), released };
    },
  };
}

/**
 * The orders held on `taskQueue`, with their holds, from their search attributes: a held order
 * publishes its hold with its HELD status, in the same upsert (src/orders/lifecycle/search-attributes.workflow.ts).
 */
export async function listHeld(
  temporal: Client,
  taskQueue: string,
  progress: () => void,
): Promise<ListedHold[]> {
  const query = `OrderStatus = 'HELD' AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue}'`;
  const held: ListedHold[] = [];
  const listed = await temporal.withDeadline(Date.now() + LIST_TIMEOUT_MS, async () => {
    const all = [];
    for await (const info of temporal.workflow.list({ query })) all.push(info);
    return all;
  });
  for (const info of listed) {
    const attributes = info.typedSearchAttributes;
    const reason = attributes.get(HoldReasonAttribute);
    // Not a hold the account can judge (no order of ours publishes HELD without it): its own
    // backstop tries the send again.
    if (reason !== 'balance' && reason !== 'operator') continue;
    const operator = attributes.get(HoldOperatorAttribute) as OperatorName | undefined;
    const required = attributes.get(HoldRequiredAttribute);
    held.push({
      workflowId: info.workflowId,
      acceptedAt: (attributes.get(AcceptedAtAttribute) ?? info.startTime).toISOString(),
      reason,
      ...(operator && { operator }),
      ...(required !== undefined && { required }),
    });
  }
  progress();
  // By workflow ID: the stable sort by acceptance (resumableHeld) breaks ties the same way every round.
  return held.sort((a, b) => a.workflowId.localeCompare(b.workflowId));
}

function failureCode(err: unknown): string {
  const e = err as { kind?: string; code?: string; status?: number; name?: string };
  return [e.kind, e.code, e.status].filter((x) => x !== undefined).join(' ') || e.name || 'failed';
}

export type AccountActivities = ReturnType<typeof createAccountActivities>;
