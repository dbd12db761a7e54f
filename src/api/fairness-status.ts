/**
 * Whether the Temporal server the API talks to honours task-queue fairness, for /readyz
 * (docs/deployers.md "Fair under load"). Not a readiness check: a server without fairness still
 * runs every order, first come, first served, so /readyz stays 200 and says so as a notice.
 *
 * The answer is the worker's fairness probe (src/temporal/fairness-probe.ts), run in the
 * background — at the first /readyz, then again once the last answer is `RECHECK_MS` old (a
 * server's dynamic config changes with a deploy) or, after a failed probe, `RETRY_MS` old — so a
 * probe never delays /readyz: until the first answer it says `unknown`.
 */
import type { Client } from '@temporalio/client';
import { FAIRNESS_NOT_HONOURED, probeFairness, type FairnessProbeResult } from '../temporal/fairness-probe';

export type FairnessState = 'on' | 'off' | 'unknown';

export interface FairnessStatus {
  fairness: FairnessState;
  /** Said when fairness is off: what it means and what to set. */
  notice?: string;
}

const RECHECK_MS = 60 * 60_000;
const RETRY_MS = 60_000;

export function fairnessStatus(deps: {
  client: Client;
  taskQueue: string;
  now: () => number;
  /** Default: the worker's probe. */
  probe?: (client: Client, taskQueue: string) => Promise<FairnessProbeResult>;
  onProbeFailed?: (error: string) => void;
}): (() => FairnessStatus) & { settled: () => Promise<void> } {
  const probe = deps.probe ?? ((client, taskQueue) => probeFairness(client, { taskQueue }));
  let known: { at: number; honoured: boolean } | undefined;
  let failedAt: number | undefined;
  let probing: Promise<void> | undefined;

  const due = () => {
    const now = deps.now();
    if (probing) return false;
    if (failedAt !== undefined && now - failedAt < RETRY_MS) return false;
    return known === undefined || now - known.at >= RECHECK_MS;
  };

  const status = (): FairnessStatus => {
    if (due()) {
      probing = probe(deps.client, deps.taskQueue)
        .then(
          (result) => {
            known = { at: deps.now(), honoured: result.honoured };
            failedAt = undefined;
          },
          (err: unknown) => {
            failedAt = deps.now();
            deps.onProbeFailed?.(err instanceof Error ? err.message : String(err));
          },
        )
        .finally(() => (probing = undefined));
    }
    if (!known) return { fairness: 'unknown' };
    return known.honoured ? { fairness: 'on' } : { fairness: 'off', notice: FAIRNESS_NOT_HONOURED };
  };
  // A probe still polling when the API closes must end before the Temporal connection does.
  return Object.assign(status, { settled: () => probing ?? Promise.resolve() });
}
