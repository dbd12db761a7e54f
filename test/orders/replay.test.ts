/**
 * Recorded histories of every outcome and of each long wait (review, queued, held, watch), written
 * by test/tools/record-histories.ts for lifecycle LIFECYCLE_VERSION, replayed against the current
 * workflow code: a change that alters what this lifecycle's orders do fails here. Such a change is
 * a new lifecycle version (a new worker version: orders are pinned to the one that started them),
 * which raises LIFECYCLE_VERSION and records its own fixtures.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  historiesDir,
  LIFECYCLE_VERSION,
  recordedHistories,
  withFirstTaskHeartbeat,
} from '../helpers/histories';
import { installTestRuntime } from '../helpers/orders';
import { workflowCodeOptions } from '../helpers/temporal';

const histories = recordedHistories();

describe(`replay of lifecycle ${LIFECYCLE_VERSION}'s recorded histories`, () => {
  const errors = new Map<string, unknown>();

  before(async () => {
    installTestRuntime();
    const results = Worker.runReplayHistories(
      workflowCodeOptions(),
      histories.map(({ name, history }) => ({ workflowId: `order-${name}`, history })),
    );
    for await (const result of results) errors.set(result.workflowId, result.error);
  });

  it('has a recorded history for every outcome, each long wait, and each way an operator decision can go', () => {
    const names = histories.map((h) => h.name).join(' ');
    for (const outcome of ['fulfilled', 'refunded', 'failed', 'review'])
      assert.match(names, new RegExp(outcome));
    for (const wait of ['review-own-run', 'queued', 'held', 'watch']) assert.match(names, new RegExp(wait));
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
 * Orders whose first workflow task a loaded worker completed by a heartbeat, while the send ran:
 * on replay the SDK reads that task with the second one's history length, so the workflow must not
 * choose between sending and looking up by that length (src/orders/lifecycle/send.workflow.ts submit). A workflow
 * that did replayed a look-up where the history holds the send: "Missing associated machine for
 * LocalActivity(1)", and the order stuck.
 */
describe(`replay of lifecycle ${LIFECYCLE_VERSION}'s orders whose first workflow task was completed by a heartbeat`, () => {
  for (const name of ['mobile-fulfilled', 'gift-card-fulfilled']) {
    it(`replays ${name} with a heartbeat in its first task`, async () => {
      installTestRuntime();
      const json = JSON.parse(readFileSync(join(historiesDir, `${name}.json`), 'utf8')) as Parameters<
        typeof withFirstTaskHeartbeat
      >[0];
      await Worker.runReplayHistory(workflowCodeOptions(), withFirstTaskHeartbeat(json), `order-${name}`);
    });
  }
});
