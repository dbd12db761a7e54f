/**
 * The rainbow deploy's figures (rainbow-deploy.ts), its verdict and its text: apart from the run
 * itself so the verdict can be tested on made-up figures (test/scripts/rainbow-verdict.test.ts).
 */
import type { VersionDescription } from '../../src/temporal/deployments';

export type Phase = 'sending' | 'polling' | 'held' | 'queued' | 'review' | 'watching' | 'final';

export interface RainbowBuildFigures {
  buildId: string;
  /** Orders whose first workflow task this build completed. */
  started: number;
  /** Orders whose last run this build ran. */
  finished: number;
  /** Runs this build ran (a continue-as-new onto it is a run). */
  runs: number;
}

export interface SwitchFigures {
  /** The version that stops taking new orders, and the one that takes them all. */
  from: string;
  to: string;
  /** Orders pinned to `from` (or not yet pinned) at the switch, by phase. */
  phases: Partial<Record<Phase, number>>;
  /** Of those in an active phase (sending, polling), how many had a workflow task completed by another build. */
  activeMoved: number;
  /** Of those in a long wait, how many ended on `to` (moved at a wake-up). */
  longWaitMoved: number;
  longWaits: number;
  /** From the switch until Temporal reported `from` drained; undefined if it did not within the bound. */
  drainedAfterMs?: number;
  /** Drainage as last described. */
  drainage?: VersionDescription['drainage'] | undefined;
  status?: VersionDescription['status'] | undefined;
  /** Orders of ours whose open run was still on `from` when Temporal reported it drained. */
  openOnDrained: number;
}

export interface RainbowDeploySummary {
  deploymentName: string;
  taskQueue: string;
  orders: number;
  builds: { v1: RainbowBuildFigures; v2: RainbowBuildFigures };
  /** Started while v2 ramped at RAMP_PERCENT: how many on each build. */
  ramp: { percent: number; orders: number; onV2: number };
  rollout: SwitchFigures;
  rollback: SwitchFigures & { orders: number; lost: number };
  nondeterminismErrors: number;
  workflowTaskFailures: number;
  /** Not final at the end (after every review was decided). */
  lost: number;
  /** Refs the sandbox accepted more than one send for, plus gift-card placements beyond the orders. */
  sentTwice: number;
  /** Runs whose workflow tasks two builds completed: a pinned run that moved. */
  mixedRuns: number;
  finalStatuses: Record<string, number>;
  durationMs: number;
}

/** What fails the tier: one line per broken promise of the deploy. */
export function rainbowProblems(s: RainbowDeploySummary): string[] {
  const problems: string[] = [];
  if (s.nondeterminismErrors > 0) problems.push(`${s.nondeterminismErrors} non-determinism errors`);
  if (s.lost > 0) problems.push(`${s.lost} orders lost (not final at the end)`);
  if (s.sentTwice > 0) problems.push(`${s.sentTwice} orders sent twice`);
  if (s.mixedRuns > 0) problems.push(`${s.mixedRuns} runs had workflow tasks completed by two builds`);
  for (const [name, sw] of [
    ['rollout', s.rollout],
    ['rollback', s.rollback],
  ] as const) {
    if (sw.activeMoved > 0)
      problems.push(
        `${name}: ${sw.activeMoved} active-phase orders of ${sw.from} had a task completed by ${sw.to}`,
      );
    if (sw.drainedAfterMs === undefined)
      problems.push(
        `${name}: ${sw.from} not drained (status ${sw.status ?? '?'}, drainage ${sw.drainage?.status ?? '?'})`,
      );
    if (sw.openOnDrained > 0)
      problems.push(`${name}: ${sw.from} reported drained while ${sw.openOnDrained} orders still ran on it`);
  }
  return problems;
}

export function formatRainbowDeploy(s: RainbowDeploySummary): string {
  const phases = (p: SwitchFigures['phases']) =>
    Object.entries(p)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
  const drained = (sw: SwitchFigures) =>
    sw.drainedAfterMs === undefined
      ? 'NOT drained'
      : `drained ${(sw.drainedAfterMs / 1000).toFixed(1)} s after the switch`;
  return [
    `rainbow deploy (${s.deploymentName}): ${s.orders} orders in ${(s.durationMs / 1000).toFixed(0)} s`,
    `  v1 ${s.builds.v1.buildId}: started ${s.builds.v1.started}, finished ${s.builds.v1.finished}, ${s.builds.v1.runs} runs; ` +
      `v2 ${s.builds.v2.buildId}: started ${s.builds.v2.started}, finished ${s.builds.v2.finished}, ${s.builds.v2.runs} runs`,
    `  ramp ${s.ramp.percent} %: ${s.ramp.onV2} of ${s.ramp.orders} new orders on v2`,
    `  v2 current: v1 held ${phases(s.rollout.phases)}; active moved ${s.rollout.activeMoved}; ` +
      `long waits moved to v2 ${s.rollout.longWaitMoved} of ${s.rollout.longWaits}; v1 ${drained(s.rollout)}`,
    `  rollback (v1 current again): v2 held ${phases(s.rollback.phases)}; active moved ${s.rollback.activeMoved}; ` +
      `long waits moved to v1 ${s.rollback.longWaitMoved} of ${s.rollback.longWaits}; v2 ${drained(s.rollback)}; ` +
      `${s.rollback.lost} of ${s.rollback.orders} lost`,
    `  non-determinism errors ${s.nondeterminismErrors} (workflow task failures ${s.workflowTaskFailures}); ` +
      `lost ${s.lost}; sent twice ${s.sentTwice}; runs completed by two builds ${s.mixedRuns}`,
    `  final: ${Object.entries(s.finalStatuses)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  ].join('\n');
}
