/**
 * The worker's own version in its Worker Deployment, in the background: on the deployment's first
 * deploy (or at every start, as a dev stack asks) it makes its build current (WORKER_MAKE_CURRENT), then it reads where its version
 * stands (current, ramping, draining, drained, inactive) every REPORT_EVERY_MS, logs each change
 * and sets the gauge `topup_worker_deployment_version{deployment,build_id,status}` to 1 for its
 * status (0 for the one before), so a deployer sees on the metrics when an old build has drained.
 */
import type { MetricMeter } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import {
  describeVersion,
  makeCurrent,
  makeCurrentIfFirst,
  type VersionStatus,
  type WorkerDeployment,
} from '../temporal/deployments';

/** Drainage itself is refreshed by the server every few minutes: a faster read shows nothing new. */
const REPORT_EVERY_MS = 30_000;

export const DEPLOYMENT_VERSION_GAUGE = 'topup_worker_deployment_version';

interface ReportLog {
  info(message: string, attributes?: Record<string, unknown>): void;
  warn(message: string, attributes?: Record<string, unknown>): void;
}

export function startDeploymentReports(
  client: Client,
  deployment: WorkerDeployment,
  options: {
    taskQueues: string[];
    makeCurrent: 'first' | 'always' | 'never';
    log: ReportLog;
    meter?: MetricMeter;
    everyMs?: number;
  },
): { stop(): void } {
  const { log, meter } = options;
  const gauge = meter?.createGauge(
    DEPLOYMENT_VERSION_GAUGE,
    'int',
    '',
    "1 for this worker's version's routing status in its Worker Deployment",
  );
  const labels = { deployment: deployment.deploymentName, build_id: deployment.buildId };
  const service = client.workflowService;
  const namespace = client.options.namespace;
  let last: VersionStatus | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const report = async () => {
    const state = await describeVersion(service, namespace, deployment);
    const status = state?.status ?? 'unknown';
    if (status === last) return;
    if (last) gauge?.set(0, { ...labels, status: last });
    gauge?.set(1, { ...labels, status });
    log.info('worker deployment version', { ...deployment, status, previous: last ?? null });
    last = status;
  };
  const round = async () => {
    try {
      await report();
    } catch (err) {
      log.warn('worker deployment version not read', { failure: String(err) });
    }
    if (!stopped) timer = setTimeout(() => void round(), options.everyMs ?? REPORT_EVERY_MS).unref();
  };
  const start = async () => {
    if (options.makeCurrent !== 'never') {
      try {
        const identity = `worker ${deployment.buildId}`;
        const { taskQueues } = options;
        const outcome =
          options.makeCurrent === 'always'
            ? await makeCurrent(service, namespace, deployment, { taskQueues, identity })
            : await makeCurrentIfFirst(service, namespace, deployment, { taskQueues, identity });
        log.info('worker deployment: routing at start', { ...deployment, outcome });
      } catch (err) {
        log.warn('worker deployment: could not make the first version current', {
          ...deployment,
          failure: String(err),
        });
      }
    }
    await round();
  };
  void start();
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
