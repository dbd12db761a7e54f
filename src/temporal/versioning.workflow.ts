/**
 * Worker Versioning, on the workflow side (docs/contributors.md "Changing a workflow: a new worker
 * version"). Every workflow type runs PINNED: a run is executed by the build that started it, to
 * its end, so a change to workflow code needs no patch — the old build keeps running its runs.
 * AUTO_UPGRADE would move runs onto code that must replay their histories, which is patching again.
 *
 * Runs that wait long (an order in review, QUEUED, HELD or watched; the provider account's loop;
 * an idle webhook delivery) would hold an old build for days. They move at a wake-up instead: when
 * Temporal tells the run that the deployment's current version is no longer the one it is pinned to,
 * it continues as new with `initialVersioningBehavior: 'AUTO_UPGRADE'`, so the next run starts on
 * the current version (and is PINNED there from its first task). No run executes two builds; the
 * continue-as-new input is then a contract between versions (contract/continued.ts).
 */
import { setWorkflowOptions, workflowInfo, type ContinueAsNewOptions } from '@temporalio/workflow';

/** PINNED, written out for each workflow type so that none takes the worker's default by omission. */
export const pinned = { versioningBehavior: 'PINNED' } as const;

/** Declares a workflow type's versioning behaviour; returns it, for `export const x = pinnedWorkflow(…)`. */
export function pinnedWorkflow<F extends (...args: never[]) => Promise<unknown>>(fn: F): F {
  setWorkflowOptions(pinned, fn as unknown as (...args: unknown[]) => Promise<unknown>);
  return fn;
}

/**
 * The deployment's current (or ramping, for this workflow ID) version is not the one this run is
 * pinned to: a run in a long wait should move. False on an unversioned worker and on replay of a
 * task that did not see it.
 */
export function versionChanged(): boolean {
  return workflowInfo().targetWorkerDeploymentVersionChanged;
}

/** The continue-as-new that lands the next run on the current version, when the version changed. */
export function upgradeOnContinueAsNew(): Pick<ContinueAsNewOptions, 'initialVersioningBehavior'> {
  return versionChanged() ? { initialVersioningBehavior: 'AUTO_UPGRADE' } : {};
}
