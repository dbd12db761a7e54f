/**
 * The provider account as the API reports it (docs/operators.md "Orders on hold"): how many
 * orders are held and why (the account workflow of the order task queue), each operator's state
 * and the provider's own API (/v3/ping) and the balance (/v3/account/balance). For /readyz and the metrics; read at most
 * once per `ttlMs` whatever the number of probes and scrapers (the provider documents ping every
 * 30–60 s). A part that cannot be read is left out.
 */
import type { Client } from '@temporalio/client';
import type { ProviderClient } from '../provider';
import { operatorNames, type OperatorName } from '../provider';
import { accountStateQuery, accountWorkflowId } from '../../contract/account';

export type AccountProviderPort = Partial<Pick<ProviderClient, 'ping' | 'getBalance'>>;

export interface AccountReport {
  /**
   * Orders held now, by reason, and those held for an operator by operator (0 when none, or when
   * the account workflow is not running), as the account workflow's last round found them.
   */
  held?: { balance: number; operator: number; byOperator: Partial<Record<OperatorName, number>> };
  operators?: Partial<Record<OperatorName, 'up' | 'down'>>;
  /**
   * The provider's own API as /v3/ping reports it (documented: `ok` or `error`; any other answer
   * is read as `error`). Reported, not acted on: see docs/operators.md "The provider reports its
   * API in error".
   */
  api?: 'ok' | 'error';
  balance?: number;
}

const errorName = (err: unknown) => (err instanceof Error ? err.name : 'Error');

export function accountReport(deps: {
  client: Client;
  taskQueue: string;
  provider: AccountProviderPort;
  timeoutMs: number;
  ttlMs: number;
  now?: () => number;
}): () => Promise<AccountReport> {
  const { client, taskQueue, provider, timeoutMs, ttlMs, now = Date.now } = deps;
  let last: { at: number; report: Promise<AccountReport> } | undefined;
  const signal = () => AbortSignal.timeout(timeoutMs);

  async function read(): Promise<AccountReport> {
    const [held, ping, balance] = await Promise.allSettled([
      client
        .withDeadline(Date.now() + timeoutMs, () =>
          client.workflow.getHandle(accountWorkflowId(taskQueue)).query(accountStateQuery),
        )
        .then((state) => ({
          balance: state.held.balance,
          operator: state.held.operator,
          byOperator: state.held.byOperator ?? {},
        }))
        .catch((err: unknown) => {
          // No account workflow yet: nothing was ever held.
          if (errorName(err) === 'WorkflowNotFoundError') return { balance: 0, operator: 0, byOperator: {} };
          throw err;
        }),
      provider.ping ? provider.ping({ signal: signal() }) : Promise.reject(new Error('no ping')),
      provider.getBalance
        ? provider.getBalance({ signal: signal() })
        : Promise.reject(new Error('no balance')),
    ]);
    const report: AccountReport = {};
    if (held.status === 'fulfilled') report.held = held.value;
    if (ping.status === 'fulfilled') {
      report.api = ping.value.api === 'ok' ? 'ok' : 'error';
      report.operators = Object.fromEntries(
        operatorNames.flatMap((name) => {
          const state = ping.value.operators[name];
          return state === 'up' || state === 'down' ? [[name, state]] : [];
        }),
      );
    }
    if (balance.status === 'fulfilled') report.balance = balance.value.balance;
    return report;
  }

  return () => {
    if (!last || now() - last.at >= ttlMs) last = { at: now(), report: read() };
    return last.report;
  };
}
