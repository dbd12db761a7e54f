/**
 * The order worker: the workflows (from a pre-built bundle or bundled at start) and the provider
 * activities on one task queue. Shared by `npm run worker` (main.ts), tests and scripts.
 */
// The package's parts, not its index: the index loads the OpenTelemetry SDK, which only a worker
// with tracing on needs (src/observability/tracing.ts loads it then).
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/worker';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import {
  bundleWorkflowCode,
  Worker,
  type InjectedSinks,
  type NativeConnection,
  type WorkerOptions,
} from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { OrderActivities } from '../../activities';
import type { DeliveryActivities } from '../../activities/webhooks';
import type { WebhookDeliveryPolicy } from '../../contract/webhooks';
import type { Config } from '../config';
import type { Tracing } from '../observability/tracing';
import type { WorkerDeployment } from '../temporal/deployments';
import { defaultWorkflowsPath, workflowBundleOptions, workflowInterceptorModules } from './bundle';

export { defaultWorkflowsPath } from './bundle';
export type { WorkerDeployment } from '../temporal/deployments';

/** The Temporal worker's concurrency settings (WORKER_* configuration). */
export interface WorkerTuning {
  maxConcurrentActivityTaskExecutions: number;
  maxConcurrentWorkflowTaskExecutions: number;
  maxCachedWorkflows: number;
  /** Every activity is one provider call, so this caps the calls the whole fleet makes. */
  maxTaskQueueActivitiesPerSecond?: number;
}

/**
 * A bundle built ahead (npm run build:bundle: fast start, same code on every worker, built with
 * src/worker/bundle.ts's options) or the sources, bundled at start with the interceptors.
 */
export type WorkflowCode =
  { workflowBundle: { codePath: string } | { code: string } } | { workflowsPath: string };

export interface OrderWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  activities: OrderActivities;
  workflowCode: WorkflowCode;
  tuning?: Partial<WorkerTuning>;
  /** Payload encryption (dataConverterFromConfig); Temporal's defaults when absent. */
  dataConverter?: DataConverter;
  /** Spans of activities and of traced workflows (src/observability/tracing.ts); absent = off. */
  tracing?: Tracing;
  /**
   * The Worker Deployment version this worker is (src/temporal/deployments.ts): with it, Worker
   * Versioning is on and every workflow is pinned to the version that started it. Absent: an
   * unversioned worker, for Temporal's time-skipping test server, which has no deployments.
   */
  deployment?: WorkerDeployment;
  /**
   * false: the deployment only labels the build, and tasks are not routed by version (two
   * workers of one process on one task queue need different labels). Default true.
   */
  versioning?: boolean;
}

/**
 * The SDK's deployment options: versioned, every workflow type declaring its own behaviour
 * (workflows/index.ts); PINNED is the default for any that would not.
 */
function deploymentOptions(
  deployment: WorkerDeployment | undefined,
  versioning = true,
): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  if (!deployment) return {};
  const version = { deploymentName: deployment.deploymentName, buildId: deployment.buildId };
  return {
    workerDeploymentOptions: versioning
      ? { version, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' }
      : { version, useWorkerVersioning: false },
  };
}

/**
 * A build ID for the workflow code: a digest of the bundle, so the same code is the same build on
 * every host and any change to the workflows (or what they import) is a new version.
 */
export function workflowBuildId(bundleCode: string): string {
  return `wf-${createHash('sha256').update(bundleCode).digest('hex').slice(0, 16)}`;
}

/**
 * The workflow code as a bundle in memory: what the build ID is a digest of, and what the worker
 * runs (a worker that bundles at start bundles once, here).
 */
export async function loadWorkflowBundle(workflowCode: WorkflowCode): Promise<{ code: string }> {
  if ('workflowsPath' in workflowCode) {
    const { code } = await bundleWorkflowCode({ ...workflowBundleOptions, logger: undefined });
    return { code };
  }
  const bundle = workflowCode.workflowBundle;
  return 'code' in bundle ? bundle : { code: await readFile(bundle.codePath, 'utf8') };
}

/**
 * On shutdown (SIGTERM), how long provider calls in flight may finish before their activities are
 * cancelled — which aborts the call (attempt-deadline.ts): a cancelled send is one whose outcome is
 * unknown, and its order must then wait a settle window. The SDK's default is 0.
 */
const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Where workflows hand their spans (workflows/interceptors.ts). Registered with tracing off too:
 * an order started by a tracing API still calls it, and its spans are then dropped here.
 */
function workflowSpanSinks(tracing: Tracing | undefined): InjectedSinks<OpenTelemetrySinks> {
  if (tracing) return { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) };
  return { exporter: { export: { fn: () => {} } } };
}

export function createOrderWorker(options: OrderWorkerOptions): Promise<Worker> {
  const { connection, namespace, taskQueue, activities, workflowCode, tuning, dataConverter, tracing } =
    options;
  return Worker.create({
    connection,
    namespace,
    taskQueue,
    activities,
    dataConverter,
    shutdownGraceTime: SHUTDOWN_GRACE_MS,
    ...workflowCode,
    interceptors: {
      // A pre-built bundle has them built in (src/worker/bundle.ts); the SDK warns if given here too.
      ...('workflowsPath' in workflowCode ? { workflowModules: workflowInterceptorModules } : {}),
      activity: tracing
        ? [
            (ctx) => ({
              inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer: tracing.tracer }),
              outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
            }),
          ]
        : [],
    },
    sinks: workflowSpanSinks(tracing),
    ...deploymentOptions(options.deployment, options.versioning),
    ...tuning,
  });
}

export function tuningFromConfig(config: Config): WorkerTuning {
  return {
    maxConcurrentActivityTaskExecutions: config.WORKER_MAX_CONCURRENT_ACTIVITIES,
    maxConcurrentWorkflowTaskExecutions: config.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS,
    maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS,
    ...(config.WORKER_PROVIDER_CALLS_PER_SECOND
      ? { maxTaskQueueActivitiesPerSecond: config.WORKER_PROVIDER_CALLS_PER_SECOND }
      : {}),
  };
}

export function workflowCodeFromConfig(config: Config): WorkflowCode {
  const codePath = config.WORKER_WORKFLOW_BUNDLE_PATH;
  return codePath ? { workflowBundle: { codePath } } : { workflowsPath: defaultWorkflowsPath };
}

/**
 * The webhook worker: the delivery workflows and their `deliverWebhook` activity on the webhook
 * task queue (WEBHOOK_TASK_QUEUE), in the same process as the order worker but apart from it, so a
 * slow receiver holds delivery slots only, never a provider call, and the provider rate limit
 * (WORKER_PROVIDER_CALLS_PER_SECOND, per task queue) counts provider calls only.
 */
export function createWebhookWorker(options: {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  activities: DeliveryActivities;
  workflowCode: WorkflowCode;
  maxConcurrentDeliveries: number;
  dataConverter?: DataConverter;
  /** The order worker's version: one process's two workers are one build. */
  deployment?: WorkerDeployment;
}): Promise<Worker> {
  const { connection, namespace, taskQueue, activities, workflowCode, dataConverter } = options;
  return Worker.create({
    connection,
    namespace,
    taskQueue,
    activities,
    dataConverter,
    ...workflowCode,
    ...deploymentOptions(options.deployment),
    maxConcurrentActivityTaskExecutions: options.maxConcurrentDeliveries,
  });
}

/** The delivery workflows' timings (WEBHOOK_*), put in each delivery workflow's input when it starts. */
export function webhookPolicyFromConfig(
  config: Pick<
    Config,
    | 'WEBHOOK_TIMEOUT_MS'
    | 'WEBHOOK_RETRY_INITIAL_MS'
    | 'WEBHOOK_RETRY_MAX_INTERVAL_MS'
    | 'WEBHOOK_RETRY_FOR_MS'
    | 'WEBHOOK_IDLE_CLOSE_MS'
  >,
): WebhookDeliveryPolicy {
  return {
    // The activity outlives the HTTP attempt's own deadline: the sender reports a timeout itself.
    attemptTimeoutMs: config.WEBHOOK_TIMEOUT_MS + WEBHOOK_ACTIVITY_MARGIN_MS,
    retryInitialMs: config.WEBHOOK_RETRY_INITIAL_MS,
    retryMaxIntervalMs: config.WEBHOOK_RETRY_MAX_INTERVAL_MS,
    retryForMs: config.WEBHOOK_RETRY_FOR_MS,
    idleCloseMs: config.WEBHOOK_IDLE_CLOSE_MS,
  };
}

/** Signing and the activity's own bookkeeping, on top of the HTTP timeout. */
const WEBHOOK_ACTIVITY_MARGIN_MS = 5_000;
