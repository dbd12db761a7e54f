/**
 * The server's clock as a worker tells it (src/temporal/server-clock.ts), on scripted clocks, and
 * the local send's window read through it (order.activities.ts mayRunThisSend), in Temporal's mock
 * activity context: a worker whose clock is minutes off sends; a send re-run late is refused.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { SAMPLE_WINDOW_MS, ServerClockEstimate } from '../../src/temporal/server-clock';
import { createOrderActivities, type OrderProvider } from '../../src/orders/order.activities';
import { ProviderFailureType } from '../../contract/activity-outcomes';
import { mobileRequest } from '../helpers/orders';

/** A worker's clocks: its wall clock `skewMs` off the server's (`server`), and a monotonic clock. */
function workerClocks(skewMs: number) {
  let server = 1_800_000_000_000;
  let monotonic = 5_000;
  return {
    clocks: { wall: () => server + skewMs, monotonic: () => monotonic },
    server: () => server,
    advance(ms: number) {
      server += ms;
      monotonic += ms;
    },
    /** The wall clock jumps (an NTP step): the monotonic clock does not. */
    step(ms: number) {
      skewMs += ms;
    },
  };
}

describe("the server's clock as a worker tells it", () => {
  it('with no sample, knows nothing and reads the worker clock as the server clock', () => {
    const { clocks } = workerClocks(180_000);
    const estimate = new ServerClockEstimate(clocks);
    assert.equal(estimate.offsetMs(), undefined);
    assert.equal(estimate.toServerClock(42), 42);
  });

  for (const skewMs of [180_000, -180_000, 0]) {
    it(`finds a worker clock ${skewMs / 1000} s off to within the smallest delay seen, never below the true offset`, () => {
      const w = workerClocks(skewMs);
      const estimate = new ServerClockEstimate(w.clocks);
      // Activities the server scheduled 40 ms, 2 s and 15 ms before the worker started them.
      for (const delay of [40, 2_000, 15]) {
        const scheduledAt = w.server();
        w.advance(delay);
        estimate.observe(scheduledAt);
        w.advance(1_000);
      }
      const offset = estimate.offsetMs()!;
      assert.ok(offset >= skewMs, `${offset} ≥ ${skewMs}: the server's time is never over-estimated`);
      assert.equal(offset, skewMs + 15);
      // Read later on, the estimate moves with the monotonic clock.
      w.advance(60_000);
      assert.equal(estimate.offsetMs(), skewMs + 15);
      assert.equal(estimate.toServerClock(w.clocks.wall()), w.server() - 15);
    });
  }

  it('forgets samples older than its window (a clock corrected since shows)', () => {
    const w = workerClocks(180_000);
    const estimate = new ServerClockEstimate(w.clocks);
    estimate.observe(w.server());
    w.advance(SAMPLE_WINDOW_MS + 20_000);
    assert.equal(estimate.offsetMs(), undefined);
  });

  it('when the wall clock is stepped back after a sample, reads the new offset at once (the monotonic clock carries the samples)', () => {
    const w = workerClocks(180_000);
    const estimate = new ServerClockEstimate(w.clocks);
    estimate.observe(w.server());
    w.step(-180_000);
    assert.equal(estimate.offsetMs(), 0);
  });

  it('ignores a sample without a time', () => {
    const estimate = new ServerClockEstimate(workerClocks(0).clocks);
    estimate.observe(0);
    estimate.observe(Number.NaN);
    assert.equal(estimate.offsetMs(), undefined);
  });
});

describe("the local send's window, on a worker whose clock is off", () => {
  /** Task timeout 10 s: the window ends 7 s after the task's start (LOCAL_SEND_WINDOW_SHARE). */
  const TASK_TIMEOUT_MS = 10_000;
  const request = mobileRequest('skew-1');

  function setUp(skewMs: number) {
    const w = workerClocks(skewMs);
    const estimate = new ServerClockEstimate(w.clocks);
    const calls: string[] = [];
    const provider = {
      sendMobileTopup: async () => {
        calls.push('sendMobileTopup');
        return { topupId: 't-1' };
      },
    } as unknown as OrderProvider;
    const activities = createOrderActivities({ provider, serverClock: estimate });
    /** The local send of a task the server started `startedAgoMs` ago, scheduled on the worker now. */
    const localSend = (taskStartedAt: number) =>
      new MockActivityEnvironment({
        attempt: 1,
        isLocal: true,
        scheduledTimestampMs: w.clocks.wall(),
      }).run(activities.sendMobileTopup, request, { notAfter: taskStartedAt + 0.7 * TASK_TIMEOUT_MS });
    /** A regular activity started now, which the server scheduled `delayMs` ago. */
    const regularActivityStarted = (delayMs: number) => estimate.observe(w.server() - delayMs);
    return { w, calls, localSend, regularActivityStarted };
  }

  const failureOf = async (p: Promise<unknown>) => {
    const err = await p.then(
      () => assert.fail('expected a failure'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ApplicationFailure);
    return err;
  };

  for (const skewMs of [180_000, -180_000]) {
    const way = skewMs > 0 ? 'ahead' : 'behind';
    it(`${way} by 3 minutes, once it has seen a regular activity: sends within the window`, async () => {
      const { w, calls, localSend, regularActivityStarted } = setUp(skewMs);
      regularActivityStarted(20);
      const taskStartedAt = w.server();
      w.advance(300);
      assert.deepEqual(await localSend(taskStartedAt), { providerReference: 't-1', alreadySent: false });
      assert.deepEqual(calls, ['sendMobileTopup']);
    });

    it(`${way} by 3 minutes: a send re-run after a heartbeat-kept task was lost is refused unsent`, async () => {
      const { w, calls, localSend, regularActivityStarted } = setUp(skewMs);
      regularActivityStarted(20);
      // The first task started; it was kept by a heartbeat at 80 % of its timeout, the task after
      // it was lost with its worker (a whole timeout), and the task after that runs the send again.
      const taskStartedAt = w.server();
      w.advance(0.8 * TASK_TIMEOUT_MS + TASK_TIMEOUT_MS + 100);
      regularActivityStarted(20);
      const failure = await failureOf(localSend(taskStartedAt));
      assert.equal(failure.type, ProviderFailureType.outcomeUnknown);
      assert.match(failure.message, /scheduled after its window/);
      assert.deepEqual(calls, []);
    });
  }

  it('a late re-run is refused even when every sample of the window was delayed by up to the room the window leaves (1.1 × the task timeout)', async () => {
    const { w, calls, localSend, regularActivityStarted } = setUp(180_000);
    // Every regular activity waited 10.9 s in the queue: the estimate reads the server's clock that
    // much early, and the re-run (18 s after the task's start) still lands after the window (7 s).
    regularActivityStarted(1.1 * TASK_TIMEOUT_MS - 100);
    const taskStartedAt = w.server();
    w.advance(0.8 * TASK_TIMEOUT_MS + TASK_TIMEOUT_MS);
    const failure = await failureOf(localSend(taskStartedAt));
    assert.equal(failure.type, ProviderFailureType.outcomeUnknown);
    assert.deepEqual(calls, []);
  });

  it('ahead, with no sample yet: reads its own clock, as before (refused: it cannot tell)', async () => {
    const { w, calls, localSend } = setUp(180_000);
    const failure = await failureOf(localSend(w.server()));
    assert.equal(failure.type, ProviderFailureType.outcomeUnknown);
    assert.deepEqual(calls, []);
  });
});
