/**
 * The provider account (docs/operators.md "Orders on hold"): one workflow per order task queue,
 * started by the first order held (a start that finds it running adds nothing to it). It watches
 * the account once for every held order: each round, every `checkMs`, one activity reads the
 * balance and /v3/ping, finds the held orders by visibility (`OrderStatus = "HELD"` on its task
 * queue, each with its hold's search attributes) and lets go those the account can take now
 * (contract/account.ts `resumableHeld`): orders held for the balance in acceptance order, as far as
 * the balance read covers them; orders held for an operator once /v3/ping reports it up. A round is
 * a handful of events whatever the number of orders held. It ends when nothing has been held for a
 * while; the next hold starts it again.
 *
 * Runs started before patch account-lists-held learnt of held orders by signal (`holdOrder`,
 * `releaseOrder`) and signalled each order from the workflow; they replay that way, and take the
 * rounds from their next reading on.
 */
import {
  condition,
  getExternalWorkflowHandle,
  log,
  makeContinueAsNewFunc,
  patched,
  proxyActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { AccountActivities } from '../activities/account';
import { upgradeOnContinueAsNew, versionChanged } from './versioning';
import {
  accountStateQuery,
  holdOrderSignal,
  releaseOrderSignal,
  resumeHeldSignal,
  heldCounts,
  resumableHeld,
  type AccountInput,
  type AccountReading,
  type AccountRound,
  type AccountState,
  type HeldOrder,
} from '../contract/account';

const { readProviderAccount } = proxyActivities<AccountActivities>({
  startToCloseTimeout: 30_000,
  // A failed reading is the next interval's to repeat.
  retry: { maximumAttempts: 1 },
  summary: 'read the account balance and the operators (/v3/account/balance, /v3/ping)',
});
const { accountRound } = proxyActivities<AccountActivities>({
  // Listing and letting go a few hundred orders on a loaded server; a round cut short is the next one's to finish.
  startToCloseTimeout: 60_000,
  // A round on a worker that died is given up in seconds, not at its timeout (the chaos run's kills):
  // the held orders wait for the next round. Activity options are not replayed: no patch.
  heartbeatTimeout: 15_000,
  retry: { maximumAttempts: 1 },
  summary: 'read the account, find the held orders, let go those it can take',
});

/**
 * Patch account-lists-held (docs/contributors.md "Patches in use"): the account finds the held
 * orders by visibility each round and lets them go from the activity, instead of one signal per
 * held order in and one signal per resumed order out (a signal sink under a burst of holds).
 */
export const ACCOUNT_LISTS_HELD_PATCH = 'account-lists-held';

/** With nothing held this long (in readings), the workflow ends. */
const IDLE_READINGS = 10;
/** A fresh run well before Temporal's warnings; each reading costs about five events. */
const HISTORY_EVENT_LIMIT = 2_000;

export async function providerAccountWorkflow(input: AccountInput): Promise<void> {
  const held = new Map<string, HeldOrder>((input.held ?? []).map((h) => [h.workflowId, h]));
  let reading: (AccountReading & { at: string }) | undefined;
  // The last round's (runs with patch account-lists-held): the held orders it found.
  let state: AccountRound | undefined;
  // Runs before the patch: orders held register, and those that no longer wait leave, by signal.
  setHandler(holdOrderSignal, (order) => void held.set(order.workflowId, order));
  setHandler(releaseOrderSignal, (workflowId) => void held.delete(workflowId));
  setHandler(accountStateQuery, () => stateOf(state ? state.held : heldCounts(held.values()), reading));

  let idle = 0;
  for (;;) {
    if (patched(ACCOUNT_LISTS_HELD_PATCH)) {
      const round = await accountRound().catch((err: unknown): AccountRound => ({
        reading: { failure: String(err) },
        held: state?.held ?? { balance: 0, operator: 0, byOperator: {} },
        released: 0,
        listFailure: String(err),
      }));
      state = round;
      reading = { ...round.reading, at: new Date().toISOString() };
      if (round.reading.failure) log.warn('provider account not read', { failure: round.reading.failure });
      if (round.listFailure) log.warn('held orders not listed', { failure: round.listFailure });
      const holding = round.released + round.held.balance + round.held.operator > 0;
      idle = holding || round.listFailure ? 0 : idle + 1;
      if (idle >= IDLE_READINGS) return;
    } else {
      for (const [id, order] of held) if (order.until <= Date.now()) held.delete(id);
      if (held.size === 0) {
        const woke = await condition(() => held.size > 0, IDLE_READINGS * input.checkMs);
        if (!woke && held.size === 0) return;
      }
      const read = await readProviderAccount().catch((err: unknown) => ({ failure: String(err) }));
      reading = { ...read, at: new Date().toISOString() };
      if (read.failure) log.warn('provider account not read', { failure: read.failure });
      await Promise.all(resumableHeld(held.values(), read).map((order) => resume(held, order)));
    }
    const { historyLength, continueAsNewSuggested } = workflowInfo();
    // Also onto a new current worker version, at the next reading (workflows/versioning.ts).
    if (continueAsNewSuggested || historyLength >= HISTORY_EVENT_LIMIT || versionChanged()) {
      await makeContinueAsNewFunc<typeof providerAccountWorkflow>(upgradeOnContinueAsNew())({
        checkMs: input.checkMs,
        ...(state === undefined && { held: [...held.values()] }),
      });
    }
    await sleep(input.checkMs);
  }
}

async function resume(held: Map<string, HeldOrder>, order: HeldOrder): Promise<void> {
  held.delete(order.workflowId);
  try {
    await getExternalWorkflowHandle(order.workflowId).signal(resumeHeldSignal);
  } catch (err) {
    // The order closed meanwhile (it gave up, or it was terminated): nothing to resume.
    log.info('held order not resumed: it is closed', { workflowId: order.workflowId, error: String(err) });
  }
}

function stateOf(held: AccountState['held'], reading: (AccountReading & { at: string }) | undefined) {
  const state: AccountState = { held };
  if (reading?.balance !== undefined) {
    state.balance = reading.balance;
    state.balanceAt = reading.at;
  }
  if (reading?.operators) state.operators = reading.operators;
  if (reading?.failure) state.lastReadFailure = reading.failure;
  return state;
}
