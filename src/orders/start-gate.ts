/**
 * The fair start gate: at most API_START_CONCURRENCY order starts in flight towards Temporal from
 * this API process, whoever sends them, so one client's flood of batches cannot saturate Temporal
 * and make every other client's starts time out.
 *
 * Free slots are handed out:
 * - single orders (POST /v1/orders) before batch items, whoever sent them;
 * - within each kind, round-robin by client: one waiting start of each client in turn, so a
 *   client with 5 items waiting is not behind another's 1,000;
 * - within one client and kind, in arrival order.
 *
 * A start that waits longer than its `waitMs`, or whose `signal` is aborted, leaves the queue
 * without running (StartNotRun): it was never tried, so the caller may send it again.
 * p-limit and its kind do one FIFO queue; the per-client round-robin is the reason this is ours.
 */

export type StartKind = 'single' | 'batch';

/** The start waited for a slot and did not run: out of time, or its caller gone. */
export class StartNotRun extends Error {
  constructor(readonly reason: 'timeout' | 'aborted') {
    super(reason === 'timeout' ? 'no start slot free in time' : 'the caller is gone');
    this.name = 'StartNotRun';
  }
}

interface Waiter {
  grant: () => void;
  refuse: (err: StartNotRun) => void;
}

/** Queued waiters of one kind, by client; the Map's order is the round-robin's. */
type Queues = Map<string, Waiter[]>;

export interface StartWait {
  /** Longest wait for a slot, in ms. */
  waitMs: number;
  signal?: AbortSignal;
}

export class FairStartGate {
  readonly #capacity: number;
  #inFlight = 0;
  readonly #queues: Record<StartKind, Queues> = { single: new Map(), batch: new Map() };

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('capacity must be a positive integer');
    this.#capacity = capacity;
  }

  /** Starts running now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Starts waiting for a slot. */
  get waiting(): number {
    let n = 0;
    for (const queues of Object.values(this.#queues)) for (const q of queues.values()) n += q.length;
    return n;
  }

  /** Runs `start` once a slot is free for `client`'s `kind`; StartNotRun when none was in time. */
  async run<T>(client: string, kind: StartKind, wait: StartWait, start: () => Promise<T>): Promise<T> {
    const release = await this.acquire(client, kind, wait);
    try {
      return await start();
    } finally {
      release();
    }
  }

  /** A slot, released by calling the answer (once; later calls do nothing). */
  acquire(client: string, kind: StartKind, wait: StartWait): Promise<() => void> {
    if (wait.signal?.aborted) return Promise.reject(new StartNotRun('aborted'));
    // A free slot with no one waiting ahead: nobody to be fair to.
    if (this.#inFlight < this.#capacity && this.waiting === 0) {
      this.#inFlight++;
      return Promise.resolve(this.#releaser());
    }
    if (wait.waitMs <= 0) return Promise.reject(new StartNotRun('timeout'));
    return new Promise((resolve, reject) => {
      const queues = this.#queues[kind];
      const leave = (reason: StartNotRun['reason']) => {
        const queue = queues.get(client);
        const at = queue?.indexOf(waiter) ?? -1;
        if (queue && at >= 0) {
          queue.splice(at, 1);
          if (queue.length === 0) queues.delete(client);
        }
        waiter.refuse(new StartNotRun(reason));
      };
      const onAbort = () => leave('aborted');
      const timer = setTimeout(() => leave('timeout'), wait.waitMs);
      const settled = () => {
        clearTimeout(timer);
        wait.signal?.removeEventListener('abort', onAbort);
      };
      const waiter: Waiter = {
        grant: () => {
          settled();
          resolve(this.#releaser());
        },
        refuse: (err) => {
          settled();
          reject(err);
        },
      };
      wait.signal?.addEventListener('abort', onAbort, { once: true });
      const queue = queues.get(client);
      if (queue) queue.push(waiter);
      else queues.set(client, [waiter]);
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inFlight--;
      this.#dispatch();
    };
  }

  #dispatch(): void {
    while (this.#inFlight < this.#capacity) {
      const waiter = this.#next('single') ?? this.#next('batch');
      if (!waiter) return;
      this.#inFlight++;
      waiter.grant();
    }
  }

  /** The first waiter of the client whose turn it is; that client then goes to the back. */
  #next(kind: StartKind): Waiter | undefined {
    const queues = this.#queues[kind];
    const first = queues.entries().next();
    if (first.done) return undefined;
    const [client, queue] = first.value;
    const waiter = queue.shift();
    queues.delete(client);
    if (queue.length > 0) queues.set(client, queue);
    return waiter;
  }
}
