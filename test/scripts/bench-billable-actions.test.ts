/** The bench's billable-action count, over recorded order histories (test/fixtures/histories/lifecycle-<N>). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { billableActions, meanActions } from '../../scripts/bench/billable-actions';
import { recordedHistories } from '../helpers/histories';

const histories = new Map(recordedHistories().map(({ name, history }) => [name, history.events ?? []]));
const eventsOf = (name: string) => {
  const events = histories.get(name);
  assert.ok(events, `fixture ${name}`);
  return events;
};

describe('billable actions of a recorded history', () => {
  it('a normal mobile top-up: start, local send, 2 upserts, one polling attempt at the provider’s pace; heartbeats counted as given', () => {
    // Recorded at the provider's pace (one attempt checking every 5 s, no heartbeat before ~40 s).
    assert.deepEqual(billableActions(eventsOf('mobile-fulfilled')), {
      starts: 1,
      activityAttempts: 1,
      heartbeats: 0,
      localActivityTasks: 1,
      timers: 0,
      searchAttributeUpserts: 2,
      signals: 0,
      updates: 0,
      other: 0,
      total: 5,
    });
    // Heartbeats are not in the history: the polling activity's own count is added (PollProgress.heartbeats).
    const withHeartbeat = billableActions(eventsOf('mobile-fulfilled'), { heartbeats: 1 });
    assert.equal(withHeartbeat.heartbeats, 1);
    assert.equal(withHeartbeat.total, 6);
  });

  it('local activities recorded in one workflow task are one action; an accepted update is one', () => {
    // Two announcements in the task that took the decision, after the send's task.
    const actions = billableActions(eventsOf('mobile-review-decided-webhooks'));
    assert.equal(actions.localActivityTasks, 1);
    assert.equal(actions.updates, 1);
    assert.equal(actions.timers, 1);
    assert.equal(actions.starts, 1);
  });

  it('an order in review: each timer, the update, the signal and each check attempt are actions', () => {
    // Review (timer), a decision by update, a second by signal, two re-check timers, three checks.
    assert.deepEqual(billableActions(eventsOf('mobile-review-refused-decision')), {
      starts: 1,
      activityAttempts: 3,
      heartbeats: 0,
      localActivityTasks: 0,
      timers: 3,
      searchAttributeUpserts: 1,
      signals: 1,
      updates: 1,
      other: 0,
      total: 10,
    });
  });

  it('the mean over runs is taken per category', () => {
    const a = billableActions(eventsOf('mobile-review-refused-decision'));
    const b = billableActions(eventsOf('mobile-fulfilled'));
    const mean = meanActions([a, b]);
    assert.equal(mean?.timers, 1.5);
    assert.equal(mean?.total, 7.5);
    assert.equal(meanActions([]), undefined);
  });
});
