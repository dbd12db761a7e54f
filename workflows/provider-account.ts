/**
 * The provider account (docs/operators.md "Orders on hold"): one workflow per order task queue,
 * started by the first order held. It watches the account once for every held order — the
 * balance and /v3/ping every `checkMs` — and resumes held orders when the account can take them:
 * orders held for the balance in acceptance order, as far as the balance read covers them (the
 * first one it does not cover stops the line, so a later, smaller order does not pass it); orders
 * held for an operator once /v3/ping reports it up. It ends when nothing has been held for a while;
 * the next hold starts it again.
 */
import {
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  proxyActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { AccountActivities } from '../activities/account';
import {
  accountStateQuery,
  holdOrderSignal,
  releaseOrderSignal,
  resumeHeldSignal,
  type AccountInput,
  type AccountReading,
  type AccountState,
  type HeldOrder,
} from '../contract/account';

const { readProviderAccount } = proxyActivities<AccountActivities>({
  startToCloseTimeout: 30_000,
  // A failed reading is the next interval's to repeat.
  retry: { maximumAttempts: 1 },
  summary: 'read the account balance and the operators (/v3/account/balance, /v3/ping)',
});

/** With nothing held this long (in readings), the workflow ends. */
const IDLE_READINGS = 10;
/** A fresh run well before Temporal's warnings; each reading costs about five events. */
const HISTORY_EVENT_LIMIT = 2_000;

export async function providerAccountWorkflow(input: AccountInput): Promise<void> {
  const held = new Map<string, HeldOrder>((input.held ?? []).map((h) => [h.workflowId, h]));
  let reading: (AccountReading & { at: string }) | undefined;
  setHandler(holdOrderSignal, (order) => void held.set(order.workflowId, order));
  setHandler(releaseOrderSignal, (workflowId) => void held.delete(workflowId));
  setHandler(accountStateQuery, () => stateOf(held, reading));

  for (;;) {
    for (const [id, order] of held) if (order.until <= Date.now()) held.delete(id);
    if (held.size === 0) {
      const woke = await condition(() => held.size > 0, IDLE_READINGS * input.checkMs);
      if (!woke && held.size === 0) return;
    }
    const read = await readProviderAccount().catch((err: unknown) => ({ failure: String(err) }));
    reading = { ...read, at: new Date().toISOString() };
    if (read.failure) log.warn('provider account not read', { failure: read.failure });
    await Promise.all(resumable(held, read).map((order) => resume(held, order)));
    const { historyLength, continueAsNewSuggested } = workflowInfo();
    if (continueAsNewSuggested || historyLength >= HISTORY_EVENT_LIMIT) {
      await continueAsNew<typeof providerAccountWorkflow>({ ...input, held: [...held.values()] });
    }
    await sleep(input.checkMs);
  }
}

/** The held orders the account can take now, oldest first. */
function resumable(held: Map<string, HeldOrder>, read: AccountReading): HeldOrder[] {
  const line = [...held.values()].sort((a, b) => a.acceptedAt.localeCompare(b.acceptedAt));
  const go: HeldOrder[] = [];
  let budget = read.balance;
  for (const order of line) {
    if (order.reason === 'operator') {
      if (order.operator && read.operators?.[order.operator] === 'up') go.push(order);
      continue;
    }
    if (budget === undefined) continue;
    // An order whose price is unknown (a gift card refused without `required`) goes when the balance is positive.
    const need = order.required ?? Math.min(budget, 1);
    if (budget <= 0 || need > budget) budget = undefined;
    else {
      budget -= need;
      go.push(order);
    }
  }
  return go;
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

function stateOf(held: Map<string, HeldOrder>, reading: (AccountReading & { at: string }) | undefined) {
  const state: AccountState = { held: { balance: 0, operator: 0, byOperator: {} } };
  for (const order of held.values()) {
    state.held[order.reason]++;
    if (order.operator) {
      state.held.byOperator[order.operator] = (state.held.byOperator[order.operator] ?? 0) + 1;
    }
  }
  if (reading?.balance !== undefined) {
    state.balance = reading.balance;
    state.balanceAt = reading.at;
  }
  if (reading?.operators) state.operators = reading.operators;
  if (reading?.failure) state.lastReadFailure = reading.failure;
  return state;
}
