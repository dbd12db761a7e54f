/**
 * The fault run's figures (faults.ts), its verdict and its table: apart from the run so the
 * attribution can be tested on made-up orders (test/scripts/fault-verdict.test.ts).
 *
 * Each fault has a window: from its start until the next fault's start. An order belongs to the
 * window it was submitted in, moved back by LEAD_MS, so an order in flight when the fault began
 * counts for it. Latency is from the order's first submission attempt (a 503 and its retries
 * included: what the caller waited) to the moment the order settled (final, or in review).
 */

/** An order submitted this long before a fault began is still in flight when it begins. */
export const LEAD_MS = 8_000;

export interface FaultWindow {
  name: string;
  /** What was done, in words. */
  what: string;
  startedAt: number;
  /** When the fault was over (the service answered again, the link was restored). */
  endedAt: number;
  /** The next fault's start, or the end of the run's faults. */
  nextAt: number;
  /** What the run saw besides the figures (a Temporal service that exited, a fallback used). */
  notes: string[];
}

export interface OrderFacts {
  ref: string;
  submittedAt: number;
  /** When it became final or went to review (the order's timeline); undefined when it never did. */
  settledAt?: number;
  lost: boolean;
  sentTwice: boolean;
  /** The provider's records show it delivered, and we report it FAILED or REFUNDED. */
  wronglyFailed: boolean;
  /** In review although nothing scripted sends it there (the sandbox's special numbers do). */
  inReviewByFault: boolean;
}

/** Answers of the API in one part of a window, from every attempt the callers made. */
export interface ApiAnswers {
  statuses: Record<string, number>;
  /** 500s: never allowed. */
  internalErrors: number;
  /** 503s and 429s without a Retry-After header: never allowed. */
  withoutRetryAfter: number;
  /** Attempts that got no HTTP answer at all (refused, reset, timed out). */
  unanswered: number;
}

export interface FaultFigures {
  fault: string;
  what: string;
  outageMs: number;
  orders: number;
  lost: number;
  sentTwice: number;
  wronglyFailed: number;
  inReview: number;
  /** p99 latency of the orders submitted during the outage, and in the recovery after it. */
  p99DuringMs?: number;
  p99AfterMs?: number;
  /** From the fault's end until the last order submitted before it ended had settled. */
  recoveredAfterMs?: number;
  /** The API's answers to submissions and to the reader's listings, during the outage and after. */
  api: { during: ApiAnswers; after: ApiAnswers };
  notes: string[];
}

export function emptyAnswers(): ApiAnswers {
  return { statuses: {}, internalErrors: 0, withoutRetryAfter: 0, unanswered: 0 };
}

export function countAnswer(
  into: ApiAnswers,
  outcome: { status: number; retryAfter: string | null } | Error,
): void {
  if (outcome instanceof Error) {
    into.unanswered++;
    return;
  }
  const key = String(outcome.status);
  into.statuses[key] = (into.statuses[key] ?? 0) + 1;
  if (outcome.status === 500) into.internalErrors++;
  if ((outcome.status === 503 || outcome.status === 429) && !outcome.retryAfter) into.withoutRetryAfter++;
}

export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** The window an order submitted at `at` belongs to (LEAD_MS earlier), or undefined for the baseline. */
export function windowOf<W extends Pick<FaultWindow, 'startedAt' | 'nextAt'>>(
  windows: readonly W[],
  at: number,
): W | undefined {
  return windows.find((w) => at + LEAD_MS >= w.startedAt && at + LEAD_MS < w.nextAt);
}

export function faultFigures(
  windows: readonly FaultWindow[],
  orders: readonly OrderFacts[],
  answers: ReadonlyMap<string, { during: ApiAnswers; after: ApiAnswers }>,
): FaultFigures[] {
  return windows.map((w) => {
    const mine = orders.filter((o) => windowOf(windows, o.submittedAt) === w);
    const latency = (from: number, to: number) =>
      percentile(
        orders
          .filter((o) => o.submittedAt >= from && o.submittedAt < to && o.settledAt !== undefined)
          .map((o) => o.settledAt! - o.submittedAt),
        99,
      );
    const caught = orders.filter((o) => o.submittedAt + LEAD_MS >= w.startedAt && o.submittedAt < w.endedAt);
    const lastSettled = Math.max(...caught.map((o) => o.settledAt ?? Infinity));
    return {
      fault: w.name,
      what: w.what,
      outageMs: w.endedAt - w.startedAt,
      orders: mine.length,
      lost: mine.filter((o) => o.lost).length,
      sentTwice: mine.filter((o) => o.sentTwice).length,
      wronglyFailed: mine.filter((o) => o.wronglyFailed).length,
      inReview: mine.filter((o) => o.inReviewByFault).length,
      p99DuringMs: latency(w.startedAt, w.endedAt),
      // Not the last seconds before the next fault: those orders are in flight when it begins.
      p99AfterMs: latency(w.endedAt, w.nextAt - LEAD_MS),
      ...(caught.length > 0 && Number.isFinite(lastSettled)
        ? { recoveredAfterMs: Math.max(0, lastSettled - w.endedAt) }
        : {}),
      api: answers.get(w.name) ?? { during: emptyAnswers(), after: emptyAnswers() },
      notes: w.notes,
    };
  });
}

/** What fails the tier: one line per broken promise, for each fault. */
export function faultProblems(figures: readonly FaultFigures[]): string[] {
  const problems: string[] = [];
  for (const f of figures) {
    if (f.lost > 0) problems.push(`${f.fault}: ${f.lost} orders lost`);
    if (f.sentTwice > 0) problems.push(`${f.fault}: ${f.sentTwice} orders sent twice`);
    if (f.wronglyFailed > 0)
      problems.push(`${f.fault}: ${f.wronglyFailed} orders the provider fulfilled reported FAILED/REFUNDED`);
    for (const part of ['during', 'after'] as const) {
      const a = f.api[part];
      if (a.internalErrors > 0)
        problems.push(`${f.fault}: the API answered 500 ${a.internalErrors} times ${part} it`);
      if (a.withoutRetryAfter > 0)
        problems.push(`${f.fault}: ${a.withoutRetryAfter} 503/429 answers without Retry-After ${part} it`);
    }
  }
  return problems;
}

const seconds = (ms: number | undefined) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`);

export function formatFaultTable(figures: readonly FaultFigures[], baselineP99Ms?: number): string {
  const header = [
    'fault',
    'outage',
    'orders',
    'lost',
    'double',
    'wrong fail',
    'review',
    'p99 during',
    'p99 after',
    'recovered',
    'API 503 / 500',
  ];
  const rows = figures.map((f) => {
    const s503 = (f.api.during.statuses['503'] ?? 0) + (f.api.after.statuses['503'] ?? 0);
    const s500 = f.api.during.internalErrors + f.api.after.internalErrors;
    return [
      f.fault,
      seconds(f.outageMs),
      String(f.orders),
      String(f.lost),
      String(f.sentTwice),
      String(f.wronglyFailed),
      String(f.inReview),
      seconds(f.p99DuringMs),
      seconds(f.p99AfterMs),
      seconds(f.recoveredAfterMs),
      `${s503} / ${s500}`,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    `  ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')}`;
  return [
    `faults under load (baseline p99 before the first: ${seconds(baselineP99Ms)})`,
    line(header),
    ...rows.map(line),
    ...figures.flatMap((f) => f.notes.map((n) => `  ${f.fault}: ${n}`)),
  ].join('\n');
}
