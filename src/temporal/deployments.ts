/**
 * Worker Deployments (Temporal Worker Versioning): where a build of the workers stands, and the
 * routing changes a deploy makes — ramp a new version, make it current, roll back
 * (docs/deployers.md "Deploying a new version"). Orders are pinned to the version that started
 * them, so a deploy is a routing change, never a patch in the workflow code.
 *
 * Thin wrappers on the WorkflowService's deployment calls, shared by the worker (its first deploy
 * and its /readyz), `npm run deploy` and the tests.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowService } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { grpcCode, GrpcStatus } from './grpc';

/** A build of the workers within a Worker Deployment (one deployment per service). */
export interface WorkerDeployment {
  deploymentName: string;
  buildId: string;
}

/**
 * Where a version stands: `current` takes every new workflow, `ramping` a share of them;
 * `draining` has pinned workflows still open while no longer current or ramping, `drained` none
 * (its workers may be retired); `inactive` never was current nor ramping.
 */
export type VersionStatus = 'inactive' | 'current' | 'ramping' | 'draining' | 'drained' | 'unknown';

const statusNames: Record<number, VersionStatus> = {
  [temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE]: 'inactive',
  [temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT]: 'current',
  [temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING]: 'ramping',
  [temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING]: 'draining',
  [temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED]: 'drained',
};

export interface VersionState {
  status: VersionStatus;
  rampPercentage?: number;
  /** The task queues this version's workers poll (each once, whatever the task types). */
  taskQueues: string[];
  /** When the server last checked a draining version for open pinned workflows. */
  drainageCheckedAt?: Date;
}

export interface DeploymentState {
  currentBuildId?: string;
  rampingBuildId?: string;
  rampPercentage?: number;
  /** Every version the deployment has registered, newest first, with its status. */
  versions: { buildId: string; status: VersionStatus; createdAt?: Date }[];
  conflictToken?: Uint8Array;
}

function isNotFound(err: unknown): boolean {
  return grpcCode(err) === GrpcStatus.NOT_FOUND;
}

function timestamp(
  value: temporal.api.deployment.v1.IVersionDrainageInfo['lastCheckedTime'],
): Date | undefined {
  if (!value?.seconds) return undefined;
  return new Date(Number(value.seconds) * 1000 + Math.floor((value.nanos ?? 0) / 1e6));
}

/** A version as the server knows it; undefined until a worker of that build has polled. */
export async function describeVersion(
  service: WorkflowService,
  namespace: string,
  version: WorkerDeployment,
): Promise<VersionState | undefined> {
  try {
    const { workerDeploymentVersionInfo: info } = await service.describeWorkerDeploymentVersion({
      namespace,
      deploymentVersion: version,
    });
    if (!info) return undefined;
    const taskQueues = [...new Set((info.taskQueueInfos ?? []).map((q) => q.name ?? ''))].filter(Boolean);
    return {
      status: statusNames[info.status ?? 0] ?? 'unknown',
      ...(info.rampPercentage ? { rampPercentage: info.rampPercentage } : {}),
      taskQueues,
      ...(info.drainageInfo?.lastCheckedTime
        ? { drainageCheckedAt: timestamp(info.drainageInfo.lastCheckedTime) }
        : {}),
    };
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** A deployment's routing and versions; undefined until a worker of it has polled. */
export async function describeDeployment(
  service: WorkflowService,
  namespace: string,
  deploymentName: string,
): Promise<DeploymentState | undefined> {
  try {
    const { workerDeploymentInfo: info, conflictToken } = await service.describeWorkerDeployment({
      namespace,
      deploymentName,
    });
    if (!info) return undefined;
    const routing = info.routingConfig;
    const currentBuildId = routing?.currentDeploymentVersion?.buildId || undefined;
    const rampingBuildId = routing?.rampingDeploymentVersion?.buildId || undefined;
    return {
      ...(currentBuildId && { currentBuildId }),
      ...(rampingBuildId && { rampingBuildId, rampPercentage: routing?.rampingVersionPercentage ?? 0 }),
      versions: (info.versionSummaries ?? []).map((v) => ({
        buildId: v.deploymentVersion?.buildId ?? '',
        status: statusNames[v.status ?? 0] ?? 'unknown',
        ...(v.createTime ? { createdAt: timestamp(v.createTime) } : {}),
      })),
      ...(conflictToken && conflictToken.length > 0 ? { conflictToken } : {}),
    };
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Every new workflow of the deployment's task queues goes to this version from now on. */
export async function setCurrentVersion(
  service: WorkflowService,
  namespace: string,
  version: WorkerDeployment,
  { identity, conflictToken }: { identity: string; conflictToken?: Uint8Array },
): Promise<void> {
  await service.setWorkerDeploymentCurrentVersion({
    namespace,
    deploymentName: version.deploymentName,
    buildId: version.buildId,
    identity,
    ...(conflictToken && { conflictToken }),
  });
}

/** This share (0–100) of new workflows goes to the version; 0 keeps it ramping with none. */
export async function setRampingVersion(
  service: WorkflowService,
  namespace: string,
  version: WorkerDeployment,
  percentage: number,
  { identity }: { identity: string },
): Promise<void> {
  await service.setWorkerDeploymentRampingVersion({
    namespace,
    deploymentName: version.deploymentName,
    buildId: version.buildId,
    percentage,
    identity,
  });
}

/**
 * Waits until the server has registered the version with every one of these task queues: a
 * version made current before all its queues are polled would route those queues elsewhere.
 */
export async function waitForVersion(
  service: WorkflowService,
  namespace: string,
  version: WorkerDeployment,
  { taskQueues, timeoutMs = 60_000 }: { taskQueues: string[]; timeoutMs?: number },
): Promise<VersionState> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 100; ; pause = Math.min(pause * 2, 1_000)) {
    const state = await describeVersion(service, namespace, version);
    if (state && taskQueues.every((q) => state.taskQueues.includes(q))) return state;
    if (Date.now() > deadline) {
      throw new Error(
        `worker deployment version ${version.deploymentName}/${version.buildId} not registered with ` +
          `${taskQueues.join(', ')} within ${timeoutMs} ms (seen: ${state?.taskQueues.join(', ') ?? 'none'})`,
      );
    }
    await sleep(pause);
  }
}

/**
 * A deployment's first version: made current once its task queues are polled, when the deployment
 * has no current version yet, so a new deployment (and every dev or test stack) runs without a
 * deployer's step. Never over an existing current version: a later build waits to be ramped or
 * made current by a deploy (`npm run deploy`).
 */
export async function makeCurrentIfFirst(
  service: WorkflowService,
  namespace: string,
  version: WorkerDeployment,
  { taskQueues, identity, timeoutMs }: { taskQueues: string[]; identity: string; timeoutMs?: number },
): Promise<'made-current' | 'already-current' | 'another-is-current'> {
  await waitForVersion(service, namespace, version, { taskQueues, ...(timeoutMs && { timeoutMs }) });
  const deployment = await describeDeployment(service, namespace, version.deploymentName);
  if (deployment?.currentBuildId === version.buildId) return 'already-current';
  if (deployment?.currentBuildId) return 'another-is-current';
  try {
    await setCurrentVersion(service, namespace, version, {
      identity,
      ...(deployment?.conflictToken && { conflictToken: deployment.conflictToken }),
    });
    return 'made-current';
  } catch (err) {
    // Another worker of the same first deploy got there first (the conflict token changed).
    const now = await describeDeployment(service, namespace, version.deploymentName);
    if (now?.currentBuildId === version.buildId) return 'already-current';
    if (now?.currentBuildId) return 'another-is-current';
    throw err;
  }
}

/** Makes the version current once its task queues are polled, whatever was current before. */
export async function makeCurrent(
  service: WorkflowService,
  namespace: string,
  version: WorkerDeployment,
  { taskQueues, identity, timeoutMs }: { taskQueues: string[]; identity: string; timeoutMs?: number },
): Promise<'made-current' | 'already-current'> {
  await waitForVersion(service, namespace, version, { taskQueues, ...(timeoutMs && { timeoutMs }) });
  const deployment = await describeDeployment(service, namespace, version.deploymentName);
  if (deployment?.currentBuildId === version.buildId) return 'already-current';
  await setCurrentVersion(service, namespace, version, { identity });
  return 'made-current';
}
