/**
 * Revealing an audit export: phone and line numbers and card codes in clear. Card codes are money,
 * so it takes a scope of its own (`audit:reveal`, granted explicitly, never implied by
 * `audit:read`), and every reveal is recorded — who (client and key id), which order (owner and
 * ref), when (the log line's time) — in the log and in a counter by the revealing client. What was
 * revealed is never recorded.
 */
import type { Logger } from 'pino';
import type { Caller } from '../clients/registry';
import { metricCatalog } from '../../contract/metrics';
import type { Metrics } from '../observability/metrics';

export const REVEAL_SCOPE = 'audit:reveal';

export interface RevealRecorder {
  record(caller: Caller, order: { client: string; ref: string }, log: Logger): void;
}

/**
 * `holders`: the clients with the scope now, counted from zero at once, so the counter exists
 * (and an alert on its rate works) before the first reveal.
 */
export function revealRecorder(metrics: Metrics, holders: readonly string[]): RevealRecorder {
  const reveals = metrics.counter(metricCatalog.auditReveals);
  for (const client of holders) reveals.add({ client }, 0);
  return {
    record(caller, order, log) {
      log.info(
        {
          revealedBy: { client: caller.id, keyId: caller.keyId },
          auditOf: order,
          at: new Date().toISOString(),
        },
        'audit export with secrets revealed',
      );
      reveals.add({ client: caller.id });
    },
  };
}
