/**
 * The provider account as the worker sees it (docs/operators.md "Orders on hold"): the activities
 * of the account workflow (workflows/provider-account.ts) and of a held order, and the send gate.
 *
 * The gate is asked before every send or placement, in the worker's memory, so a held account
 * costs no provider call and no history event per order: while orders wait for the balance (the
 * account workflow says so), a new order is held without being sent — it would only be refused —
 * and while /v3/ping reports a mobile order's operator down, it is held. Its readings are cached:
 * the account workflow's state for `stateMaxAgeMs`, /v3/ping for `pingMaxAgeMs`. A reading that
 * fails opens the gate: the provider's own answer to the send then decides.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, type Client } from '@temporalio/client';
import type { ProviderClient } from '../src/provider/client';
import { operatorOfPlan, type MobilePlans, type OperatorName } from '../src/provider/wire';
import type { OrderRequest } from '../contract/schemas';
import {
  ACCOUNT_WORKFLOW_TYPE,
  accountStateQuery,
  accountWorkflowId,
  holdOrderSignal,
  releaseOrderSignal,
  type AccountReading,
  type AccountState,
  type HeldOrder,
} from '../contract/account';
import { ProviderFailureType, type ProviderFailureDetails } from '../contract/activity-outcomes';
import { withinAttempt } from './attempt-deadline';

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
  return {
    /** Registers a held order with its task queue's account workflow (starting it if need be). */
    async holdOrder(held: HeldOrder): Promise<void> {
      if (!temporal || !options) throw ApplicationFailure.nonRetryable('this worker watches no account');
      const taskQueue = Context.current().info.taskQueue;
      if (held.reason === 'balance') gate?.noteBalanceHold(taskQueue);
      await temporal.workflow.signalWithStart(ACCOUNT_WORKFLOW_TYPE, {
        workflowId: accountWorkflowId(taskQueue),
        taskQueue,
        args: [{ checkMs: options.checkMs }],
        signal: holdOrderSignal,
        signalArgs: [held],
      });
    },

    /** The order no longer waits: the account forgets it (a closed account workflow needs nothing). */
    async releaseOrder(workflowId: string): Promise<void> {
      if (!temporal) return;
      const taskQueue = Context.current().info.taskQueue;
      await temporal.workflow
        .getHandle(accountWorkflowId(taskQueue))
        .signal(releaseOrderSignal, workflowId)
        .catch(() => undefined);
    },

    /** The account's balance and each operator's state; a failed read says why (codes only). */
    async readProviderAccount(): Promise<AccountReading> {
      if (!options) return { failure: 'this worker watches no account' };
      const [balance, ping] = await Promise.allSettled([
        options.provider.getBalance(withinAttempt()),
        options.provider.ping(withinAttempt()),
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
    },
  };
}

function failureCode(err: unknown): string {
  const e = err as { kind?: string; code?: string; status?: number; name?: string };
  return [e.kind, e.code, e.status].filter((x) => x !== undefined).join(' ') || e.name || 'failed';
}

export type AccountActivities = ReturnType<typeof createAccountActivities>;
