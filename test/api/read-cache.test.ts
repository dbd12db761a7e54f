/**
 * The read cache's rules (src/http/read-cache.ts), without Temporal: identical reads in flight share
 * one, an answer is reused only while younger than the TTL counted from its read's start, failures
 * are never kept, a shared read stops only once every caller waiting for it is gone, and it stays
 * bounded. What it serves on the dev server (tenancy, latest runs): test/orders/read-scale.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ReadCache, readKey } from '../../src/http/read-cache';

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('ReadCache', () => {
  it('shares one read among identical reads in flight, and keeps keys apart', async () => {
    const cache = new ReadCache({ ttlMs: 1_000 });
    const gate = deferred<string>();
    let reads = 0;
    const read = () => {
      reads++;
      return gate.promise;
    };
    const answers = Promise.all(Array.from({ length: 20 }, () => cache.get('a', read)));
    const other = cache.get('b', async () => 'b');
    gate.resolve('a');
    assert.deepEqual(await answers, Array(20).fill('a'));
    assert.equal(await other, 'b');
    assert.equal(reads, 1);
    assert.deepEqual(cache.counts, { miss: 2, shared: 19, hit: 0, refresh: 0 });
  });

  it('reuses an answer until the TTL, counted from its read’s start; past half of it, reads the next one ahead', async () => {
    let now = 0;
    const cache = new ReadCache({ ttlMs: 1_000, now: () => now });
    let reads = 0;
    const read = async () => ++reads;
    assert.equal(await cache.get('k', read), 1);
    now = 499;
    assert.equal(await cache.get('k', read), 1);
    assert.equal(reads, 1, 'young: no read');
    now = 500;
    assert.equal(await cache.get('k', read), 1, 'the answer found, while the next is read');
    await Promise.resolve();
    assert.equal(reads, 2);
    now = 1_499;
    assert.equal(await cache.get('k', read), 2, 'the one read ahead, at 500: young enough');
    assert.equal(reads, 3, 'and, past its own half, the next one ahead');
    now = 2_600;
    assert.equal(await cache.get('k', read), 4, 'all expired: a read of its own');
    assert.deepEqual(cache.counts, { miss: 2, shared: 0, hit: 3, refresh: 2 });
  });

  it('never hands out an answer older than the TTL: a slow read ahead is waited for, a stale one not joined', async () => {
    let now = 0;
    const cache = new ReadCache({ ttlMs: 1_000, now: () => now });
    assert.equal(await cache.get('k', async () => 'first'), 'first');
    now = 600;
    const ahead = deferred<string>();
    assert.equal(await cache.get('k', () => ahead.promise), 'first');
    now = 1_100;
    // 'first' (read at 0) expired; the read ahead (started at 600) is young enough: waited for.
    const waiting = cache.get('k', async () => 'unused');
    ahead.resolve('ahead');
    assert.equal(await waiting, 'ahead');
    now = 1_200;
    const stale = deferred<string>();
    assert.equal(await cache.get('k', () => stale.promise), 'ahead', 'past half: a read ahead starts');
    now = 2_300;
    // 'ahead' (600) expired and the read ahead (1,200), still in flight, is too old to join: a read of its own.
    assert.equal(await cache.get('k', async () => 'fresh'), 'fresh');
    stale.resolve('late');
  });

  it('a read in flight past the TTL serves those who wait for it; a later caller reads anew', async () => {
    let now = 0;
    const cache = new ReadCache({ ttlMs: 1_000, now: () => now });
    const slow = deferred<string>();
    const first = cache.get('k', () => slow.promise);
    now = 1_500;
    assert.equal(await cache.get('k', async () => 'fresh'), 'fresh');
    slow.resolve('old');
    assert.equal(await first, 'old');
  });

  it('keeps no failure: every caller of the failed read gets it, the next read asks again', async () => {
    const cache = new ReadCache({ ttlMs: 60_000 });
    const gate = deferred<string>();
    const a = cache.get('k', () => gate.promise);
    const b = cache.get('k', async () => 'unused');
    gate.reject(new Error('visibility said no'));
    await assert.rejects(a, /visibility said no/);
    await assert.rejects(b, /visibility said no/);
    assert.equal(await cache.get('k', async () => 'ok'), 'ok');
  });

  it('a caller that leaves is answered at once; the shared read stops only when the last one leaves', async () => {
    const cache = new ReadCache({ ttlMs: 60_000 });
    let readSignal: AbortSignal | undefined;
    const gate = deferred<string>();
    const read = (signal: AbortSignal) => {
      readSignal = signal;
      signal.addEventListener('abort', () => gate.reject(signal.reason));
      return gate.promise;
    };
    const one = new AbortController();
    const two = new AbortController();
    const first = cache.get('k', read, one.signal);
    const second = cache.get('k', read, two.signal);
    one.abort(new Error('first caller hung up'));
    await assert.rejects(first, /first caller hung up/);
    assert.equal(readSignal?.aborted, false, 'the second caller still waits: the read goes on');
    two.abort(new Error('second caller hung up'));
    await assert.rejects(second, /second caller hung up/);
    assert.equal(readSignal?.aborted, true, 'nobody waits: the read is cancelled');
    // And forgotten: the next caller reads again.
    assert.equal(await cache.get('k', async () => 'again'), 'again');
  });

  it('a caller without a signal keeps the read going whoever else leaves', async () => {
    const cache = new ReadCache({ ttlMs: 60_000 });
    const gate = deferred<string>();
    let readSignal: AbortSignal | undefined;
    const kept = cache.get('k', (signal) => {
      readSignal = signal;
      return gate.promise;
    });
    const leaving = new AbortController();
    const left = cache.get('k', async () => 'unused', leaving.signal);
    leaving.abort(new Error('gone'));
    await assert.rejects(left, /gone/);
    assert.equal(readSignal?.aborted, false);
    gate.resolve('done');
    assert.equal(await kept, 'done');
  });

  it('stays bounded: past maxEntries the oldest answers go', async () => {
    const cache = new ReadCache({ ttlMs: 60_000, maxEntries: 2 });
    let reads = 0;
    const read = async () => ++reads;
    await cache.get('a', read);
    await cache.get('b', read);
    await cache.get('c', read);
    assert.equal(await cache.get('c', read), 3, 'c is kept');
    assert.equal(await cache.get('a', read), 4, 'a was dropped: read again');
  });

  it('ttlMs 0: every read asks, with the caller’s own signal', async () => {
    const cache = new ReadCache({ ttlMs: 0 });
    let reads = 0;
    const controller = new AbortController();
    let seen: AbortSignal | undefined;
    await Promise.all(
      [1, 2, 3].map(() =>
        cache.get(
          'k',
          async (signal) => {
            seen = signal;
            return ++reads;
          },
          controller.signal,
        ),
      ),
    );
    assert.equal(reads, 3);
    assert.equal(seen, controller.signal);
    assert.equal(cache.enabled, false);
  });

  it('readKey keeps parts apart', () => {
    assert.notEqual(readKey('a', 'b c'), readKey('a b', 'c'));
    assert.equal(readKey('list', undefined, 5), 'list\0\x005');
  });
});
