/**
 * The sandbox's documented timings (SandboxSettings.timings = 'documented'): each order draws its
 * own PENDING / HANDLING durations from the provider's documented ranges, seeded, so a run can
 * be repeated; the spec's fixed timeline stays the default.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SandboxState } from '../../src/sandbox/state';
import { documentedRanges, documentedTimeline } from '../../src/sandbox/simulation';

function sendMobiles(state: SandboxState, count: number): void {
  for (let i = 0; i < count; i++) {
    state.sendMobile(
      'owner',
      { plan_code: 'PREPAID_X', MSSIDN: '0555123456', amount: 100, ref: `m${i}` },
      100,
    );
  }
}

describe('sandbox documented timings', () => {
  it('draws each family within its documented range, and the same draws for the same seed', () => {
    for (const family of ['mobile', 'internet', 'giftCard'] as const) {
      const { pending, handling } = documentedRanges[family];
      const draws = Array.from({ length: 200 }, (_, i) => documentedTimeline(family, 7, i));
      for (const d of draws) {
        assert.ok(d.pendingMs >= pending[0] && d.pendingMs <= pending[1], `${family} pending ${d.pendingMs}`);
        assert.ok(
          d.handlingMs >= handling[0] && d.handlingMs <= handling[1],
          `${family} handling ${d.handlingMs}`,
        );
      }
      // Spread over the range, not one value.
      assert.ok(new Set(draws.map((d) => d.pendingMs + d.handlingMs)).size > 100);
      assert.deepEqual(
        draws,
        Array.from({ length: 200 }, (_, i) => documentedTimeline(family, 7, i)),
      );
      assert.notDeepEqual(
        draws,
        Array.from({ length: 200 }, (_, i) => documentedTimeline(family, 8, i)),
      );
    }
  });

  it("a mobile top-up follows its drawn timeline; the spec's stays the default", () => {
    let clock = 0;
    const state = new SandboxState({ timeScale: 1, now: () => clock });
    sendMobiles(state, 1);
    assert.deepEqual(
      state.timelines().map(({ handlingAt, settledAt }) => ({ handlingAt, settledAt })),
      [{ handlingAt: 5_000, settledAt: 20_000 }],
    );

    state.updateSettings({ timings: 'documented', timingsSeed: 42 });
    state.sendMobile('owner', { plan_code: 'PREPAID_X', MSSIDN: '0555123456', amount: 100, ref: 'd0' }, 100);
    const drawn = documentedTimeline('mobile', 42, 0);
    const line = state.timelines().find((t) => t.ref === 'd0')!;
    assert.deepEqual(line.timeline, drawn);
    clock = line.handlingAt - 1;
    assert.equal(state.checkMobile('owner', 'd0').status, 'PENDING');
    clock = line.handlingAt;
    assert.equal(state.checkMobile('owner', 'd0').status, 'HANDLING');
    clock = line.settledAt - 1;
    assert.equal(state.checkMobile('owner', 'd0').status, 'HANDLING');
    clock = line.settledAt;
    assert.equal(state.checkMobile('owner', 'd0').status, 'FULFILLED');
  });

  it('setting the seed again repeats the same sequence of draws', () => {
    const state = new SandboxState({ timeScale: 1, now: () => 0 });
    state.updateSettings({ timings: 'documented', timingsSeed: 3 });
    sendMobiles(state, 5);
    const first = state.timelines().map((t) => t.timeline);
    state.reset();
    state.updateSettings({ timings: 'documented', timingsSeed: 4 });
    state.updateSettings({ timings: 'documented', timingsSeed: 3 });
    sendMobiles(state, 5);
    assert.deepEqual(
      state.timelines().map((t) => t.timeline),
      first,
    );
  });
});
