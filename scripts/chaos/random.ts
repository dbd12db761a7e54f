/**
 * A seeded pseudo-random generator (mulberry32), so a chaos run's order mix, fault schedule and
 * kill times can be replayed from its printed seed. Not cryptographic; it does not need to be.
 */
export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** In [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
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
    return items[Math.floor(this.next() * items.length)]!;
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
