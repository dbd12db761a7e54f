/**
 * Whether the Temporal server this process talks to honours task-queue fairness (docs/deployers.md
 * "Fair under load"). No API reads a self-hosted server's dynamic config, and an older server or
 * one without `matching.enableFairness` takes a fairness key without complaint, so we ask the
 * queue itself: on a queue of the probe's own, which no worker polls, start many workflows under
 * one fairness key, then a few under keys of their own, and take every task off the queue. A server
 * that honours fairness hands the lone keys' tasks out among the first; one that does not, last
 * (first come, first served). A queue has several partitions, each its own line (fairness holds
 * within one), so single positions vary: the answer is the lone tasks' mean position, early or late.
 * The probe's workflows are terminated at the end and time out after a minute regardless.
 *
 * Only the worker probes (`startFairnessReports`: at start, then hourly), and records each answer
 * where the API reads it without probing (`readFairnessReport`, for /readyz): the memo of a
 * workflow `fairness-report:<task queue>`, started on a queue no worker polls and terminated at
 * once, like the probe's own. Each report is a new run under that ID; a describe reads the latest.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

export const FAIRNESS_PROBE_WORKFLOW_TYPE = 'FairnessProbe';
export const FAIRNESS_REPORT_WORKFLOW_TYPE = 'FairnessReport';

/** The workflow whose memo holds the latest probe's answer for the workers of `taskQueue`. */
export function fairnessReportWorkflowId(taskQueue: string): string {
  return `fairness-report:${taskQueue}`;
}

/** What a probe found, as recorded for the API. */
export interface FairnessReport {
  honoured: boolean;
  positions: number[];
  tasks: number;
  /** ISO time of the probe. */
  probedAt: string;
}

export interface FairnessProbeResult {
  honoured: boolean;
  /** Where the lone keys' tasks came, counting from 1, of `tasks` (missing ones count as last). */
  positions: number[];
  tasks: number;
}

export interface FairnessProbeOptions {
  /** The task queue probed is `<taskQueue>-fairness-probe-<random>`. */
  taskQueue: string;
  /** Tasks under the busy key, then tasks under a key each. */
  busyTasks?: number;
  loneTasks?: number;
  /** Each poll's deadline. */
  pollTimeoutMs?: number;
}

export async function probeFairness(
  client: Client,
  options: FairnessProbeOptions,
): Promise<FairnessProbeResult> {
  const busyTasks = options.busyTasks ?? 32;
  const loneTasks = options.loneTasks ?? 8;
  const pollTimeoutMs = options.pollTimeoutMs ?? 10_000;
  const run = randomUUID().slice(0, 8);
  const taskQueue = `${options.taskQueue}-fairness-probe-${run}`;
  const started: string[] = [];
  const start = async (workflowId: string, fairnessKey: string) => {
    await client.workflow.start(FAIRNESS_PROBE_WORKFLOW_TYPE, {
      taskQueue,
      workflowId,
      args: [],
      priority: { fairnessKey },
      workflowExecutionTimeout: '1 minute',
    });
    started.push(workflowId);
  };
  const lone = new Set<string>();
  try {
    // One after the other: their order of arrival is what a first-come, first-served queue keeps.
    for (let i = 0; i < busyTasks; i++) await start(`fairness-probe-${run}-busy-${i}`, 'probe-busy');
    for (let i = 0; i < loneTasks; i++) {
      const id = `fairness-probe-${run}-lone-${i}`;
      await start(id, `probe-lone-${i}`);
      lone.add(id);
    }
    const tasks = busyTasks + loneTasks;
    const positions: number[] = [];
    for (let position = 1; position <= tasks && positions.length < loneTasks; position++) {
      const task = await client.withDeadline(Date.now() + pollTimeoutMs, () =>
        client.workflowService.pollWorkflowTaskQueue({
          namespace: client.options.namespace,
          taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
          identity: `fairness-probe@${run}`,
        }),
      );
      if (lone.has(task.workflowExecution?.workflowId ?? '')) positions.push(position);
    }
    while (positions.length < loneTasks) positions.push(tasks);
    // First come, first served puts them at the end, fairness near the front; across partitions
    // the means measured on a dev server were 30–36 of 40 without fairness and 9–20 with it.
    const mean = positions.reduce((sum, p) => sum + p, 0) / loneTasks;
    return { honoured: mean <= tasks * 0.6, positions, tasks };
  } finally {
    await Promise.allSettled(
      started.map((id) => client.workflow.getHandle(id).terminate('fairness probe done')),
    );
  }
}

/** What the worker's log and /readyz say when the probe finds fairness not honoured. */
export const FAIRNESS_NOT_HONOURED =
  "Temporal does not honour task-queue fairness: every client's orders wait in one first-come, first-served line, " +
  "so one client's bulk upload delays the others. Set matching.enableFairness=true and " +
  'matching.useNewMatcher=true in the server\'s dynamic config (Temporal ≥ 1.29; docs/deployers.md "Fair under load")';

type ProbeLog = {
  info(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
};

/**
 * Probes once, records the answer for the API (`recordFairnessReport`) and says it in the log (a
 * warning, with what to set, when fairness is not honoured). Never throws: orders run either way,
 * only their order differs.
 */
export async function reportFairness(
  client: Client,
  taskQueue: string,
  log: ProbeLog,
  options: { now?: () => Date; probe?: typeof probeFairness } = {},
): Promise<FairnessProbeResult | undefined> {
  const probe = options.probe ?? probeFairness;
  let result: FairnessProbeResult;
  try {
    result = await probe(client, { taskQueue });
  } catch (err) {
    log.warn('could not probe whether Temporal honours task-queue fairness', {
      error: err instanceof Error ? err.message : String(err),
    });
    return undefined;
  }
  if (result.honoured) {
    log.info('Temporal honours task-queue fairness: clients share the workers by weight', {
      probe: result.positions,
    });
  } else {
    log.warn(FAIRNESS_NOT_HONOURED, { probe: result.positions, of: result.tasks });
  }
  try {
    await recordFairnessReport(client, taskQueue, {
      ...result,
      probedAt: (options.now?.() ?? new Date()).toISOString(),
    });
  } catch (err) {
    log.warn('could not record the fairness probe for the API', {
      error: err instanceof Error ? err.message : String(err),
    });
  }
  return result;
}

/** Records `report` as the memo of a new run of the report workflow, closed at once. */
export async function recordFairnessReport(
  client: Client,
  taskQueue: string,
  report: FairnessReport,
): Promise<void> {
  const handle = await client.workflow.start(FAIRNESS_REPORT_WORKFLOW_TYPE, {
    // No worker polls it: the run is only its memo.
    taskQueue: `${taskQueue}-fairness-report`,
    workflowId: fairnessReportWorkflowId(taskQueue),
    args: [],
    memo: { fairness: report },
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    // Two workers reporting at once: the later report wins.
    workflowIdConflictPolicy: 'TERMINATE_EXISTING',
    workflowExecutionTimeout: '1 minute',
  });
  await handle.terminate('fairness report recorded');
}

/** The latest report for `taskQueue`'s workers; undefined when none was recorded (or it is malformed). */
export async function readFairnessReport(
  client: Client,
  taskQueue: string,
): Promise<FairnessReport | undefined> {
  try {
    const { memo } = await client.workflow.getHandle(fairnessReportWorkflowId(taskQueue)).describe();
    const report = memo?.fairness as Partial<FairnessReport> | undefined;
    if (typeof report?.honoured !== 'boolean' || typeof report.probedAt !== 'string') return undefined;
    return report as FairnessReport;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

/** How often a worker probes again (a server's dynamic config changes with a deploy), and after a failed probe. */
export const FAIRNESS_PROBE_EVERY_MS = 60 * 60_000;
export const FAIRNESS_PROBE_RETRY_MS = 60_000;

/**
 * The worker's probing: once at start, then every `everyMs` (after a failed probe, `retryMs`).
 * `stop` ends it and waits for a probe in flight, so the connection can close after it.
 */
export function startFairnessReports(
  client: Client,
  taskQueue: string,
  log: ProbeLog,
  options: { everyMs?: number; retryMs?: number; probe?: typeof probeFairness } = {},
): { stop(): Promise<void> } {
  const everyMs = options.everyMs ?? FAIRNESS_PROBE_EVERY_MS;
  const retryMs = options.retryMs ?? FAIRNESS_PROBE_RETRY_MS;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let probing: Promise<void> = Promise.resolve();
  const round = () => {
    probing = reportFairness(client, taskQueue, log, options.probe ? { probe: options.probe } : {}).then(
      (result) => {
        if (!stopped) timer = setTimeout(round, result ? everyMs : retryMs).unref();
      },
    );
  };
  round();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await probing;
    },
  };
}
