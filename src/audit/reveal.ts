/**
 * Revealing another client's order: phone and line numbers, card codes and the digits in notes
 * and the provider's text in clear (what ./mask.ts masks otherwise). Card codes are money, so it
 * takes a scope of its own (`audit:reveal`, granted explicitly, never implied by `audit:read`), and
 * every reveal — of the audit export, of the order's view, of an export row — is recorded the same
 * way: who (client and key id), which order (owner and ref), when, and through which route, in the
 * log and in a counter by the revealing client. What was revealed is never recorded.
 */
import type { Logger } from 'pino';
import type { Caller } from '../clients';
import { metricCatalog } from '../../contract/metrics';
import type { Metrics } from '../observability';

export const REVEAL_SCOPE = 'audit:reveal';

/** Where the secrets were shown: the audit export, the order's view, or a row of the orders export. */
export type RevealedThrough = 'audit' | 'view' | 'export';

export interface RevealRecorder {
  record(caller: Caller, order: { client: string; ref: string }, through: RevealedThrough, log: Logger): void;
}

/**
 * `holders`: the clients with the scope now, counted from zero at once, so the counter exists
 * (and an alert on its rate works) before the first reveal.
 */
export function revealRecorder(metrics: Metrics, holders: readonly string[]): RevealRecorder {
  const reveals = metrics.counter(metricCatalog.auditReveals);
  for (const client of holders) reveals.add({ client }, 0);
  return {
    record(caller, order, through, log) {
      // One message for every route (alerts and searches keep working); `through` tells them apart.
      log.info(
        {
          revealedBy: { client: caller.id, keyId: caller.keyId },
          auditOf: order,
          through,
          at: new Date().toISOString(),
        },
        'audit export with secrets revealed',
      );
      reveals.add({ client: caller.id });
    },
  };
}
