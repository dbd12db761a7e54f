/**
 * The chaos run's seeded draws (order mix, fault schedule, kill times), so a run can be replayed from
 * its printed seed. The generator and its uniform distributions are pure-rand's (xoroshiro128+);
 * this class only names the draws the run makes. Not cryptographic; it does not need to be.
 */
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import type { RandomGenerator } from 'pure-rand/types/RandomGenerator';

export class Random {
  readonly #rng: RandomGenerator;

  constructor(seed: number) {
    this.#rng = xoroshiro128plus(seed);
  }

  /** In [0, 1). */
  next(): number {
    return uniformFloat64(this.#rng);
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return uniformInt(this.#rng, min, max);
  }

  /** A float in [min, max). */
  between(min: number, max: number): number {
    return min + this.next() * (max - min);
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[this.int(0, items.length - 1)]!;
  }

  /** A random non-empty subset, in the original order. */
  subset<T>(items: readonly T[]): T[] {
    const chosen = items.filter(() => this.chance(0.5));
    return chosen.length > 0 ? chosen : [this.pick(items)];
  }

  /** A fresh generator for one concern, so adding draws to one does not shift another's. */
  fork(): Random {
    return new Random(this.int(0, 2 ** 32 - 1));
  }
}
