/** The chaos run's seeded draws: a run replays from its seed, and each concern draws on its own. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Random } from '../../scripts/chaos/random';

/** Every kind of draw the chaos run makes, in one sequence. */
function draws(rng: Random): unknown[] {
  return Array.from({ length: 50 }, (_, i) => [
    rng.next(),
    rng.int(0, i),
    rng.between(5, 10),
    rng.chance(0.3),
    rng.pick(['a', 'b', 'c']),
    rng.subset([1, 2, 3, 4]),
  ]);
}

describe('chaos Random', () => {
  it('replays the same draws from the same seed, and other draws from another', () => {
    assert.deepEqual(draws(new Random(42)), draws(new Random(42)));
    assert.notDeepEqual(draws(new Random(42)), draws(new Random(43)));
  });

  it('keeps each draw in its range and reaches both ends of an integer range', () => {
    const rng = new Random(7);
    const ints = new Set<number>();
    for (let i = 0; i < 2_000; i++) {
      const x = rng.next();
      assert.ok(x >= 0 && x < 1);
      const between = rng.between(-2, 3);
      assert.ok(between >= -2 && between < 3);
      ints.add(rng.int(1, 6));
      const subset = rng.subset(['x', 'y', 'z']);
      assert.ok(subset.length > 0 && subset.every((s, j) => j === 0 || s > subset[j - 1]!));
    }
    assert.deepEqual([...ints].sort(), [1, 2, 3, 4, 5, 6]);
    assert.throws(() => rng.pick([]), RangeError);
  });

  it('gives each fork its own sequence: more draws in one do not shift the next', () => {
    const plan = (extraDraws: number) => {
      const root = new Random(2024);
      const faults = root.fork();
      const orders = root.fork();
      for (let i = 0; i < extraDraws; i++) faults.next();
      return draws(orders);
    };
    assert.deepEqual(plan(0), plan(100));
    const root = new Random(2024);
    assert.notDeepEqual(draws(root.fork()), draws(root.fork()));
  });
});
