/**
 * The fair start gate alone (src/orders/start-gate.ts): the cap, the order slots are handed out in
 * (singles first, round-robin by client, arrival order within a client), and a wait that ends
 * without a slot (out of time, caller gone) leaving the queue without running.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../src/config';
import { FairStartGate, StartNotRun, type StartKind } from '../../src/orders/start-gate';

const long = { waitMs: 60_000 };

/** Queues starts that each record their name when they run and then hold their slot until freed. */
function harness(capacity: number) {
  const gate = new FairStartGate(capacity);
  const ran: string[] = [];
  const holds = new Map<string, () => void>();
  const start = (
    client: string,
    kind: StartKind,
    name: string,
    wait: { waitMs: number; signal?: AbortSignal } = long,
  ) =>
    gate.run(client, kind, wait, async () => {
      ran.push(name);
      await new Promise<void>((resolve) => holds.set(name, resolve));
      return name;
    });
  const free = async (name: string) => {
    holds.get(name)!();
    await sleep(0);
  };
  return { gate, ran, start, free };
}

describe('FairStartGate', () => {
  it('runs at most `capacity` starts at once; a freed slot goes to the next', async () => {
    const { gate, ran, start, free } = harness(2);
    const all = ['a', 'b', 'c', 'd'].map((n) => start('x', 'batch', n));
    await sleep(0);
    assert.deepEqual(ran, ['a', 'b']);
    assert.equal(gate.inFlight, 2);
    assert.equal(gate.waiting, 2);
    await free('a');
    assert.deepEqual(ran, ['a', 'b', 'c']);
    await free('b');
    await free('c');
    await free('d');
    assert.deepEqual(await Promise.all(all), ['a', 'b', 'c', 'd']);
    assert.equal(gate.inFlight, 0);
    assert.equal(gate.waiting, 0);
  });

  it('hands slots round-robin by client: 3 items of a late client are not behind 100 of another', async () => {
    const { ran, start, free } = harness(1);
    const flood = Array.from({ length: 100 }, (_, i) => start('flooder', 'batch', `f${i}`));
    const other = [0, 1, 2].map((i) => start('other', 'batch', `o${i}`));
    await sleep(0);
    for (let i = 0; i < 7; i++) await free(ran.at(-1)!);
    // f0 held the slot first; then one of each in turn.
    assert.deepEqual(ran, ['f0', 'f1', 'o0', 'f2', 'o1', 'f3', 'o2', 'f4']);
    while (ran.length < 103) await free(ran.at(-1)!);
    await free(ran.at(-1)!);
    await Promise.all([...flood, ...other]);
  });

  it('gives a free slot to a waiting single order before any batch item, whoever sent it', async () => {
    const { ran, start, free } = harness(1);
    const items = [0, 1, 2].map((i) => start('flooder', 'batch', `b${i}`));
    await sleep(0);
    const singles = [start('other', 'single', 's0'), start('flooder', 'single', 's1')];
    await sleep(0);
    for (let i = 0; i < 5; i++) await free(ran.at(-1)!);
    assert.deepEqual(ran, ['b0', 's0', 's1', 'b1', 'b2']);
    await Promise.all([...items, ...singles]);
  });

  it('a start that found no slot in time leaves the queue without running (StartNotRun timeout)', async () => {
    const { gate, ran, start, free } = harness(1);
    const first = start('x', 'batch', 'first');
    await sleep(0);
    const late = start('y', 'batch', 'late', { waitMs: 20 });
    await assert.rejects(late, (err: unknown) => err instanceof StartNotRun && err.reason === 'timeout');
    assert.equal(gate.waiting, 0);
    await free('first');
    assert.deepEqual(ran, ['first']);
    assert.equal(await first, 'first');
    // No wait at all with no slot free: refused at once.
    const holder = start('x', 'batch', 'holder');
    await sleep(0);
    await assert.rejects(start('y', 'single', 'never', { waitMs: 0 }), StartNotRun);
    await free('holder');
    await holder;
    assert.deepEqual(ran, ['first', 'holder']);
  });

  it('a start whose caller is gone leaves the queue without running (StartNotRun aborted)', async () => {
    const { gate, ran, start, free } = harness(1);
    const first = start('x', 'batch', 'first');
    await sleep(0);
    const caller = new AbortController();
    const gone = start('y', 'batch', 'gone', { waitMs: 60_000, signal: caller.signal });
    const next = start('z', 'batch', 'next');
    await sleep(0);
    caller.abort();
    await assert.rejects(gone, (err: unknown) => err instanceof StartNotRun && err.reason === 'aborted');
    assert.equal(gate.waiting, 1);
    await free('first');
    await free('next');
    await Promise.all([first, next]);
    assert.deepEqual(ran, ['first', 'next']);
    // Already gone before asking: never queued.
    await assert.rejects(
      start('y', 'batch', 'never', { waitMs: 60_000, signal: caller.signal }),
      StartNotRun,
    );
  });

  it('frees the slot of a start that failed', async () => {
    const gate = new FairStartGate(1);
    await assert.rejects(
      gate.run('x', 'single', long, () => Promise.reject(new Error('refused'))),
      /refused/,
    );
    assert.equal(gate.inFlight, 0);
    assert.equal(await gate.run('x', 'single', long, () => Promise.resolve('ok')), 'ok');
  });

  // Issue 34: Temporal serves its calls first come, first served (priority and fairness order its
  // task queues only), so each flood start in flight is one more call ahead of another client's
  // order at Temporal. Counted, not timed: how many of the flood's starts are running when the
  // other client's start runs.
  it('with the default API_START_CONCURRENCY, another client’s start has at most 3 of a flood’s starts ahead of it at Temporal', async () => {
    const capacity = loadConfig({}).API_START_CONCURRENCY;
    const { ran, start, free } = harness(capacity);
    const flood = Array.from({ length: 200 }, (_, i) => start('flooder', 'batch', `f${i}`));
    await sleep(0);
    const freed = new Set<string>();
    const aheadOf = async (name: string, run: Promise<string>) => {
      // The flood's starts finish in the order they began, until the other client's runs.
      for (const f of ran) {
        if (ran.includes(name)) break;
        if (!freed.has(f)) {
          freed.add(f);
          await free(f);
        }
      }
      const ahead = ran.slice(0, ran.indexOf(name)).filter((f) => !freed.has(f)).length;
      freed.add(name);
      await free(name);
      await run;
      return ahead;
    };
    assert.equal(await aheadOf('single', start('other', 'single', 'single')), capacity - 1);
    assert.equal(await aheadOf('item', start('other', 'batch', 'item')), capacity - 1);
    assert.ok(
      capacity - 1 <= 3,
      `${capacity - 1} of the flood's starts in flight at Temporal ahead of the other client's start`,
    );
    // The rest of the flood runs out.
    while (freed.size < ran.length || ran.length < 202) {
      for (const f of [...ran]) {
        if (freed.has(f)) continue;
        freed.add(f);
        await free(f);
      }
    }
    await Promise.all(flood);
  });
});
