/**
 * Recorded histories of every outcome (scripts/record-histories.ts writes them) replayed against
 * the current workflow code: a change that would break orders already running fails here, before
 * a deploy.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { historiesDir, recordedHistories, withFirstTaskHeartbeat } from '../helpers/histories';
import { installTestRuntime } from '../helpers/orders';
import { workflowCodeOptions } from '../helpers/temporal';

const histories = recordedHistories();

describe('replay of recorded order histories', () => {
  const errors = new Map<string, unknown>();

  before(async () => {
    installTestRuntime();
    const results = Worker.runReplayHistories(
      workflowCodeOptions(),
      histories.map(({ name, history }) => ({ workflowId: `order-${name}`, history })),
    );
    for await (const result of results) errors.set(result.workflowId, result.error);
  });

  it('has a recorded history for every outcome, and for each way an operator decision can go', () => {
    const names = histories.map((h) => h.name).join(' ');
    for (const outcome of ['fulfilled', 'refunded', 'failed', 'review'])
      assert.match(names, new RegExp(outcome));
    for (const decision of [
      'invalid-decision',
      'refused-decision',
      'applied',
      'disputed',
      'order-id',
      'continued-as-new',
    ])
      assert.match(names, new RegExp(decision));
  });

  for (const { name, history } of histories) {
    it(`replays ${name} (${history.events?.length} events) without non-determinism`, () => {
      assert.ok(errors.has(`order-${name}`), 'replayed');
      assert.equal(errors.get(`order-${name}`), undefined);
    });
  }
});

/**
 * Orders whose first workflow task a loaded worker completed by a heartbeat, while the send ran.
 * Before the first-send-decides patch the workflow chose between sending and looking up by the
 * history's length, which reads longer on such a replay: "Missing associated machine for
 * LocalActivity(1)", and the order stuck (found by the chaos run's account phases).
 */
describe('replay of an order whose first workflow task was completed by a heartbeat', () => {
  for (const name of ['mobile-fulfilled-first-send-decides', 'gift-card-fulfilled-first-send-decides']) {
    it(`replays ${name} with a heartbeat in its first task`, async () => {
      installTestRuntime();
      const json = JSON.parse(readFileSync(join(historiesDir, `${name}.json`), 'utf8')) as Parameters<
        typeof withFirstTaskHeartbeat
      >[0];
      await Worker.runReplayHistory(workflowCodeOptions(), withFirstTaskHeartbeat(json), `order-${name}`);
    });
  }
});
