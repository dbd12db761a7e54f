/**
 * Worker Deployments, from the client side: what a deployment's versions are doing and the moves
 * a deploy makes (docs/deployers.md "Deploying a new version"). Thin wrappers on Temporal's
 * WorkflowService, shared by the worker (its bootstrap and /readyz state), `npm run deploy`, the
 * tests and the cluster tier's rainbow deploy.
 *
 * Requests name a version by `deploymentName` + `buildId` (server ≥ 1.29 reads those fields; the
 * older `version` string "name.build" is deprecated and left unset: every server we run is 1.32).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Connection } from '@temporalio/client';
import { tsToDate } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { grpcCode, GrpcStatus } from './grpc';

/** A version of a Worker Deployment: the deployment's name and the build's ID. */
export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

/** Where new and running workflows of a version are routed (Temporal's version status). */
export type VersionStatus = 'current' | 'ramping' | 'draining' | 'drained' | 'inactive';

export interface VersionDescription {
  status: VersionStatus;
  /** While ramping: the share of new workflows (0–100) that start on this version. */
  rampPercentage?: number;
  /**
   * Once it is no longer current or ramping: whether pinned workflows still run on it. Temporal
   * checks it every few minutes (`checkedAt`), so `drained` comes some minutes after the last one ended.
   */
  drainage?: { status: 'draining' | 'drained'; changedAt?: Date; checkedAt?: Date };
  /** The task queues its workers have polled (workflow tasks). */
  taskQueues: string[];
  createdAt?: Date;
  currentSince?: Date;
  /** When it last stopped being current: the latest such version is what a rollback returns to. */
  lastCurrentAt?: Date;
}

export interface DeploymentDescription {
  name: string;
  /** The build new workflows start on; none before the first version is made current. */
  currentBuildId?: string;
  ramping?: { buildId: string; percentage: number };
  versions: (Pick<
    VersionDescription,
    'status' | 'drainage' | 'createdAt' | 'currentSince' | 'lastCurrentAt'
  > & {
    buildId: string;
  })[];
  /** Guards a change against a concurrent one (setCurrentVersion's `conflictToken`). */
  conflictToken: Uint8Array;
}

/** Anything with Temporal's WorkflowService: a client `Connection` or the worker's `NativeConnection`. */
export type DeploymentServices = Pick<Connection, 'workflowService'>;

const { WorkerDeploymentVersionStatus: Status, VersionDrainageStatus: Drainage } = temporal.api.enums.v1;
const statusNames: Partial<Record<number, VersionStatus>> = {
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE]: 'inactive',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT]: 'current',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING]: 'ramping',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING]: 'draining',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED]: 'drained',
};
const drainageNames: Partial<Record<number, 'draining' | 'drained'>> = {
  [Drainage.VERSION_DRAINAGE_STATUS_DRAINING]: 'draining',
  [Drainage.VERSION_DRAINAGE_STATUS_DRAINED]: 'drained',
};

/** What `temporal` and Temporal UI call a version: `deploymentName.buildId`. */
export function versionName(version: DeploymentVersion): string {
  return `${version.deploymentName}.${version.buildId}`;
}

/** Who made a routing change, as Temporal records it (`lastModifierIdentity`). */
const DEFAULT_IDENTITY = 'topup-fulfillment deploy';

type Drain = temporal.api.deployment.v1.VersionDrainageInfo.$Properties | null | undefined;
function drainageOf(info: Drain): VersionDescription['drainage'] {
  const status = info?.status ? drainageNames[info.status] : undefined;
  if (!status) return undefined;
  return {
    status,
    ...(info?.lastChangedTime && { changedAt: tsToDate(info.lastChangedTime) }),
    ...(info?.lastCheckedTime && { checkedAt: tsToDate(info.lastCheckedTime) }),
  };
}

/** The version's state; undefined while no worker of it has polled (Temporal does not know it yet). */
export async function describeVersion(
  connection: DeploymentServices,
  namespace: string,
  version: DeploymentVersion,
): Promise<VersionDescription | undefined> {
  let info;
  try {
    ({ workerDeploymentVersionInfo: info } = await connection.workflowService.describeWorkerDeploymentVersion(
      {
        namespace,
        deploymentVersion: version,
      },
    ));
  } catch (err) {
    if (grpcCode(err) === GrpcStatus.NOT_FOUND) return undefined;
    throw err;
  }
  if (!info) return undefined;
  const status = statusNames[info.status ?? 0] ?? 'inactive';
  const drainage = drainageOf(info.drainageInfo);
  return {
    status,
    ...(status === 'ramping' && { rampPercentage: info.rampPercentage ?? 0 }),
    ...(drainage && { drainage }),
    taskQueues: (info.taskQueueInfos ?? [])
      .filter((q) => q.type === temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)
      .map((q) => q.name ?? ''),
    ...(info.createTime && { createdAt: tsToDate(info.createTime) }),
    ...(info.currentSinceTime && { currentSince: tsToDate(info.currentSinceTime) }),
    ...(info.lastCurrentTime && { lastCurrentAt: tsToDate(info.lastCurrentTime) }),
  };
}

/** The deployment's routing and its versions; undefined while it has none (no worker polled yet). */
export async function describeDeployment(
  connection: DeploymentServices,
  namespace: string,
  deploymentName: string,
): Promise<DeploymentDescription | undefined> {
  let response;
  try {
    response = await connection.workflowService.describeWorkerDeployment({ namespace, deploymentName });
  } catch (err) {
    if (grpcCode(err) === GrpcStatus.NOT_FOUND) return undefined;
    throw err;
  }
  const info = response.workerDeploymentInfo;
  const routing = info?.routingConfig;
  const currentBuildId = routing?.currentDeploymentVersion?.buildId || undefined;
  const rampingBuildId = routing?.rampingDeploymentVersion?.buildId || undefined;
  return {
    name: deploymentName,
    ...(currentBuildId && { currentBuildId }),
    ...(rampingBuildId && {
      ramping: { buildId: rampingBuildId, percentage: routing?.rampingVersionPercentage ?? 0 },
    }),
    versions: (info?.versionSummaries ?? []).map((v) => {
      const drainage = drainageOf(v.drainageInfo);
      return {
        buildId: v.deploymentVersion?.buildId ?? '',
        status: statusNames[v.status ?? 0] ?? 'inactive',
        ...(drainage && { drainage }),
        ...(v.createTime && { createdAt: tsToDate(v.createTime) }),
        ...(v.currentSinceTime && { currentSince: tsToDate(v.currentSinceTime) }),
        ...(v.lastCurrentTime && { lastCurrentAt: tsToDate(v.lastCurrentTime) }),
      };
    }),
    conflictToken: response.conflictToken ?? new Uint8Array(),
  };
}

export interface RoutingChangeOptions {
  identity?: string;
  /** From describeDeployment: refused if the routing changed since (a concurrent deploy). */
  conflictToken?: Uint8Array;
}

/**
 * Makes the version current: every new workflow of its task queues starts on it, and it ends a
 * ramp of its own. Pinned workflows of other versions stay where they are. Returns the build that
 * was current before (what a rollback returns to).
 */
export async function setCurrentVersion(
  connection: DeploymentServices,
  namespace: string,
  version: DeploymentVersion,
  options: RoutingChangeOptions = {},
): Promise<{ previousBuildId?: string }> {
  const response = await connection.workflowService.setWorkerDeploymentCurrentVersion({
    namespace,
    deploymentName: version.deploymentName,
    buildId: version.buildId,
    identity: options.identity ?? DEFAULT_IDENTITY,
    ...(options.conflictToken && { conflictToken: options.conflictToken }),
  });
  const previousBuildId = response.previousDeploymentVersion?.buildId || undefined;
  return previousBuildId ? { previousBuildId } : {};
}

/** Sends `percentage` (0–100) of new workflows to the version; the rest start on the current one. */
export async function setRampingVersion(
  connection: DeploymentServices,
  namespace: string,
  version: DeploymentVersion,
  percentage: number,
  options: RoutingChangeOptions = {},
): Promise<void> {
  if (!(percentage >= 0 && percentage <= 100))
    throw new RangeError(`ramp percentage ${percentage}: 0 to 100`);
  await connection.workflowService.setWorkerDeploymentRampingVersion({
    namespace,
    deploymentName: version.deploymentName,
    buildId: version.buildId,
    percentage,
    identity: options.identity ?? DEFAULT_IDENTITY,
    ...(options.conflictToken && { conflictToken: options.conflictToken }),
  });
}

/**
 * Waits until Temporal knows the version with each of `taskQueues` polled by its workers: before
 * that, making it current would route a task queue to a version with nobody polling it (Temporal
 * refuses), and describing it finds nothing.
 */
export async function waitForVersion(
  connection: DeploymentServices,
  namespace: string,
  version: DeploymentVersion,
  { taskQueues, timeoutMs }: { taskQueues: string[]; timeoutMs: number },
): Promise<VersionDescription> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const described = await describeVersion(connection, namespace, version);
    const missing = taskQueues.filter((q) => !described?.taskQueues.includes(q));
    if (described && missing.length === 0) return described;
    if (Date.now() >= until) {
      throw new Error(
        `version ${versionName(version)}: ${described ? `task queues ${missing.join(', ')} not polled` : 'not registered'} after ${timeoutMs} ms`,
      );
    }
    // A poller registers its version within a second or two of its first poll.
    await sleep(200);
  }
}

/**
 * The first deploy: once the version's task queues are polled, makes it current if the deployment
 * has no current version. Never replaces one: later versions are made current by a deployer (or a
 * rainbow deploy), after a ramp if they wish. Two workers racing here both read "none"; the conflict
 * token lets one win and the other read again.
 */
export async function bootstrapCurrentVersion(
  connection: DeploymentServices,
  namespace: string,
  version: DeploymentVersion,
  options: { taskQueues: string[]; timeoutMs: number; identity?: string },
): Promise<'made-current' | 'already-current' | { current: string }> {
  await waitForVersion(connection, namespace, version, options);
  for (let tries = 0; ; tries++) {
    const deployment = await describeDeployment(connection, namespace, version.deploymentName);
    const current = deployment?.currentBuildId;
    if (current === version.buildId) return 'already-current';
    if (current) return { current };
    try {
      await setCurrentVersion(connection, namespace, version, {
        identity: options.identity ?? `worker bootstrap ${versionName(version)}`,
        ...(deployment && { conflictToken: deployment.conflictToken }),
      });
      return 'made-current';
    } catch (err) {
      // Another worker changed the routing first (the conflict token no longer matches): read it again.
      const now = await describeDeployment(connection, namespace, version.deploymentName);
      if (now?.currentBuildId && now.currentBuildId !== current) continue;
      if (tries < 5) continue;
      throw err;
    }
  }
}
