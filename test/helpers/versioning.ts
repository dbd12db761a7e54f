/**
 * Versioned test workers: every test stack that starts workers joins a Worker Deployment of its
 * own (tests share one dev server, and a deployment's current version routes every task queue in
 * it), with the build ID of the bundle it runs, and makes that version current once its task
 * queues are polled — as a worker's WORKER_MAKE_CURRENT=first does on a first deploy. Only the
 * time-skipping tier stays unversioned (its server has no deployments).
 */
import { randomUUID } from 'node:crypto';
import { bootstrapCurrentVersion, type DeploymentServices } from '../../src/temporal/deployments';
import { versionedWorkflowCode, type WorkerDeployment, type WorkflowCode } from '../../src/worker/worker';

/** A deployment name no other stack of the run uses. */
export function testDeploymentName(stack: string): string {
  return `${stack.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 40)}-${randomUUID().slice(0, 8)}`;
}

/** The stack's workflow code as one bundle, and the version (a new deployment) its workers join. */
export function versionedTestCode(
  stack: string,
  workflowCode: WorkflowCode,
  buildId?: string,
): Promise<{ workflowCode: WorkflowCode; deployment: WorkerDeployment }> {
  return versionedWorkflowCode(workflowCode, { deploymentName: testDeploymentName(stack), buildId });
}

/** Once its workers poll every one of `taskQueues`, the version is current (the first one of its deployment). */
export async function makeTestVersionCurrent(
  connection: DeploymentServices,
  namespace: string,
  deployment: WorkerDeployment,
  taskQueues: string[],
): Promise<void> {
  const outcome = await bootstrapCurrentVersion(connection, namespace, deployment, {
    taskQueues,
    // A loaded machine registers a poller's version late; a test must not fail on it.
    timeoutMs: 120_000,
    identity: 'test stack',
  });
  if (typeof outcome === 'object') {
    throw new Error(
      `deployment ${deployment.deploymentName}: ${outcome.current} is current, not this stack's build`,
    );
  }
}
