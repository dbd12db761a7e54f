/**
 * The provider account (docs/operators.md "Orders on hold"): one workflow per order task queue,
 * started by the first order held (a start that finds it running adds nothing to it). It watches
 * the account once for every held order: each round, every `checkMs`, one activity reads the
 * balance and /v3/ping, finds the held orders by visibility (`OrderStatus = "HELD"` on its task
 * queue, each with its hold's search attributes) and lets go those the account can take now
 * (contract/account.ts `resumableHeld`): orders held for the balance in acceptance order, as far as
 * the balance read covers them; orders held for an operator once /v3/ping reports it up. A round is
 * a handful of events whatever the number of orders held. It ends when nothing has been held for a
 * while; the next hold starts it again. No signal comes in or goes out of it: a burst of holds or
 * of resumptions never goes through its history (a signal per hold made it a signal sink).
 */
import {
  log,
  makeContinueAsNewFunc,
  proxyActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { AccountActivities } from './account.activities';
import { upgradeOnContinueAsNew, versionChanged } from '../temporal/workflows';
import {
  accountStateQuery,
  heldCounts,
  type AccountInput,
  type AccountReading,
  type AccountRound,
  type AccountState,
} from '../../contract/account';

const { accountRound } = proxyActivities<AccountActivities>({
  // Listing and letting go a few hundred orders on a loaded server; a round cut short is the next one's to finish.
  startToCloseTimeout: 60_000,
  // A round on a worker that died is given up in seconds, not at its timeout (the chaos run's kills):
  // the held orders wait for the next round.
  heartbeatTimeout: 15_000,
  retry: { maximumAttempts: 1 },
  summary: 'read the account, find the held orders, let go those it can take',
});

/** With nothing held this long (in readings), the workflow ends. */
const IDLE_READINGS = 10;
/** A fresh run well before Temporal's warnings; each reading costs about five events. */
const HISTORY_EVENT_LIMIT = 2_000;

export async function providerAccountWorkflow(input: AccountInput): Promise<void> {
  let reading: (AccountReading & { at: string }) | undefined;
  // The last round's: the held orders it found.
  let state: AccountRound | undefined;
  setHandler(accountStateQuery, () => stateOf(state?.held ?? heldCounts([]), reading));

  let idle = 0;
  for (;;) {
    const round = await accountRound().catch((err: unknown): AccountRound => ({
      reading: { failure: String(err) },
      held: state?.held ?? heldCounts([]),
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
    const { historyLength, continueAsNewSuggested } = workflowInfo();
    // Also onto a new current worker version, at the next reading (src/temporal/versioning.workflow.ts).
    if (continueAsNewSuggested || historyLength >= HISTORY_EVENT_LIMIT || versionChanged()) {
      await makeContinueAsNewFunc<typeof providerAccountWorkflow>(upgradeOnContinueAsNew())({
        checkMs: input.checkMs,
      });
    }
    await sleep(input.checkMs);
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
