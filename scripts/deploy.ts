/**
 * `npm run deploy -- <command>`: the moves of a versioned deploy (docs/deployers.md "Deploying a
 * new version"), on the deployment WORKER_DEPLOYMENT_NAME of TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE.
 * Thin wrappers on src/temporal/deployments.ts; each prints the equivalent `temporal` command.
 *
 *   status                   current and ramping builds, each version's state and drainage
 *   ramp <buildId> <percent> send that share of new orders to the build (0 ends a ramp's share)
 *   current <buildId>        make the build current: every new order starts on it
 *   drainage <buildId>       the build's state: draining while orders pinned to it run, then drained
 *   rollback                 make the build that was current before the current one current again
 */
import { Connection } from '@temporalio/client';
import { loadConfig } from '../src/config';
import { temporalConnectionOptions } from '../src/temporal/connection';
import {
  describeDeployment,
  describeVersion,
  setCurrentVersion,
  setRampingVersion,
  type DeploymentVersion,
} from '../src/temporal/deployments';

async function main(): Promise<number> {
  const config = loadConfig();
  const [command, ...args] = process.argv.slice(2);
  const namespace = config.TEMPORAL_NAMESPACE;
  const deploymentName = config.WORKER_DEPLOYMENT_NAME;
  const version = (buildId: string | undefined): DeploymentVersion => {
    if (!buildId) throw new Error(`${command}: a build ID is needed (npm run deploy -- status lists them)`);
    return { deploymentName, buildId };
  };
  const cli = (line: string) =>
    console.log(
      `  (temporal worker deployment ${line} --namespace ${namespace} --address ${config.TEMPORAL_ADDRESS})`,
    );
  const connection = await Connection.connect(temporalConnectionOptions(config));
  try {
    switch (command) {
      case 'status': {
        const deployment = await describeDeployment(connection, namespace, deploymentName);
        cli(`describe --name ${deploymentName}`);
        if (!deployment) {
          console.log(`deployment ${deploymentName}: none yet (no worker of it has polled)`);
          return 0;
        }
        console.log(`deployment ${deploymentName}: current ${deployment.currentBuildId ?? 'none'}`);
        if (deployment.ramping) {
          console.log(`  ramping ${deployment.ramping.buildId} at ${deployment.ramping.percentage} %`);
        }
        for (const v of deployment.versions) {
          const drainage = v.drainage ? `, ${v.drainage.status}` : '';
          console.log(
            `  ${v.buildId}: ${v.status}${drainage}${v.createdAt ? `, since ${v.createdAt.toISOString()}` : ''}`,
          );
        }
        return 0;
      }
      case 'ramp': {
        const percent = Number(args[1]);
        await setRampingVersion(connection, namespace, version(args[0]), percent);
        cli(
          `set-ramping-version --deployment-name ${deploymentName} --build-id ${args[0]} --percentage ${percent}`,
        );
        console.log(`${args[0]} takes ${percent} % of new orders`);
        return 0;
      }
      case 'current': {
        const { previousBuildId } = await setCurrentVersion(connection, namespace, version(args[0]));
        cli(`set-current-version --deployment-name ${deploymentName} --build-id ${args[0]}`);
        console.log(
          `${args[0]} is current (before: ${previousBuildId ?? 'none'}); follow the old one with: drainage ${previousBuildId ?? '<buildId>'}`,
        );
        return 0;
      }
      case 'drainage': {
        const described = await describeVersion(connection, namespace, version(args[0]));
        cli(`describe-version --deployment-name ${deploymentName} --build-id ${args[0]}`);
        if (!described) {
          console.log(`${args[0]}: unknown to Temporal`);
          return 1;
        }
        const checked = described.drainage?.checkedAt
          ? ` (checked ${described.drainage.checkedAt.toISOString()})`
          : '';
        console.log(
          `${args[0]}: ${described.status}${described.drainage ? `, ${described.drainage.status}${checked}` : ''}`,
        );
        return 0;
      }
      case 'rollback': {
        const deployment = await describeDeployment(connection, namespace, deploymentName);
        const current = deployment?.currentBuildId;
        // The build that stopped being current most recently: the one the current one replaced.
        const previous = deployment?.versions
          .filter((v) => v.buildId !== current && v.lastCurrentAt)
          .sort((a, b) => b.lastCurrentAt!.getTime() - a.lastCurrentAt!.getTime())[0];
        if (!previous) {
          console.log(`deployment ${deploymentName}: no earlier current version to return to`);
          return 1;
        }
        await setCurrentVersion(connection, namespace, version(previous.buildId));
        cli(`set-current-version --deployment-name ${deploymentName} --build-id ${previous.buildId}`);
        console.log(
          `${previous.buildId} is current again (was ${current ?? 'none'}); its workers must be running`,
        );
        return 0;
      }
      default:
        console.error(
          'npm run deploy -- status | ramp <buildId> <percent> | current <buildId> | drainage <buildId> | rollback',
        );
        return 2;
    }
  } finally {
    await connection.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
