/**
 * The worker's Worker Deployment version, as Temporal routes it: made current on the first deploy
 * (WORKER_MAKE_CURRENT=first, when the deployment has no current version yet; `always` at every
 * start, as the dev stack asks), then read every minute into the log (on change) and the
 * `topup_worker_version_state` gauge, so a deployer sees an old version go from current to
 * draining to drained (docs/deployers.md "Deploying a new version") on each worker's /metrics.
 */
import type { Logger, MetricMeter } from '@temporalio/common';
import { metricCatalog } from '../../contract/metrics';
import {
  bootstrapCurrentVersion,
  describeVersion,
  setCurrentVersion,
  versionName,
  waitForVersion,
  type DeploymentServices,
  type VersionStatus,
} from '../temporal';
import type { WorkerDeployment } from './worker';

/** How often the state is read: a deploy's moves are minutes apart, and Temporal's drainage check is too. */
const READ_INTERVAL_MS = 60_000;
/** How long the bootstrap waits for the worker's task queues to show as polled. */
const BOOTSTRAP_TIMEOUT_MS = 120_000;

export type VersionState = VersionStatus | 'unregistered';
const states: VersionState[] = ['current', 'ramping', 'draining', 'drained', 'inactive', 'unregistered'];

export function startVersionReports(
  connection: DeploymentServices,
  namespace: string,
  deployment: WorkerDeployment,
  options: {
    makeCurrent: 'first' | 'always' | 'never';
    taskQueues: string[];
    logger: Logger;
    meter?: MetricMeter | undefined;
  },
): { stop(): Promise<void> } {
  const { logger } = options;
  const definition = metricCatalog.workerVersionState;
  const gauge = options.meter?.createGauge(definition.name, 'int', '', definition.help);
  const version = versionName(deployment);
  let last: VersionState | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;

  const report = async () => {
    const state: VersionState =
      (await describeVersion(connection, namespace, deployment))?.status ?? 'unregistered';
    for (const s of states) {
      gauge?.set(s === state ? 1 : 0, {
        deployment: deployment.deploymentName,
        build_id: deployment.buildId,
        state: s,
      });
    }
    if (state !== last) logger.info('worker version state', { version, state });
    last = state;
  };
  const loop = async () => {
    if (options.makeCurrent === 'always') {
      try {
        await waitForVersion(connection, namespace, deployment, {
          taskQueues: options.taskQueues,
          timeoutMs: BOOTSTRAP_TIMEOUT_MS,
        });
        const { previousBuildId } = await setCurrentVersion(connection, namespace, deployment, {
          identity: `worker ${version}`,
        });
        logger.info('this version made current', { version, previous: previousBuildId ?? 'none' });
      } catch (err) {
        logger.warn('version not made current', { version, error: String(err) });
      }
    } else if (options.makeCurrent === 'first') {
      try {
        const outcome = await bootstrapCurrentVersion(connection, namespace, deployment, {
          taskQueues: options.taskQueues,
          timeoutMs: BOOTSTRAP_TIMEOUT_MS,
        });
        if (outcome === 'made-current') logger.info('first deploy: this version made current', { version });
        else if (typeof outcome === 'object') {
          logger.info(
            'another version is current: this one waits to be ramped or made current (npm run deploy)',
            {
              version,
              current: outcome.current,
            },
          );
        }
      } catch (err) {
        logger.warn('version not made current', { version, error: String(err) });
      }
    }
    while (!stopped) {
      await report().catch((err: unknown) => logger.warn('worker version not read', { error: String(err) }));
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, READ_INTERVAL_MS);
      });
    }
  };
  const running = loop();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      wake?.();
      // An unfinished bootstrap wait must not hold a shutdown.
      await Promise.race([running, new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    },
  };
}
