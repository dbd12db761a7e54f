/** The send gate's cached readings (src/provider-account/account.activities.ts): shared, kept for their age, failures not kept. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cachedReading } from '../../src/provider-account/account.activities';

describe('cachedReading', () => {
  it('reads once per max age, concurrent callers sharing the read', async () => {
    let reads = 0;
    const reading = cachedReading(async () => ++reads, 60_000);
    assert.deepEqual(await Promise.all([reading.get(), reading.get()]), [1, 1]);
    assert.equal(await reading.get(), 1);
    assert.equal(reads, 1);
  });

  it('does not keep a failed read: the next caller reads again', async () => {
    let reads = 0;
    const reading = cachedReading(async () => {
      reads += 1;
      if (reads === 1) throw new Error('timed out');
      return 'plans';
    }, 60_000);
    assert.equal(await reading.get(), undefined, 'a failed read opens the gate for this caller');
    assert.equal(await reading.get(), 'plans', 'and is asked again by the next');
    assert.equal(reads, 2);
  });
});
