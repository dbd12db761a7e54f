/**
 * Where the workers' Worker Deployment stands, for /readyz (docs/deployers.md "Deploying a new
 * version"): the current build, the one ramping and its share, and each version's status (a
 * draining build still runs the orders pinned to it; a drained one may be retired). Not a
 * readiness check: the API takes orders whichever build runs them. One describe shared for `TTL_MS`.
 */
import type { Client } from '@temporalio/client';
import { describeDeployment, type VersionStatus } from '../temporal';

export interface DeploymentStatus {
  name: string;
  /** `unknown`: not read (Temporal did not answer); `none`: no worker of it has polled yet. */
  state: 'known' | 'none' | 'unknown';
  current?: string;
  ramping?: { buildId: string; percentage: number };
  versions?: { buildId: string; status: VersionStatus }[];
}

const TTL_MS = 10_000;

export function deploymentStatus(deps: {
  client: Client;
  deploymentName: string;
  timeoutMs: number;
  now: () => number;
}): () => Promise<DeploymentStatus> {
  const name = deps.deploymentName;
  let cached: { at: number; status: Promise<DeploymentStatus> } | undefined;
  const fresh = async (): Promise<DeploymentStatus> => {
    try {
      const deployment = await deps.client.withDeadline(Date.now() + deps.timeoutMs, () =>
        describeDeployment(deps.client, deps.client.options.namespace, name),
      );
      if (!deployment) return { name, state: 'none' };
      return {
        name,
        state: 'known',
        ...(deployment.currentBuildId && { current: deployment.currentBuildId }),
        ...(deployment.ramping && { ramping: deployment.ramping }),
        versions: deployment.versions.map(({ buildId, status }) => ({ buildId, status })),
      };
    } catch {
      return { name, state: 'unknown' };
    }
  };
  return () => {
    if (!cached || deps.now() - cached.at >= TTL_MS) cached = { at: deps.now(), status: fresh() };
    return cached.status;
  };
}
