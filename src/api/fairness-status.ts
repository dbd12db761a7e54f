/**
 * Whether the Temporal server the API talks to honours task-queue fairness, for /readyz
 * (docs/deployers.md "Fair under load"). Not a readiness check: a server without fairness still
 * runs every order, first come, first served, so /readyz stays 200 and says so as a notice.
 *
 * The API does not probe: the worker does, at start and hourly, and records its answer
 * (src/temporal/fairness-probe.ts `startFairnessReports`); this reads the latest report, one
 * describe shared for `TTL_MS` by every /readyz, within /readyz's own deadline. `unknown` when no
 * worker has reported, the last report is older than `STALE_MS` (no worker probing now), or the
 * read failed.
 */
import type { Client } from '@temporalio/client';
import {
  FAIRNESS_NOT_HONOURED,
  FAIRNESS_PROBE_EVERY_MS,
  readFairnessReport,
  type FairnessReport,
} from '../temporal';

export type FairnessState = 'on' | 'off' | 'unknown';

export interface FairnessStatus {
  fairness: FairnessState;
  /** Said when fairness is off: what it means and what to set. */
  notice?: string;
}

const TTL_MS = 30_000;
const UNKNOWN_TTL_MS = 1_000;
/** Three of the worker's probe intervals: a report older than that is no worker's current view. */
const STALE_MS = 3 * FAIRNESS_PROBE_EVERY_MS;

export function fairnessStatus(deps: {
  client: Client;
  taskQueue: string;
  now: () => number;
  timeoutMs: number;
  /** Default: the worker's report, read from Temporal. */
  read?: () => Promise<FairnessReport | undefined>;
  onReadFailed?: (error: string) => void;
}): () => Promise<FairnessStatus> {
  const read =
    deps.read ??
    (() =>
      deps.client.withDeadline(Date.now() + deps.timeoutMs, () =>
        readFairnessReport(deps.client, deps.taskQueue),
      ));
  let cached: { at: number; ttlMs: number; status: Promise<FairnessStatus> } | undefined;

  const fresh = async (): Promise<FairnessStatus> => {
    let report: FairnessReport | undefined;
    try {
      report = await read();
    } catch (err) {
      deps.onReadFailed?.(err instanceof Error ? err.message : String(err));
      return { fairness: 'unknown' };
    }
    if (!report || deps.now() - Date.parse(report.probedAt) > STALE_MS) return { fairness: 'unknown' };
    return report.honoured ? { fairness: 'on' } : { fairness: 'off', notice: FAIRNESS_NOT_HONOURED };
  };

  return () => {
    const now = deps.now();
    if (!cached || now - cached.at >= cached.ttlMs) {
      const entry = { at: now, ttlMs: TTL_MS, status: fresh() };
      // Until a worker has reported, look again at the next /readyz (a second apart at most).
      void entry.status.then((status) => {
        if (status.fairness === 'unknown') entry.ttlMs = UNKNOWN_TTL_MS;
      });
      cached = entry;
    }
    return cached.status;
  };
}
