/**
 * The first tries' circuit breaker (src/webhooks/webhook.activities.ts `DirectGate`) and the deferred attempts' turns
 * (`EndpointSlots`), each on a clock of its own: a
 * slow or dead endpoint holds at most one of the order worker's local-activity slots per cooldown.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DirectGate, EndpointSlots } from '../../src/webhooks/webhook.activities';

function gate() {
  let now = 1_000_000;
  const g = new DirectGate({ maxInFlight: 4, cooldownMs: 10_000, clock: () => now });
  return { g, advance: (ms: number) => (now += ms) };
}

/** How many tries `key` is let start now (each stays in flight). */
function admitted(g: DirectGate, key: string, asked = 10): number {
  let n = 0;
  for (let i = 0; i < asked; i++) if (g.enter(key)) n++;
  return n;
}

describe('first tries: a short wait for a prompt endpoint’s slot', () => {
  function waitingGate(maxWaitMs = 100) {
    let now = 1_000_000;
    const g = new DirectGate({ maxInFlight: 2, cooldownMs: 10_000, maxWaitMs, clock: () => now });
    return { g, advance: (ms: number) => (now += ms) };
  }
  /** Starts a try and ends it after `tookMs`: the endpoint's record of how long its tries take. */
  function tried(g: DirectGate, key: string, tookMs: number) {
    assert.ok(g.enter(key));
    g.leave(key, true, tookMs);
  }

  it('a prompt endpoint’s try waits for a slot and gets the first that frees, the receiver never having more than maxInFlight', async () => {
    const { g } = waitingGate();
    tried(g, 'a:1', 20);
    assert.equal(admitted(g, 'a:1'), 2);
    const waiting = g.enterOrWait('a:1');
    g.leave('a:1', true, 20);
    assert.equal(await waiting, true);
    assert.equal(admitted(g, 'a:1'), 0, 'the freed slot went to the waiting try');
  });

  it('an endpoint with no record, or a slow one, waits for nothing', async () => {
    const { g } = waitingGate();
    assert.equal(admitted(g, 'a:new'), 2);
    assert.equal(await g.enterOrWait('a:new'), false);
    tried(g, 'a:slow', 1_500);
    assert.equal(admitted(g, 'a:slow'), 2);
    assert.equal(await g.enterOrWait('a:slow'), false);
  });

  it('a wait ends after maxWaitMs, and at once when the endpoint fails; no more wait than maxInFlight', async () => {
    const { g } = waitingGate(50);
    tried(g, 'a:1', 20);
    assert.equal(admitted(g, 'a:1'), 2);
    const started = Date.now();
    assert.equal(await g.enterOrWait('a:1'), false);
    assert.ok(Date.now() - started >= 45);
    const waits = [g.enterOrWait('a:1'), g.enterOrWait('a:1'), g.enterOrWait('a:1')];
    assert.equal(await waits[2], false, 'a third waiter beyond maxInFlight is handed off at once');
    g.leave('a:1', false);
    assert.deepEqual(
      await Promise.all(waits.slice(0, 2)),
      [false, false],
      'cooling: the waiting are handed off',
    );
    assert.equal(g.refusal('a:1'), 'cooling');
  });
});

describe('first tries: the circuit breaker per endpoint', () => {
  it('a healthy endpoint gets maxInFlight tries at once, and more as they end', () => {
    const { g } = gate();
    assert.equal(admitted(g, 'a:1'), 4);
    g.leave('a:1', true);
    assert.equal(admitted(g, 'a:1'), 1);
  });

  it('after a failed try: no try during the cooldown, then one at a time until one succeeds', () => {
    const { g, advance } = gate();
    assert.equal(admitted(g, 'a:slow'), 4);
    g.leave('a:slow', false);
    assert.equal(admitted(g, 'a:slow'), 0, 'cooling down');
    for (let i = 0; i < 3; i++) g.leave('a:slow', false);
    advance(10_001);
    assert.equal(admitted(g, 'a:slow'), 1, 'suspect: one probe');
    g.leave('a:slow', false);
    advance(10_001);
    assert.equal(admitted(g, 'a:slow'), 1, 'still suspect after a failed probe');
    g.leave('a:slow', true);
    assert.equal(admitted(g, 'a:slow'), 4, 'a probe that succeeded opens it again');
  });

  it('one endpoint’s failures leave another’s tries alone', () => {
    const { g } = gate();
    assert.equal(admitted(g, 'a:slow'), 4);
    for (let i = 0; i < 4; i++) g.leave('a:slow', false);
    assert.equal(admitted(g, 'a:slow'), 0);
    assert.equal(admitted(g, 'b:prompt'), 4);
  });
});

/**
 * The delivery activity's estimate of when a deferred attempt should come back (src/webhooks/webhook.activities.ts
 * `EndpointSlots`): a line per endpoint, `cap` attempts per typical attempt's time.
 */
describe('deferred attempts: each given the next turn at its endpoint', () => {
  function slots() {
    let now = 1_000_000;
    const s = new EndpointSlots(4, () => now);
    const advance = (ms: number) => (now += ms);
    /** One attempt at `key` that took `ms`. */
    const took = (key: string, ms: number) => {
      const ended = s.attemptStarted(key);
      advance(ms);
      ended();
    };
    return { s, advance, took };
  }

  it('successive deferrals get successive turns: a quarter of a 10 s attempt apart with a cap of 4', () => {
    const { s, took } = slots();
    took('a:slow', 10_000);
    assert.deepEqual(
      Array.from({ length: 6 }, () => s.nextFreeInMs('a:slow')),
      [2_500, 5_000, 7_500, 10_000, 12_500, 15_000],
    );
  });

  it('the line drains with time, and follows how long attempts take now', () => {
    const { s, advance, took } = slots();
    took('a:slow', 10_000);
    for (let i = 0; i < 4; i++) s.nextFreeInMs('a:slow');
    advance(60_000);
    assert.equal(s.nextFreeInMs('a:slow'), 2_500, 'the turns given out have passed');
    for (let i = 0; i < 20; i++) took('a:slow', 400);
    advance(60_000);
    assert.ok(s.nextFreeInMs('a:slow') < 200, 'a faster endpoint, shorter turns');
  });

  it('one endpoint’s line leaves another’s alone; before any attempt ended, an attempt is guessed at 5 s, or as old as the oldest in flight', () => {
    const { s, advance, took } = slots();
    took('a:slow', 10_000);
    for (let i = 0; i < 10; i++) s.nextFreeInMs('a:slow');
    assert.equal(s.nextFreeInMs('b:new'), 1_250);
    assert.equal(s.nextFreeInMs('b:new'), 2_500);
    s.attemptStarted('c:new');
    advance(8_000);
    assert.equal(s.nextFreeInMs('c:new'), 2_000, 'in flight for 8 s: an attempt takes 8 s at least');
  });
});
