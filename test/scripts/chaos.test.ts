/**
 * The chaos run, short: about 40 orders through the intake API while the provider sandbox
 * misbehaves (a late-commit phase with lagging reads among others, and no atomic ref uniqueness),
 * the account's balance runs out and an operator goes down for a few seconds (orders are held, then
 * resume), two rounds of worker SIGKILLs, one Temporal restart, and the sandbox and the API each SIGKILLed
 * and started again. Nothing may be lost or sent twice, and nothing the provider fulfilled may be
 * reported FAILED or REFUNDED (scripts/chaos/verify.ts lists every check). Its own stack, its own Temporal server (it must restart it); CHAOS_SEED replays another mix.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultChaosOptions } from '../../scripts/chaos/options';
import { runChaos } from '../../scripts/chaos/run';
import { formatSummary } from '../../scripts/chaos/summary';

const seed = Number(process.env.CHAOS_SEED ?? 20_251_121);

test(
  'chaos: orders survive provider faults (late commits too), an empty balance, an operator down, worker kills and restarts of Temporal, the sandbox and the API; none lost, none sent twice, none fulfilled yet reported FAILED or REFUNDED',
  { timeout: 240_000 },
  async (t) => {
    const lines: string[] = [];
    const options = defaultChaosOptions({
      orders: 40,
      concurrency: 6,
      durationMs: 24_000,
      killEveryMs: 8_000,
      maxKills: 2,
      temporalRestarts: 1,
      faultPhaseMs: 2_000,
      settleTimeoutMs: 90_000,
      seed,
    });
    const summary = await runChaos(options, { log: (line) => lines.push(line) });
    if (summary.problems.length > 0) console.error([...lines, formatSummary(summary)].join('\n'));
    t.diagnostic(
      `seed ${seed}: ${summary.submissions.accepted} orders accepted, ${JSON.stringify(summary.byStatus)}, ` +
        `${summary.chaos.workersKilled} workers killed, ${summary.chaos.temporalRestarts} Temporal restart, ` +
        `${summary.chaos.faultPhases['late-commit']} late-commit phase(s), ` +
        `held ${summary.held.balance} for the balance and ${summary.held.operator} for an operator, ` +
        `${Object.values(summary.chaos.faultsInjected).reduce((a, b) => a + b, 0)} requests hit by faults, ${(summary.durationMs / 1000).toFixed(0)} s`,
    );

    assert.equal(summary.lost, 0, 'no accepted order lost');
    assert.equal(summary.sentTwice, 0, 'no ref accepted twice by the provider');
    assert.equal(
      summary.money.reportedFailedOrRefunded,
      0,
      'nothing the provider fulfilled reported FAILED or REFUNDED',
    );
    assert.ok(summary.money.providerFulfilled > 0, 'the money check had fulfilled sends to compare');
    assert.deepEqual(summary.problems, []);
    assert.equal(summary.submissions.accepted, 40);
    assert.equal(summary.chaos.killRounds, 2);
    assert.equal(summary.chaos.temporalRestarts, 1);
    assert.equal(summary.chaos.sandboxRestarts, 1);
    assert.equal(summary.chaos.apiRestarts, 1);
    assert.ok((summary.chaos.faultPhases['late-commit'] ?? 0) >= 1, 'a late-commit phase ran');
    assert.ok((summary.chaos.faultsInjected.late_commit ?? 0) > 0, 'sends were committed late');
    assert.ok((summary.chaos.faultPhases['balance-outage'] ?? 0) >= 1, 'a balance-outage phase ran');
    assert.ok((summary.chaos.faultPhases['operator-down'] ?? 0) >= 1, 'an operator-down phase ran');
    assert.ok(summary.held.balance >= 1, 'orders were held for the balance');
    assert.ok(summary.held.operator >= 1, 'orders were held for an operator down');
  },
);
