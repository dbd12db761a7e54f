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
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

export const FAIRNESS_PROBE_WORKFLOW_TYPE = 'FairnessProbe';

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

/**
 * Probes once and says the answer in the log (a warning, with what to set, when fairness is not
 * honoured). Never throws: orders run either way, only their order differs.
 */
export async function reportFairness(
  client: Client,
  taskQueue: string,
  log: {
    info(message: string, meta?: Record<string, unknown>): void;
    warn(message: string, meta?: Record<string, unknown>): void;
  },
): Promise<FairnessProbeResult | undefined> {
  try {
    const result = await probeFairness(client, { taskQueue });
    if (result.honoured) {
      log.info('Temporal honours task-queue fairness: clients share the workers by weight', {
        probe: result.positions,
      });
    } else {
      log.warn(FAIRNESS_NOT_HONOURED, { probe: result.positions, of: result.tasks });
    }
    return result;
  } catch (err) {
    log.warn('could not probe whether Temporal honours task-queue fairness', {
      error: err instanceof Error ? err.message : String(err),
    });
    return undefined;
  }
}
