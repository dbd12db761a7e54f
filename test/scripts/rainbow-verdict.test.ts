/**
 * The cluster tier's rainbow-deploy verdict on made-up figures (the run itself needs the tier's
 * PostgreSQL cluster: `npm run test:cluster -- --rainbow-only`): a clean deploy passes, and each
 * broken promise — non-determinism, a lost order, a second send, a pinned run moved, an active
 * order finished on the new version, a version not drained or drained too early — fails it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  formatRainbowDeploy,
  rainbowProblems,
  type RainbowDeploySummary,
  type SwitchFigures,
} from '../../scripts/cluster/rainbow-verdict';

const switched = (from: string, to: string): SwitchFigures => ({
  from,
  to,
  phases: { sending: 3, polling: 15, review: 4, watching: 3, queued: 3, held: 4 },
  activeMoved: 0,
  longWaitMoved: 14,
  longWaits: 14,
  drainedAfterMs: 8_800,
  drainage: { status: 'drained' },
  status: 'drained',
  openOnDrained: 0,
});

function clean(): RainbowDeploySummary {
  return {
    deploymentName: 'rainbow-test',
    taskQueue: 'rainbow-q',
    orders: 67,
    builds: {
      v1: { buildId: 'aaa', started: 35, finished: 24, runs: 40 },
      v2: { buildId: 'bbb', started: 32, finished: 43, runs: 60 },
    },
    ramp: { percent: 10, orders: 20, onV2: 2 },
    rollout: switched('rainbow-test.aaa', 'rainbow-test.bbb'),
    rollback: { ...switched('rainbow-test.bbb', 'rainbow-test.aaa'), orders: 12, lost: 0 },
    nondeterminismErrors: 0,
    workflowTaskFailures: 0,
    lost: 0,
    sentTwice: 0,
    mixedRuns: 0,
    finalStatuses: { FULFILLED: 57, REFUNDED: 10 },
    durationMs: 60_000,
  };
}

describe('the rainbow deploy verdict', () => {
  it('a clean deploy passes, and its text names the drain and the builds', () => {
    assert.deepEqual(rainbowProblems(clean()), []);
    const text = formatRainbowDeploy(clean());
    assert.match(text, /v1 drained 8\.8 s after the switch/);
    assert.match(text, /v1 aaa: started 35/);
  });

  it('fails on each broken promise, naming it', () => {
    const cases: [string, (s: RainbowDeploySummary) => void, RegExp][] = [
      ['non-determinism', (s) => void (s.nondeterminismErrors = 1), /1 non-determinism errors/],
      ['lost', (s) => void (s.lost = 2), /2 orders lost/],
      ['sent twice', (s) => void (s.sentTwice = 1), /1 orders sent twice/],
      [
        'a pinned run moved',
        (s) => void (s.mixedRuns = 1),
        /1 runs had workflow tasks completed by two builds/,
      ],
      [
        'an active order finished on v2',
        (s) => void (s.rollout.activeMoved = 1),
        /rollout: 1 active-phase orders of rainbow-test\.aaa had a task completed by rainbow-test\.bbb/,
      ],
      [
        'v1 not drained',
        (s) => {
          delete s.rollout.drainedAfterMs;
          s.rollout.status = 'draining';
          s.rollout.drainage = { status: 'draining' };
        },
        /rollout: rainbow-test\.aaa not drained \(status draining, drainage draining\)/,
      ],
      [
        'drained with an order still on it',
        (s) => void (s.rollback.openOnDrained = 1),
        /rollback: rainbow-test\.bbb reported drained while 1 orders still ran on it/,
      ],
    ];
    for (const [name, breakIt, expected] of cases) {
      const summary = clean();
      breakIt(summary);
      const problems = rainbowProblems(summary);
      assert.equal(problems.length, 1, `${name}: ${problems.join('; ')}`);
      assert.match(problems[0]!, expected, name);
    }
  });
});
