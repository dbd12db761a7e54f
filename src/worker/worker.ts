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
import {
  Worker,
  type ActivityInterceptorsFactory,
  type InjectedSinks,
  type NativeConnection,
  type WorkerOptions,
} from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { Activities } from './activities';
import type { DeliveryActivities } from '../webhooks';
import type { WebhookDeliveryPolicy } from '../../contract/webhooks';
import type { Config } from '../config';
import type { Tracing } from '../observability';
import { serverClockSampler, type DeploymentVersion } from '../temporal';
import { readFile } from 'node:fs/promises';
import { bundleWorkflowCode } from '@temporalio/worker';
import { defaultWorkflowsPath, workflowBundleOptions, workflowInterceptorModules } from './bundle';
import { workflowBuildId } from './build-id';

export { workflowBuildId } from './build-id';

export { defaultWorkflowsPath } from './bundle';

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
  activities: Activities;
  workflowCode: WorkflowCode;
  tuning?: Partial<WorkerTuning>;
  /** Payload encryption (dataConverterFromConfig); Temporal's defaults when absent. */
  dataConverter?: DataConverter;
  /** Spans of activities and of traced workflows (src/observability/tracing.ts); absent = off. */
  tracing?: Tracing;
  /**
   * The Worker Deployment version this worker is (docs/deployers.md "Deploying a new version").
   * Absent: unversioned, only for Temporal's time-skipping test server (it has no deployments)
   * and replay.
   */
  deployment?: WorkerDeployment;
}

/** A version of the service's Worker Deployment: the deployment's name and this build's ID. */
export type WorkerDeployment = DeploymentVersion;

/**
 * Versioned: every workflow runs pinned to the version it started on unless its type says
 * otherwise (src/temporal/versioning.workflow.ts; each does, explicitly), so a new build never replays a
 * history an older build wrote (docs/contributors.md "Worker versioning, never patches").
 */
function deploymentOptions(
  deployment: WorkerDeployment | undefined,
): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  if (!deployment) return {};
  return {
    workerDeploymentOptions: {
      version: { deploymentName: deployment.deploymentName, buildId: deployment.buildId },
      useWorkerVersioning: true,
      defaultVersioningBehavior: 'PINNED',
    },
  };
}

/**
 * On shutdown (SIGTERM), how long provider calls in flight may finish before their activities are
 * cancelled — which aborts the call (attempt-deadline.ts): a cancelled send is one whose outcome is
 * unknown, and its order must then wait a settle window. The SDK's default is 0.
 */
const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Where workflows hand their spans (src/worker/interceptors.workflow.ts). Registered with tracing off too:
 * an order started by a tracing API still calls it, and its spans are then dropped here.
 */
function workflowSpanSinks(tracing: Tracing | undefined): InjectedSinks<OpenTelemetrySinks> {
  if (tracing) return { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) };
  return { exporter: { export: { fn: () => {} } } };
}

/** Spans of activities, when tracing is on. */
function activitySpans(tracing: Tracing | undefined): ActivityInterceptorsFactory[] {
  if (!tracing) return [];
  return [
    (ctx) => ({
      inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer: tracing.tracer }),
      outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
    }),
  ];
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
      activity: [
        // The server's clock, for the local send's window (src/temporal/server-clock.ts).
        serverClockSampler(),
        ...activitySpans(tracing),
      ],
    },
    sinks: workflowSpanSinks(tracing),
    ...deploymentOptions(options.deployment),
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
 * The workflow code as one bundle and the version it is: sources are bundled first (with
 * src/worker/bundle.ts's options, as `npm run build:bundle` does), so the build ID is the digest
 * of what runs. `buildId` (WORKER_BUILD_ID) overrides the digest.
 */
export async function versionedWorkflowCode(
  workflowCode: WorkflowCode,
  { deploymentName, buildId }: { deploymentName: string; buildId?: string | undefined },
): Promise<{ workflowCode: WorkflowCode; deployment: WorkerDeployment }> {
  let code: string;
  if ('workflowsPath' in workflowCode) {
    ({ code } = await bundleWorkflowCode({
      ...workflowBundleOptions,
      workflowsPath: workflowCode.workflowsPath,
      logger: undefined,
    }));
  } else if ('code' in workflowCode.workflowBundle) code = workflowCode.workflowBundle.code;
  else code = await readFile(workflowCode.workflowBundle.codePath, 'utf8');
  return {
    workflowCode: { workflowBundle: { code } },
    deployment: { deploymentName, buildId: buildId ?? workflowBuildId(code) },
  };
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
  /** The order worker's version: the two workers of one process are one version. */
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
    // Its deliveries sample the server's clock for the order activities of the same process.
    interceptors: { activity: [serverClockSampler()] },
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
