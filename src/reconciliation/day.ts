/**
 * The reconciliation's time-zone arithmetic: which instants a business day is in a time zone, and
 * which day "yesterday" is (DST-safe).
 */
import type { ReconciliationDay } from '../../contract/reconciliation';

const DAY_MS = 24 * 60 * 60_000;

/** The date (YYYY-MM-DD) an instant falls on in `timeZone`. */
export function dateIn(instant: number, timeZone: string): string {
  // en-CA writes dates as YYYY-MM-DD.
  return new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).format(instant);
}

/** How far `timeZone` is ahead of UTC at `instant`, in ms. */
function offsetAt(instant: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  }).formatToParts(instant);
  const part = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  const asUtc = Date.UTC(
    part('year'),
    part('month') - 1,
    part('day'),
    part('hour'),
    part('minute'),
    part('second'),
  );
  return asUtc - Math.floor(instant / 1000) * 1000;
}

/** The instant a date's midnight is in `timeZone` (DST-safe: the offset is read at that midnight). */
function midnight(date: string, timeZone: string): number {
  const utcMidnight = Date.parse(`${date}T00:00:00Z`);
  const first = utcMidnight - offsetAt(utcMidnight, timeZone);
  return utcMidnight - offsetAt(first, timeZone);
}

/** A business day in a time zone, as the instants [from, to). Throws a RangeError on an unknown zone. */
export function reconciliationDayOf(date: string, timeZone: string): ReconciliationDay {
  const next = new Date(Date.parse(`${date}T00:00:00Z`) + DAY_MS).toISOString().slice(0, 10);
  return {
    date,
    timeZone,
    from: new Date(midnight(date, timeZone)).toISOString(),
    to: new Date(midnight(next, timeZone)).toISOString(),
  };
}

/** The day before the one `at` falls on, in `timeZone`. */
export function previousDay(at: number, timeZone: string): ReconciliationDay {
  const today = dateIn(at, timeZone);
  const yesterday = new Date(Date.parse(`${today}T00:00:00Z`) - DAY_MS).toISOString().slice(0, 10);
  return reconciliationDayOf(yesterday, timeZone);
}
