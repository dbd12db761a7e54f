/**
 * Reads that scale (issue 32, part 4): a short-lived answer shared by identical reads, so that 20
 * back-office readers asking the same list page, statement or export at once cost Temporal's
 * visibility (rate-limited per namespace, and shared with the operators' review queue in Temporal
 * UI, the provider account's rounds, the sweep and the reconciliation) one read instead of twenty.
 *
 * - **Coalescing**: a read whose key is already being answered waits for that answer.
 * - **Reuse**: an answer is reused for `ttlMs` from the moment its read *started*, so no answer is
 *   ever more than `ttlMs` older than the request that asked for it (plus visibility's own lag,
 *   about a second, which every read has anyway). Failures are never kept: the next read asks again.
 * - **Refresh ahead**: a read that finds an answer past half its time starts the next read in the
 *   background and takes the answer it found, so readers who keep asking rarely wait for a read
 *   (a read that finds none, or only an expired one, waits, and shares the read in flight).
 * - **Tenancy**: the key is the caller's, always. Callers build it from the caller's id, the
 *   normalized query (its visibility filter, which already holds the caller's reach) and the page
 *   token, so one client's answer can never be another's, even for the same query.
 * - **"The latest run decides"**: what is kept is the finished answer, after its latest-run checks
 *   (src/orders/latest-runs.ts), so a kept answer follows the rule as it stood when it was read.
 * - **Hang-ups**: a shared read is cancelled only once every caller waiting for it is gone; a caller
 *   that leaves gets its own abort at once while the others keep theirs.
 *
 * Bounded: at most `maxEntries` answers (the oldest go first), each dropped once expired.
 * `ttlMs` 0 turns it off (every read goes to Temporal, as before).
 */

export interface ReadCacheOptions {
  /** How long an answer is reused, from its read's start (API_READ_CACHE_MS); 0: off. */
  ttlMs: number;
  /** Keys kept at most; the least recently read are dropped first. */
  maxEntries?: number;
  now?: () => number;
}

/**
 * What became of a read: a `miss` waited for a read of its own, a `shared` one for a read in
 * flight, a `hit` took a kept answer; `refresh` counts the reads started ahead by hits.
 */
export type ReadOutcome = 'miss' | 'shared' | 'hit' | 'refresh';

interface Read {
  startedAt: number;
  promise: Promise<unknown>;
  controller: AbortController;
  /** Callers still waiting for it. */
  waiting: number;
}

/** A key's answer (settled, the latest that succeeded) and the read in flight for it, if any. */
interface Slot {
  answer?: { startedAt: number; value: unknown };
  next?: Read;
}

const DEFAULT_MAX_ENTRIES = 1_000;

export class ReadCache {
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  /** In the order of their latest read's start (a key moves to the end when a read starts). */
  readonly #slots = new Map<string, Slot>();
  readonly #counts: Record<ReadOutcome, number> = { miss: 0, shared: 0, hit: 0, refresh: 0 };

  constructor(options: ReadCacheOptions) {
    this.#ttlMs = Math.max(0, options.ttlMs);
    this.#maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
    this.#now = options.now ?? Date.now;
  }

  get enabled(): boolean {
    return this.#ttlMs > 0;
  }

  /** How many reads went each way since the start (for tests and the bench). */
  get counts(): Readonly<Record<ReadOutcome, number>> {
    return { ...this.#counts };
  }

  /**
   * The answer of `read` for `key`: one read less than `ttlMs` ago, the one in flight, or a fresh
   * one. `read` gets a signal aborted once every caller waiting for it is gone; `signal` is this
   * caller's own (its request closed): it rejects this caller's promise at once with its reason.
   */
  async get<T>(key: string, read: (signal: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted();
    if (!this.enabled) return read(signal ?? new AbortController().signal);
    const now = this.#now();
    this.#dropExpired(now);
    const slot = this.#slots.get(key) ?? {};
    const { answer } = slot;
    if (answer && now - answer.startedAt < this.#ttlMs) {
      this.#counts.hit++;
      // Past half its time: the next answer is read meanwhile, for whoever asks next.
      if (!slot.next && now - answer.startedAt >= this.#ttlMs / 2) {
        this.#counts.refresh++;
        this.#start(key, slot, read, now).waiting = Number.POSITIVE_INFINITY;
      }
      return answer.value as T;
    }
    // A read in flight is joined while it is young enough to answer within the TTL.
    let next = slot.next && now - slot.next.startedAt < this.#ttlMs ? slot.next : undefined;
    if (next) {
      this.#counts.shared++;
    } else {
      this.#counts.miss++;
      next = this.#start(key, slot, read, now);
    }
    return this.#wait(key, slot, next, signal) as Promise<T>;
  }

  /** Starts a read for `key`; its answer replaces the slot's once it succeeds. */
  #start(key: string, slot: Slot, read: (signal: AbortSignal) => Promise<unknown>, now: number): Read {
    const controller = new AbortController();
    const started: Read = { startedAt: now, promise: Promise.resolve(), controller, waiting: 0 };
    started.promise = read(controller.signal).then(
      (value) => {
        if (slot.next === started) slot.next = undefined;
        if (!slot.answer || slot.answer.startedAt < started.startedAt)
          slot.answer = { startedAt: now, value };
        return value;
      },
      (err: unknown) => {
        // A failure is nobody's answer: the next read asks again.
        if (slot.next === started) slot.next = undefined;
        if (!slot.answer && !slot.next && this.#slots.get(key) === slot) this.#slots.delete(key);
        throw err;
      },
    );
    // Rejections reach the callers that wait; this one only keeps an unobserved rejection quiet.
    started.promise.catch(() => undefined);
    slot.next = started;
    this.#slots.delete(key);
    this.#slots.set(key, slot);
    while (this.#slots.size > this.#maxEntries) {
      const oldest = this.#slots.keys().next().value as string;
      this.#slots.delete(oldest);
    }
    return started;
  }

  /** The answer of `next` for one caller, who may leave before it comes. */
  #wait(key: string, slot: Slot, next: Read, signal: AbortSignal | undefined): Promise<unknown> {
    if (!signal) {
      // A caller that cannot leave keeps the read going whoever else leaves.
      next.waiting = Number.POSITIVE_INFINITY;
      return next.promise;
    }
    next.waiting++;
    return new Promise((resolve, reject) => {
      let settled = false;
      const leave = () => {
        reject(signal.reason as Error);
        next.waiting--;
        if (next.waiting <= 0 && !settled) {
          // Nobody waits any more: the read stops (its Temporal calls are cancelled), and is forgotten.
          if (slot.next === next) slot.next = undefined;
          if (!slot.answer && !slot.next && this.#slots.get(key) === slot) this.#slots.delete(key);
          next.controller.abort(signal.reason);
        }
      };
      signal.addEventListener('abort', leave, { once: true });
      next.promise.then(
        (value) => {
          settled = true;
          signal.removeEventListener('abort', leave);
          resolve(value);
        },
        (err: unknown) => {
          settled = true;
          signal.removeEventListener('abort', leave);
          reject(err as Error);
        },
      );
    });
  }

  /**
   * Slots are in the order of their latest read's start: those whose answer expired and that have
   * no read in flight are at the front. A read in flight keeps its slot until it ends.
   */
  #dropExpired(now: number): void {
    for (const [key, slot] of this.#slots) {
      const startedAt = Math.max(slot.answer?.startedAt ?? 0, slot.next?.startedAt ?? 0);
      if (now - startedAt < this.#ttlMs) return;
      // In flight for those who wait for it; nobody else gets that answer or an expired one.
      if (slot.next) continue;
      this.#slots.delete(key);
    }
  }
}

/** A cache key from its parts (NUL never occurs in any of them: ids, filters and tokens are printable). */
export function readKey(...parts: (string | number | undefined)[]): string {
  return parts.map((part) => (part === undefined ? '' : String(part))).join('\0');
}
