/**
 * An order's runs: its workflow ID can hold several that reached a final status — the nightly
 * reconciliation reopens a closed order in a new run, an operator resets a closed run, the sweep
 * resumes one — and visibility lists every run. The statements, the list and the export count
 * each order once, by its latest run (docs/contributors.md "The latest run decides").
 */
import type { Client } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import { workflowTypeByOrderType } from '../../contract/order';
import { untimed, type Timed } from '../temporal';

/** Rows per visibility page: its largest (the IDs' runs are few). */
const PAGE_SIZE = 1_000;
/** Closed runs checked for later runs at once: workflow IDs named by one count. */
const RUNS_PER_CHECK = 100;

/** A listed order run. */
export interface OrderRun {
  workflowId: string;
  runId: string;
  /** Still running: then it is its workflow ID's latest run (one run of an ID runs at a time). */
  running: boolean;
}

/** Every order run that is not continued as new (its successor is the same order). */
export function orderRunsClause(): string {
  const types = Object.values(workflowTypeByOrderType).map((t) => `'${t}'`);
  return `WorkflowType IN (${types.join(', ')}) AND ExecutionStatus != 'ContinuedAsNew'`;
}

/**
 * Keeps only the rows that are their workflow ID's latest run (docs/integrators.md "Statements"):
 * an order's workflow ID can hold several runs with a final status — the nightly reconciliation
 * reopens a closed order in a new run, an operator resets a closed run, the sweep resumes one —
 * and visibility lists every run. A running run is its ID's latest (one runs at a time); closed
 * ones are checked RUNS_PER_CHECK at a time by one count of their IDs' other runs, and only when an ID
 * has another run are they listed to find its latest: the running one, else the last closed.
 * A latest run that closed without a final status (stranded, until the sweep resumes it) leaves
 * the order in no day and not open, for those minutes.
 */
export class LatestRuns<R extends OrderRun> {
  readonly #client: Client;
  readonly #take: (row: R) => void;
  readonly #timed: Timed;
  #pending: R[] = [];

  /** `timed`: wraps each Temporal call (the list's deadline). */
  constructor(client: Client, take: (row: R) => void, timed: Timed = untimed) {
    this.#client = client;
    this.#take = take;
    this.#timed = timed;
  }

  /** Those of `rows` that are their workflow ID's latest run, in their order. */
  static async of<R extends OrderRun>(client: Client, rows: readonly R[], timed?: Timed): Promise<R[]> {
    const kept = new Set<R>();
    const latest = new LatestRuns<R>(client, (row) => kept.add(row), timed);
    for (const row of rows) await latest.add(row);
    await latest.flush();
    return rows.filter((row) => kept.has(row));
  }

  async add(row: R): Promise<void> {
    if (row.running) {
      this.#take(row);
      return;
    }
    this.#pending.push(row);
    if (this.#pending.length >= RUNS_PER_CHECK) await this.flush();
  }

  /** Checks the rows held and takes the latest runs among them. */
  async flush(): Promise<void> {
    const rows = this.#pending;
    this.#pending = [];
    if (rows.length === 0) return;
    const ids = [...new Set(rows.map((row) => row.workflowId))];
    const query = `${orderRunsClause()} AND WorkflowId IN (${ids.map((id) => `'${id}'`).join(', ')})`;
    if (ids.length === rows.length) {
      // One row per ID and no other run of these IDs: each row is its order's only run. (Counting
      // the IDs' runs instead would be fooled by one ID whose run was deleted and another with two.)
      const others = `${query} AND RunId NOT IN (${rows.map((row) => `'${row.runId}'`).join(', ')})`;
      const { count } = await this.#timed(() => this.#client.workflow.count(others));
      if (count === 0) {
        rows.forEach((row) => this.#take(row));
        return;
      }
    }
    const latest = new Map<string, { runId: string; running: boolean; closedAt: number }>();
    for (const execution of await this.#timed(() => this.#listRaw(query))) {
      const workflowId = execution.execution?.workflowId ?? '';
      const run = {
        runId: execution.execution?.runId ?? '',
        running: execution.status === RUNNING,
        closedAt: optionalTsToMs(execution.closeTime) ?? 0,
      };
      const before = latest.get(workflowId);
      const later = !before || (!before.running && (run.running || run.closedAt > before.closedAt));
      if (later) latest.set(workflowId, run);
    }
    for (const row of rows) {
      // Not listed at all (deleted meanwhile): as listed before, it counts.
      const found = latest.get(row.workflowId);
      if (!found || found.runId === row.runId) this.#take(row);
    }
  }

  /**
   * The runs as visibility lists them, undecoded: only their IDs, status and close time are read,
   * and another deployment's codec (an encrypted memo) must not fail the listing.
   */
  async #listRaw(query: string): Promise<temporal.api.workflow.v1.IWorkflowExecutionInfo[]> {
    const { workflowService, options } = this.#client;
    const all: temporal.api.workflow.v1.IWorkflowExecutionInfo[] = [];
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await workflowService.listWorkflowExecutions({
        namespace: options.namespace,
        query,
        pageSize: PAGE_SIZE,
        nextPageToken,
      });
      all.push(...(page.executions ?? []));
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken);
    return all;
  }
}

/** temporal.api.enums.v1.WorkflowExecutionStatus RUNNING. */
const RUNNING = 1;
