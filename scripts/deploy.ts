/**
 * `npm run deploy -- <command>`: the routing steps of a worker deploy (docs/deployers.md "Deploying
 * a new version"), on the Worker Deployment the workers join (WORKER_DEPLOYMENT_NAME, else
 * TEMPORAL_TASK_QUEUE), at TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE. Each routing command also prints
 * the `temporal worker deployment …` command that does the same, for those who prefer the CLI.
 */
import { Client, Connection } from '@temporalio/client';
import { ConfigError, loadConfig } from '../src/config';
import { temporalConnectionOptions } from '../src/temporal/connection';
import {
  describeDeployment,
  describeVersion,
  setCurrentVersion,
  setRampingVersion,
  type WorkerDeployment,
} from '../src/temporal/deployments';

const USAGE = `Usage: npm run deploy -- <command>

  status                     the current build, the ramping one, and every build's status
  ramp <build-id> <percent>  send this share (0-100) of new orders to a started build
  current <build-id>         make a build current: every new order starts on it
  drainage <build-id>        a build's status: draining (orders still pinned to it) or drained
  rollback                   make the newest build before the current one current again

Orders run to their end on the build that started them, so only new orders move.`;

class UsageError extends Error {}

async function main(args: string[]): Promise<void> {
  const config = loadConfig();
  const deploymentName = config.WORKER_DEPLOYMENT_NAME ?? config.TEMPORAL_TASK_QUEUE;
  const namespace = config.TEMPORAL_NAMESPACE;
  const connection = await Connection.connect(temporalConnectionOptions(config));
  const client = new Client({ connection, namespace });
  const service = client.workflowService;
  const identity = `npm run deploy (${process.env.USER ?? 'deployer'})`;
  const version = (buildId: string | undefined): WorkerDeployment => {
    if (!buildId) throw new UsageError('a build ID is needed');
    return { deploymentName, buildId };
  };
  const cli = (rest: string) =>
    console.error(
      `(CLI: temporal worker deployment ${rest} --deployment-name ${deploymentName} --namespace ${namespace})`,
    );
  try {
    const [command, buildId, percent] = args;
    switch (command) {
      case 'status': {
        const deployment = await describeDeployment(service, namespace, deploymentName);
        console.log(
          JSON.stringify({ deployment: deploymentName, ...deployment, conflictToken: undefined }, null, 2),
        );
        break;
      }
      case 'ramp': {
        const percentage = Number(percent);
        if (!Number.isFinite(percentage) || percentage < 0 || percentage > 100)
          throw new UsageError('the percentage is a number from 0 to 100');
        await setRampingVersion(service, namespace, version(buildId), percentage, { identity });
        cli(`set-ramping-version --build-id ${buildId} --percentage ${percentage}`);
        console.log(`${buildId} takes ${percentage} % of new orders`);
        break;
      }
      case 'current':
        await setCurrentVersion(service, namespace, version(buildId), { identity });
        cli(`set-current-version --build-id ${buildId}`);
        console.log(`${buildId} is current: new orders start on it`);
        break;
      case 'drainage': {
        const state = await describeVersion(service, namespace, version(buildId));
        console.log(JSON.stringify({ buildId, ...state }, null, 2));
        cli(`describe-version --build-id ${buildId}`);
        break;
      }
      case 'rollback': {
        const deployment = await describeDeployment(service, namespace, deploymentName);
        const current = deployment?.currentBuildId;
        const previous = deployment?.versions
          .filter((v) => v.buildId !== current && v.status !== 'inactive')
          .sort((a, b) => (b.createdAt?.getTime() ?? 0) - (a.createdAt?.getTime() ?? 0))[0];
        if (!previous) throw new UsageError(`no earlier build of ${deploymentName} to roll back to`);
        await setCurrentVersion(service, namespace, version(previous.buildId), { identity });
        cli(`set-current-version --build-id ${previous.buildId}`);
        console.log(`${previous.buildId} is current again (was ${current ?? 'none'})`);
        break;
      }
      default:
        throw new UsageError(command ? `unknown command ${command}` : 'a command is needed');
    }
  } finally {
    await connection.close();
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError) console.error(`${err.message}\n\n${USAGE}`);
  else if (err instanceof ConfigError) console.error(err.message);
  else console.error(err);
  process.exit(err instanceof UsageError ? 2 : 1);
});
