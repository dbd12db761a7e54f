/**
 * The Temporal server's clock as this worker process can tell it, for the checks that compare a
 * time the worker took on its own clock with one the workflow took on the server's (the local
 * send's window: src/orders/order.activities.ts `mayRunThisSend`). A worker's clock may be minutes
 * off the server's; Temporal does not correct for it, and a local activity's times are the
 * worker's own.
 *
 * How: every regular (non-local) activity attempt that starts on this worker is a sample. Its
 * `currentAttemptScheduledTimestampMs` is the server's clock; the server scheduled it before the
 * worker started it, so at the moment it starts, the server's clock reads at least that. Each
 * sample is therefore a lower bound on the server's time, and the estimate is the highest of them,
 * carried forward on the monotonic clock (which no change of the wall clock moves), over the
 * samples of the last SAMPLE_WINDOW_MS.
 *
 * Which way it errs, and by how much: the estimate of the server's time is never ahead of it (bar
 * the two clocks' rates, a few ppm: milliseconds over the window). It is behind by the smallest
 * delay, among the window's samples, between the server scheduling an activity and this worker
 * starting it — milliseconds while the task queue has an idle poller; the queue wait when every
 * slot of every worker was busy for the whole window. A check that must not let a late time through
 * must therefore leave that much room, and a worker that has seen no sample in the window (just
 * started, or no regular activity for a while) knows nothing: it reads its own clock as before.
 */
import type { ActivityInterceptorsFactory } from '@temporalio/worker';

/** Samples older than this are forgotten, so a clock that changed shows within this long. */
export const SAMPLE_WINDOW_MS = 5 * 60_000;
/** The window keeps the best sample of each slice this long (a few dozen numbers in all). */
const SLICE_MS = 10_000;

export interface Clocks {
  /** The wall clock, epoch ms (what the SDK stamps a local activity with). */
  wall: () => number;
  /** A monotonic clock, ms. */
  monotonic: () => number;
}

const systemClocks: Clocks = { wall: () => Date.now(), monotonic: () => performance.now() };

export class ServerClockEstimate {
  /** Per slice of the monotonic clock: the highest (server time − monotonic time) seen in it. */
  readonly #slices = new Map<number, number>();

  constructor(private readonly clocks: Clocks = systemClocks) {}

  /** A regular activity attempt starts now; the server scheduled it at `serverScheduledMs`. */
  observe(serverScheduledMs: number): void {
    if (!Number.isFinite(serverScheduledMs) || serverScheduledMs <= 0) return;
    const now = this.clocks.monotonic();
    const slice = Math.floor(now / SLICE_MS);
    const base = serverScheduledMs - now;
    const best = this.#slices.get(slice);
    if (best === undefined || base > best) this.#slices.set(slice, base);
    this.#forgetOld(now);
  }

  /**
   * How far this worker's wall clock is ahead of the server's (negative: behind), as the samples
   * bound it: never less than the true offset, more by the delay described above. Undefined with
   * no sample in the window.
   */
  offsetMs(): number | undefined {
    const now = this.clocks.monotonic();
    this.#forgetOld(now);
    if (this.#slices.size === 0) return undefined;
    const serverNow = Math.max(...this.#slices.values()) + now;
    return this.clocks.wall() - serverNow;
  }

  /**
   * A time read on this worker's wall clock (e.g. a local activity's scheduled time), on the
   * server's clock: never later than the true one. Unchanged with no sample.
   */
  toServerClock(localMs: number): number {
    return localMs - (this.offsetMs() ?? 0);
  }

  #forgetOld(now: number): void {
    const oldest = Math.floor((now - SAMPLE_WINDOW_MS) / SLICE_MS);
    for (const slice of this.#slices.keys()) if (slice < oldest) this.#slices.delete(slice);
  }
}

/**
 * This process's estimate: one clock per process, and one Temporal cluster per worker process, so
 * the order and webhook workers feed it together and the order activities read it.
 */
export const workerServerClock = new ServerClockEstimate();

/** The activity interceptor that feeds an estimate: every regular activity attempt, as it starts. */
export function serverClockSampler(
  estimate: ServerClockEstimate = workerServerClock,
): ActivityInterceptorsFactory {
  return (ctx) => {
    const { isLocal, currentAttemptScheduledTimestampMs } = ctx.info;
    if (!isLocal) estimate.observe(currentAttemptScheduledTimestampMs);
    return {};
  };
}
