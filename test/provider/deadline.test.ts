import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { deadline } from '../../src/provider/deadline';

describe('provider call deadline signal', () => {
  it('fires at the deadline with a TimeoutError', async () => {
    const { signal } = deadline(50, 'too late');
    assert.equal(signal.aborted, false);
    await sleep(100);
    assert.equal(signal.aborted, true);
    assert.equal((signal.reason as DOMException).name, 'TimeoutError');
  });

  it('fires at once when no time is left', () => {
    assert.equal(deadline(0, 'too late').signal.aborted, true);
    assert.equal(deadline(-5, 'too late').signal.aborted, true);
  });

  it('fires with the other signal, with its reason, and at once if it already fired', () => {
    const other = new AbortController();
    const { signal } = deadline(60_000, 'too late', other.signal);
    other.abort(new Error('cancelled'));
    assert.equal(signal.aborted, true);
    assert.equal((signal.reason as Error).message, 'cancelled');
    assert.equal(deadline(60_000, 'too late', other.signal).signal.aborted, true);
  });

  it('once cleared, neither the timer nor the other signal fires it', async () => {
    const other = new AbortController();
    const guard = deadline(30, 'too late', other.signal);
    guard.clear();
    other.abort();
    await sleep(60);
    assert.equal(guard.signal.aborted, false);
  });
});
