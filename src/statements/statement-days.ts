/**
 * Closed days of statements, summed once and kept in Temporal (contract/statement.ts; why and how
 * fast: docs/operators.md "Statements and reconciliation").
 *
 * A day's summary holds only order runs that have closed, each still its workflow ID's latest run
 * (an order reopened by the reconciliation, reset or resumed has later runs: only the latest
 * counts: latest-runs.ts). A closed run's search attributes and memo never change again, so a
 * summary can go out of date in three ways only, and one visibility count tells each:
 * - a run still open (a watch after a decision) closes later with its completion in the day: one more;
 * - a closed run is deleted (the namespace's retention, or by hand): one fewer;
 * - an order accepted by the day's end starts a new run after the day was summed (reopened, reset,
 *   resumed; or a review's run of its own, which changes nothing but is summed again all the same):
 *   one more, counted by its start.
 * Open runs that carry a final status are never summed; the statement reads them live.
 *
 * Writing a day is a workflow start, so what a statement may write is bounded (issue 36): the
 * caller says how many at most (`store`'s `max`), a day another statement of this process is
 * writing is left to it, and every start runs at the lowest priority (STATEMENT_DAYS_PRIORITY),
 * behind every order. Each method takes the caller's AbortSignal and starts nothing once it fired.
 */
import type { Client } from '@temporalio/client';
import { WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/common';
import pLimit from 'p-limit';
import {
  AcceptedAtAttribute,
  CompletedAtAttribute,
  finalStatuses,
  OrderClientAttribute,
  OrderStatusAttribute,
} from '../../contract/order';
import {
  NO_CLIENT_KEY,
  STATEMENT_DAYS_PRIORITY,
  STATEMENT_DAY_MEMO,
  STATEMENT_DAY_WORKFLOW,
  statementDayWorkflowId,
  type StatementDayLine,
  type StatementDaySummary,
  type StatementDaysReport,
} from '../../contract/statement';
import { LatestRuns, orderRunsClause } from '../orders';
import { addRow, sortProducts, statementRow, type StatementRow } from './statement-lines';

export const DAY_MS = 86_400_000;
/** Visibility rows per page: its largest. */
export const PAGE_SIZE = 1_000;
/** Workflow IDs per listing of stored summaries (a query names each). */
const IDS_PER_LISTING = 100;
/** Counts, reads and writes of summaries in flight at once. */
const AT_ONCE = 8;
/**
 * How far before a summary's `computedAt` its check counts later runs from. `computedAt` is this
 * process's clock, a run's StartTime the server's, and visibility shows a new run a moment late: a
 * later run started just before the listing may be neither summed nor after `computedAt`. Counting
 * from earlier costs at most an extra summing of a day whose later run is that recent.
 */
export const LATER_RUNS_MARGIN_MS = 60_000;
/**
 * The summing rule a kept day was written under; a summary of another (or none: before an
 * order's earlier runs were left out) is not trusted and is summed again.
 */
export const STATEMENT_DAY_RULE = 'latest-run';

/** YYYY-MM-DD of a UTC instant. */
export const dateOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export const finalStatusesClause = () =>
  `${OrderStatusAttribute.name} IN (${finalStatuses.map((s) => `'${s}'`).join(', ')})`;

/** The orders of a key: its client's, or those with no client. */
export function keyClause(key: string): string {
  return key === NO_CLIENT_KEY
    ? `${OrderClientAttribute.name} IS NULL`
    : `${OrderClientAttribute.name} = '${key}'`;
}

/** What the methods below take besides their arguments. */
export interface StatementDaysCall {
  /** The caller is gone: start no Temporal call (those in flight are the caller's to cancel). */
  signal?: AbortSignal | undefined;
}

/** Closed final order runs completed in [fromMs, toMs) (whole UTC days), of one key or of all. */
function closedRunsQuery(fromMs: number, toMs: number, key?: string): string {
  return [
    orderRunsClause(),
    closedInClause(fromMs, toMs),
    ...(key === undefined ? [] : [keyClause(key)]),
  ].join(' AND ');
}

function closedInClause(fromMs: number, toMs: number): string {
  return [
    `ExecutionStatus != 'Running'`,
    finalStatusesClause(),
    `${CompletedAtAttribute.name} >= '${new Date(fromMs).toISOString()}'`,
    `${CompletedAtAttribute.name} < '${new Date(toMs).toISOString()}'`,
  ].join(' AND ');
}

/**
 * What a kept day's check counts: the day's closed final runs, and the runs started since it was
 * summed by orders accepted by its end. An order's first run starts when it is accepted, so those
 * are later runs (reopened, reset, resumed, continued) of orders that may be in the day.
 */
function keptDayCheckQuery(summary: StatementDaySummary, marginMs: number): string {
  const from = Date.parse(`${summary.date}T00:00:00Z`);
  // From a margin before the listing began: a later run started well before it is one the summing
  // saw (its IDs' runs are counted after the listing's pages, by then visible).
  const since = Date.parse(summary.computedAt) - marginMs;
  const laterRuns =
    `${AcceptedAtAttribute.name} < '${new Date(from + DAY_MS).toISOString()}' AND ` +
    `StartTime >= '${new Date(since).toISOString()}'`;
  return [
    orderRunsClause(),
    keyClause(summary.key),
    `((${closedInClause(from, from + DAY_MS)}) OR (${laterRuns}))`,
  ].join(' AND ');
}

export class StatementDays {
  readonly #client: Client;
  readonly #taskQueue: string;
  readonly #laterRunsMarginMs: number;
  /** Days being written by a `store` of this instance: another statement asking for them skips them. */
  readonly #writing = new Set<string>();

  /**
   * `taskQueue`: where the summaries' workflows run (they end at once; a worker of the orders' queue
   * ends them). `laterRunsMarginMs`: LATER_RUNS_MARGIN_MS but in tests of what happens after it.
   */
  constructor(client: Client, taskQueue: string, laterRunsMarginMs = LATER_RUNS_MARGIN_MS) {
    this.#client = client;
    this.#taskQueue = taskQueue;
    this.#laterRunsMarginMs = laterRunsMarginMs;
  }

  /**
   * How many closed final order runs of these keys completed in the whole UTC days [fromMs, toMs):
   * none, and no day of the span has anything to keep or to read (one count instead of a read per day).
   */
  async closedRuns(
    keys: readonly string[],
    fromMs: number,
    toMs: number,
    { signal }: StatementDaysCall = {},
  ): Promise<number> {
    signal?.throwIfAborted();
    const query = [
      orderRunsClause(),
      closedInClause(fromMs, toMs),
      `(${keys.map((key) => keyClause(key)).join(' OR ')})`,
    ].join(' AND ');
    return (await this.#client.workflow.count(query)).count;
  }

  /** The stored summaries of these keys and days, by workflow ID: the newest run of each. */
  async stored(
    keys: readonly string[],
    dates: readonly string[],
    { signal }: StatementDaysCall = {},
  ): Promise<Map<string, StatementDaySummary>> {
    const ids = keys.flatMap((key) => dates.map((date) => statementDayWorkflowId(key, date)));
    const found = new Map<string, StatementDaySummary>();
    const chunks: string[][] = [];
    for (let i = 0; i < ids.length; i += IDS_PER_LISTING) chunks.push(ids.slice(i, i + IDS_PER_LISTING));
    const limit = pLimit(AT_ONCE);
    await Promise.all(
      chunks.map((chunk) =>
        limit(async () => {
          signal?.throwIfAborted();
          const query =
            `WorkflowType = '${STATEMENT_DAY_WORKFLOW}' AND ` +
            `WorkflowId IN (${chunk.map((id) => `'${id}'`).join(', ')})`;
          for await (const execution of this.#client.workflow.list({ query, pageSize: PAGE_SIZE })) {
            const summary = execution.memo?.[STATEMENT_DAY_MEMO] as StatementDaySummary | undefined;
            // Summed under another rule (before earlier runs were left out): as if missing.
            if (!summary || summary.rule !== STATEMENT_DAY_RULE) continue;
            const before = found.get(execution.workflowId);
            if (!before || before.computedAt < summary.computedAt) found.set(execution.workflowId, summary);
          }
        }),
      ),
    );
    return found;
  }

  /**
   * Those of `summaries` whose day still has as many closed runs as they summed and no later run
   * of an order accepted by its end (one count each).
   */
  async stillValid(
    summaries: readonly StatementDaySummary[],
    { signal }: StatementDaysCall = {},
  ): Promise<StatementDaySummary[]> {
    const limit = pLimit(AT_ONCE);
    const valid = await Promise.all(
      summaries.map((summary) =>
        limit(async () => {
          signal?.throwIfAborted();
          const query = keptDayCheckQuery(summary, this.#laterRunsMarginMs);
          const { count } = await this.#client.workflow.count(query);
          return count === summary.orders;
        }),
      ),
    );
    return summaries.filter((_, i) => valid[i]);
  }

  /**
   * Sums the closed runs of the whole UTC days [fromMs, toMs), one listing: per day, for `key`
   * (every day, an empty summary for a day without orders), or for every key met when undefined.
   * `progress` is called every page.
   */
  async sum(
    fromMs: number,
    toMs: number,
    key?: string,
    { progress, signal }: StatementDaysCall & { progress?: () => void } = {},
  ): Promise<StatementDaySummary[]> {
    signal?.throwIfAborted();
    const computedAt = new Date().toISOString();
    const summaries = new Map<string, StatementDaySummary & { byLine: Map<string, StatementDayLine> }>();
    const summaryOf = (rowKey: string, date: string) => {
      const id = statementDayWorkflowId(rowKey, date);
      let summary = summaries.get(id);
      if (!summary) {
        summary = {
          key: rowKey,
          date,
          orders: 0,
          lines: [],
          computedAt,
          rule: STATEMENT_DAY_RULE,
          byLine: new Map(),
        };
        summaries.set(id, summary);
      }
      return summary;
    };
    if (key !== undefined) for (let day = fromMs; day < toMs; day += DAY_MS) summaryOf(key, dateOf(day));
    const query = closedRunsQuery(fromMs, toMs, key);
    let listed = 0;
    const latest = new LatestRuns<StatementRow & { summary: ReturnType<typeof summaryOf> }>(
      this.#client,
      (row) => addTo(row.summary.byLine, row),
    );
    for await (const execution of this.#client.workflow.list({ query, pageSize: PAGE_SIZE })) {
      if (++listed % PAGE_SIZE === 0) {
        signal?.throwIfAborted();
        progress?.();
      }
      const completedAt = execution.typedSearchAttributes.get(CompletedAtAttribute);
      if (!completedAt) continue;
      const row = statementRow(execution);
      const rowKey = key ?? execution.typedSearchAttributes.get(OrderClientAttribute) ?? NO_CLIENT_KEY;
      const summary = summaryOf(rowKey, dateOf(completedAt.getTime()));
      // Counted as the validity check counts: every run the query lists, summed or not.
      summary.orders += 1;
      if (row) await latest.add({ ...row, summary });
    }
    await latest.flush();
    return [...summaries.values()].map(({ byLine, ...summary }) => ({
      ...summary,
      lines: [...byLine.values()].sort(
        (a, b) => a.type.localeCompare(b.type) || a.status.localeCompare(b.status),
      ),
    }));
  }

  /**
   * Keeps summaries, in their order: each a new run of its day's workflow, which replaces an older
   * one. At most `max` of them (default all); a day this instance is writing already is left out.
   * Answers the ones it wrote.
   */
  async store(
    summaries: readonly StatementDaySummary[],
    { signal, max = Infinity }: StatementDaysCall & { max?: number } = {},
  ): Promise<StatementDaySummary[]> {
    const mine = summaries
      .filter((summary) => !this.#writing.has(statementDayWorkflowId(summary.key, summary.date)))
      .slice(0, max);
    const ids = mine.map((summary) => statementDayWorkflowId(summary.key, summary.date));
    ids.forEach((id) => this.#writing.add(id));
    const limit = pLimit(AT_ONCE);
    try {
      await Promise.all(
        mine.map((summary, i) =>
          limit(() => {
            signal?.throwIfAborted();
            return this.#client.workflow.start(STATEMENT_DAY_WORKFLOW, {
              taskQueue: this.#taskQueue,
              workflowId: ids[i]!,
              args: [],
              memo: { [STATEMENT_DAY_MEMO]: summary },
              workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
              // Two statements summing the same day at once write the same figures; the later stays.
              workflowIdConflictPolicy: WorkflowIdConflictPolicy.TERMINATE_EXISTING,
              // Housekeeping: its one workflow task waits behind every order's, batch items' included.
              priority: STATEMENT_DAYS_PRIORITY,
            });
          }),
        ),
      );
    } finally {
      ids.forEach((id) => this.#writing.delete(id));
    }
    return mine;
  }

  /**
   * The nightly precompute: the last `days` whole UTC days before `nowMs`, one listing each (every
   * client), and a summary written for each client and day that has none, a different one, or one
   * its check no longer trusts though the figures are the same (a later run of an order accepted by
   * the day's end started since it was summed: rewritten as of now, the next statement trusts it).
   */
  async summarizeRecentDays(
    nowMs: number,
    days: number,
    progress?: () => void,
  ): Promise<StatementDaysReport> {
    const today = Math.floor(nowMs / DAY_MS) * DAY_MS;
    const report: StatementDaysReport = { dates: [], orders: 0, written: 0, unchanged: 0 };
    for (let day = today - days * DAY_MS; day < today; day += DAY_MS) {
      const date = dateOf(day);
      report.dates.push(date);
      const summed = await this.sum(day, day + DAY_MS, undefined, { progress });
      progress?.();
      report.orders += summed.reduce((n, s) => n + s.orders, 0);
      // A client whose closed runs of the day were all deleted keeps its summary: the read's count sees it.
      const stored = await this.stored(
        summed.map((s) => s.key),
        [date],
      );
      const changed: StatementDaySummary[] = [];
      const same: { summed: StatementDaySummary; before: StatementDaySummary }[] = [];
      for (const s of summed) {
        const before = stored.get(statementDayWorkflowId(s.key, date));
        const differs =
          !before || before.orders !== s.orders || JSON.stringify(before.lines) !== JSON.stringify(s.lines);
        if (differs) changed.push(s);
        else same.push({ summed: s, before });
      }
      const trusted = new Set(await this.stillValid(same.map(({ before }) => before)));
      changed.push(...same.filter(({ before }) => !trusted.has(before)).map(({ summed }) => summed));
      await this.store(changed);
      progress?.();
      report.written += changed.length;
      report.unchanged += summed.length - changed.length;
    }
    return report;
  }
}

function addTo(lines: Map<string, StatementDayLine>, row: StatementRow): void {
  const id = `${row.type}|${row.status}`;
  const line = lines.get(id) ?? { type: row.type, status: row.status, orders: 0 };
  lines.set(id, addRow(line, row));
  sortProducts(line);
}
