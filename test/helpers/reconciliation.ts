/** For tests that start the nightly reconciliation of a day themselves, as the Schedule's child would. */
import type { ReconcileDayInput } from '../../contract/reconciliation';

/**
 * The reconciliation of `date` (time zone UTC) over the orders since `from` (epoch ms) until now,
 * with no lookback before the day; `extra` on top.
 */
export function reconcileDayInput(
  date: string,
  from: number,
  extra: Partial<ReconcileDayInput> = {},
): ReconcileDayInput {
  return {
    date,
    timeZone: 'UTC',
    from: new Date(from).toISOString(),
    to: new Date(Date.now() + 1).toISOString(),
    lookbackMs: 0,
    ...extra,
  };
}
