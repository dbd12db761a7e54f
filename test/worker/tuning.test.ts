import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config';
import { tuningFromConfig } from '../../src/worker/worker';

describe('worker tuning from configuration', () => {
  it('when no provider rate is configured, sets no task-queue activity rate', () => {
    const tuning = tuningFromConfig(loadConfig({}));
    assert.equal(tuning.maxTaskQueueActivitiesPerSecond, undefined);
    assert.equal(tuning.maxConcurrentActivityTaskExecutions, 100);
  });

  it('when WORKER_PROVIDER_CALLS_PER_SECOND is set, caps activities per second across the task queue', () => {
    const tuning = tuningFromConfig(loadConfig({ WORKER_PROVIDER_CALLS_PER_SECOND: '25' }));
    assert.equal(tuning.maxTaskQueueActivitiesPerSecond, 25);
  });

  it('when a value is not a positive number, refuses the configuration naming the variable', () => {
    assert.throws(
      () => loadConfig({ WORKER_PROVIDER_CALLS_PER_SECOND: '-1' }),
      /WORKER_PROVIDER_CALLS_PER_SECOND/,
    );
  });
});
