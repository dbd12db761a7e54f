/**
 * The first tries' circuit breaker (activities/webhooks.ts `DirectGate`), on a clock of its own: a
 * slow or dead endpoint holds at most one of the order worker's local-activity slots per cooldown.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DirectGate } from '../../activities/webhooks';

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
