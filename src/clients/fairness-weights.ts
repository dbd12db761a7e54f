/**
 * Clients' fairness weights as Temporal task-queue config (docs/deployers.md "Fair under load"):
 * each client's `fairnessWeight` from the clients file becomes the fairness-weight override of its
 * key on the order queue (workflow and activity tasks: the key is the client id) and on the
 * webhook queue (delivery workflows: the client id; delivery attempts: `<client>:<endpoint>`).
 *
 * Why overrides as well as the weight each order carries from its start (src/orders/priority.ts):
 * a start's weight is fixed for the order's life, so a changed weight reached only new orders, and
 * the webhook queue carried none. An override applies to every task of the key at once, queued or
 * not, and goes away with the client.
 *
 * Applied by the workers at start and on SIGHUP (as they reload the clients file): the config is
 * the task queue's, so every worker applies the same and the last one wins. The workers own the
 * overrides of keys shaped like a client's (`acme`, `acme:erp`) on these queues: one whose client
 * is gone or back at weight 1 is removed; keys of another shape (an operator's own override of
 * another key) are left alone. The service's own keys (`reconciliation`, `statements`) are never
 * touched.
 */
import type { Connection } from '@temporalio/client';
import type { Logger } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { Runtime, type NativeConnection } from '@temporalio/worker';
import type { ClientsFile } from './model';
import { readClientsFile } from './registry';
import type { Config } from '../config';

const TaskQueueType = temporal.api.enums.v1.TaskQueueType;
type QueueType = 'workflow' | 'activity';
const queueTypes: Record<QueueType, temporal.api.enums.v1.TaskQueueType> = {
  workflow: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  activity: TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
};

/** A client id, optionally with an endpoint id (src/clients/model.ts's patterns). */
const CLIENT_KEY = /^[a-z][a-z0-9_]{0,23}(:[a-z0-9][a-z0-9_-]{0,31})?$/;
/** Fairness keys of the service's own work on the order queue (contract/): not a client's. */
const SERVICE_KEYS = new Set(['reconciliation', 'statements']);

export interface WeightedQueues {
  /** TEMPORAL_TASK_QUEUE. */
  orders: string;
  /** WEBHOOK_TASK_QUEUE. */
  webhooks: string;
}

/** One queue and task type's overrides: fairness key → weight. */
export interface QueueWeights {
  taskQueue: string;
  type: QueueType;
  weights: Record<string, number>;
}

/** The overrides the clients file asks for: every client whose weight is not the default 1. */
export function desiredWeights(file: ClientsFile, queues: WeightedQueues): QueueWeights[] {
  const weighted = file.clients.filter((c) => c.fairnessWeight !== undefined && c.fairnessWeight !== 1);
  const byClient = Object.fromEntries(weighted.map((c) => [c.id, c.fairnessWeight!]));
  const byEndpoint = Object.fromEntries(
    weighted.flatMap((c) => (c.webhooks ?? []).map((e) => [`${c.id}:${e.id}`, c.fairnessWeight!])),
  );
  return [
    { taskQueue: queues.orders, type: 'workflow', weights: byClient },
    { taskQueue: queues.orders, type: 'activity', weights: byClient },
    { taskQueue: queues.webhooks, type: 'workflow', weights: byClient },
    { taskQueue: queues.webhooks, type: 'activity', weights: byEndpoint },
  ];
}

type AnyConnection = Pick<Connection | NativeConnection, 'workflowService'>;

/** The queue's fairness-weight overrides as Temporal holds them now. */
export async function weightOverrides(
  connection: AnyConnection,
  namespace: string,
  taskQueue: string,
  type: QueueType,
): Promise<Record<string, number>> {
  const described = await connection.workflowService.describeTaskQueue({
    namespace,
    taskQueue: { name: taskQueue },
    taskQueueType: queueTypes[type],
    reportConfig: true,
  });
  return { ...(described.config?.fairnessWeightOverrides ?? {}) };
}

/**
 * Makes Temporal's overrides on the queues what the clients file asks for; returns the weights in
 * force afterwards (the clients' keys only).
 */
export async function applyFairnessWeights(
  connection: AnyConnection,
  options: { namespace: string; queues: WeightedQueues; file: ClientsFile; identity?: string },
): Promise<QueueWeights[]> {
  const inForce: QueueWeights[] = [];
  for (const want of desiredWeights(options.file, options.queues)) {
    const now = await weightOverrides(connection, options.namespace, want.taskQueue, want.type);
    const set = Object.fromEntries(Object.entries(want.weights).filter(([key, w]) => now[key] !== w));
    const unset = Object.keys(now).filter(
      (key) => CLIENT_KEY.test(key) && !SERVICE_KEYS.has(key) && !(key in want.weights),
    );
    if (Object.keys(set).length > 0 || unset.length > 0) {
      await connection.workflowService.updateTaskQueueConfig({
        namespace: options.namespace,
        identity: options.identity ?? 'topup-worker',
        taskQueue: want.taskQueue,
        taskQueueType: queueTypes[want.type],
        setFairnessWeightOverrides: set,
        unsetFairnessWeightOverrides: unset,
      });
    }
    inForce.push(want);
  }
  return inForce;
}

/** One line per queue and type for the log: `orders/workflow acme=3 shop=0.5`. */
export function describeWeights(weights: QueueWeights[]): Record<string, string> {
  return Object.fromEntries(
    weights.map((q) => [
      `${q.taskQueue}/${q.type}`,
      Object.entries(q.weights)
        .map(([key, w]) => `${key}=${w}`)
        .join(' ') || 'all 1',
    ]),
  );
}

/**
 * The worker's part (src/worker/main.ts): applies the weights now and on every SIGHUP, from the
 * clients file at `path` (a file that no longer validates is not taken: the weights stay). A
 * failure is logged, never fatal: orders run with the weight their start carries.
 */
export function keepFairnessWeights(options: {
  connection: AnyConnection;
  namespace: string;
  queues: WeightedQueues;
  path: string | undefined;
  read: (path: string) => ClientsFile;
  logger: Logger;
  onApplied?: (weights: QueueWeights[]) => void;
}): { applied: Promise<void>; stop(): void } {
  const apply = async () => {
    if (!options.path) return;
    try {
      const weights = await applyFairnessWeights(options.connection, {
        namespace: options.namespace,
        queues: options.queues,
        file: options.read(options.path),
      });
      options.logger.info('fairness weights in force', describeWeights(weights));
      options.onApplied?.(weights);
    } catch (err) {
      options.logger.warn('fairness weights NOT applied: orders keep the weight they started with', {
        error: err instanceof Error ? err.message : String(err),
      });
    }
  };
  let applied = apply();
  const onHup = () => {
    applied = applied.then(apply);
  };
  process.on('SIGHUP', onHup);
  return {
    get applied() {
      return applied;
    },
    stop: () => void process.off('SIGHUP', onHup),
  };
}

/**
 * What src/worker/main.ts calls (one line, beside its workers): keepFairnessWeights from the
 * worker's configuration, with the weights in force as a gauge on the worker's metrics
 * (`topup_fairness_weight{task_queue, task_type, fairness_key}`; a key whose override was removed
 * reads 1, the default it is back at).
 */
export function startFairnessWeights(
  connection: AnyConnection,
  config: Pick<
    Config,
    'TEMPORAL_NAMESPACE' | 'TEMPORAL_TASK_QUEUE' | 'WEBHOOK_TASK_QUEUE' | 'API_CLIENTS_FILE'
  > & {
    WORKER_METRICS_ADDRESS?: string | undefined;
  },
  logger: Logger,
): { applied: Promise<void>; stop(): void } {
  const gauge = config.WORKER_METRICS_ADDRESS
    ? Runtime.instance().metricMeter.createGauge(
        'topup_fairness_weight',
        'float',
        '',
        "A client's fairness weight in force on a task queue (from the clients file)",
      )
    : undefined;
  const shown = new Map<string, Record<string, string>>();
  return keepFairnessWeights({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    queues: { orders: config.TEMPORAL_TASK_QUEUE, webhooks: config.WEBHOOK_TASK_QUEUE },
    path: config.API_CLIENTS_FILE,
    read: readClientsFile,
    logger,
    onApplied: (weights) => {
      if (!gauge) return;
      const now = new Map<string, Record<string, string>>();
      for (const q of weights) {
        for (const [key, weight] of Object.entries(q.weights)) {
          const labels = { task_queue: q.taskQueue, task_type: q.type, fairness_key: key };
          now.set(JSON.stringify(labels), labels);
          gauge.set(weight, labels);
        }
      }
      for (const [id, labels] of shown) if (!now.has(id)) gauge.set(1, labels);
      shown.clear();
      for (const [id, labels] of now) shown.set(id, labels);
    },
  });
}
