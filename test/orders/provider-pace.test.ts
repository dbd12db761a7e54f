/**
 * Polling at the provider's pace (issue 32): real dev server, real worker, the sandbox over HTTP
 * with the provider's documented timings (each order draws its own PENDING / HANDLING from the
 * documented ranges, seeded), the lifecycle's default timings. Each order must learn of its final
 * status within one polling interval of the provider settling it (plus an interval of slack for a
 * loaded machine), check no more often than that interval allows, and stay a normal order: 14
 * history events, at most 5 billable actions (internet top-ups, whose HANDLING runs to 45 s, may
 * need one heartbeat more: docs/contributors.md "Cost per order").
 *
 * Not a speed test: what it checks is the schedule. The provider's own timestamps (the sandbox's
 * timelines) and the polling's observations share this machine's clock. At the spec's schedule
 * (first check at 5 s, 15 s after HANDLING is first seen, then doubling) the service learns of a
 * top-up 9–15 s after it settled and of a gift card that settles after 20 s up to 30 s after.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { billableActions, pollHeartbeats } from '../../scripts/bench/billable-actions';
import { defaultOrderTimings, type OrderRequest } from '../../contract/order';
import type { PollOutcome } from '../../contract/activity-outcomes';
import {
  firstTaskTimedOut,
  giftCardRequest,
  internetRequest,
  LEAN_ORDER_EVENTS,
  mobileRequest,
  newRef,
  startOrder,
  startTestSandbox,
  testProvider,
  type TestSandbox,
} from '../helpers/orders';
import { pollCompletions } from '../helpers/histories';
import { startOrderTestWorkers, type OrderTestWorkers } from '../helpers/stack';

/** Draws with every kind of timeline among the first few orders of each family (fixed, so a failure repeats). */
const SEED = 32;
const MAX_ACTIONS = 5;

describe('polling at the provider pace, against its documented timings', () => {
  let sandbox: TestSandbox;
  let provider: ReturnType<typeof testProvider>;
  let env: OrderTestWorkers<'sandbox'>;

  before(async () => {
    sandbox = await startTestSandbox(1);
    await sandbox.settings({ timings: 'documented', timingsSeed: SEED });
    provider = testProvider(sandbox.url);
    env = await startOrderTestWorkers({ sandbox: provider.client });
  });
  after(async () => {
    await env?.stop();
    await provider?.close();
    await sandbox?.close();
  });

  async function run(request: OrderRequest) {
    const timings = defaultOrderTimings[request.type];
    const handle = await startOrder(env.client, env.taskQueues.sandbox, request, { timings });
    const view = await handle.result();
    const events = (await handle.fetchHistory()).events ?? [];
    const [polled] = pollCompletions(events);
    assert.ok(polled, 'the polling activity completed');
    const outcome = await decodeFromPayloadsAtIndex<PollOutcome<{ status: string }>>(
      env.client.options.loadedDataConverter,
      0,
      polled.result?.payloads,
    );
    const id = request.type === 'gift_card' ? view.providerReference : undefined;
    const line = sandbox.state.timelines().find((t) => (id ? t.id === id : t.ref === request.ref));
    assert.ok(line, 'the sandbox knows the order');
    const final = outcome.observed.at(-1)!;
    return { view, events, outcome, line, finalAt: Date.parse(final.at), intervalMs: timings.pollIntervalMs };
  }

  const cases: [string, () => OrderRequest][] = [
    ...Array.from(
      { length: 4 },
      (_, i) =>
        [`mobile top-up ${i + 1}`, () => mobileRequest(newRef('pace-mobile'))] as [
          string,
          () => OrderRequest,
        ],
    ),
    ...Array.from(
      { length: 2 },
      (_, i) =>
        [`internet top-up ${i + 1}`, () => internetRequest(newRef('pace-internet'))] as [
          string,
          () => OrderRequest,
        ],
    ),
    ...Array.from(
      { length: 3 },
      (_, i) =>
        [`gift card ${i + 1}`, () => giftCardRequest(newRef('pace-gift'), 1)] as [string, () => OrderRequest],
    ),
  ];

  it('learns of every final status within a polling interval of the provider settling it, as a normal order', async (t) => {
    const results = await Promise.all(
      cases.map(async ([label, request]) => ({ label, ...(await run(request())) })),
    );
    for (const { label, view, events, outcome, line, finalAt, intervalMs } of results) {
      const lagMs = finalAt - line.settledAt;
      const settledInMs = line.settledAt - line.createdAt;
      t.diagnostic(
        `${label}: settled ${(settledInMs / 1_000).toFixed(1)} s after the send, known ${(lagMs / 1_000).toFixed(1)} s later; ` +
          `${outcome.checks} checks, ${events.length} events`,
      );
      assert.equal(view.status, 'FULFILLED', label);
      assert.equal(outcome.observed.at(-1)?.answer, 'FULFILLED', label);
      // Seen after it happened, and no later than the next check at the pace (plus slack for load).
      assert.ok(lagMs >= 0, `${label}: seen ${lagMs} ms before the provider settled it`);
      assert.ok(lagMs <= 2 * intervalMs, `${label}: known ${lagMs} ms after the provider settled it`);
      // No more checks than one per interval from the send until it was seen.
      const allowed = Math.floor((finalAt - line.createdAt) / intervalMs) + 1;
      assert.ok(outcome.checks <= allowed, `${label}: ${outcome.checks} checks, the pace allows ${allowed}`);
      if (firstTaskTimedOut(events)) {
        t.diagnostic(`${label}: the first workflow task timed out (a starved worker): not costed`);
        continue;
      }
      assert.ok(events.length <= LEAN_ORDER_EVENTS, `${label}: ${events.length} history events`);
      const heartbeats = await pollHeartbeats(events, env.client.options.loadedDataConverter);
      const actions = billableActions(events, { heartbeats });
      // Internet top-ups HANDLING past two thirds of the heartbeat timeout (40 s) beat once.
      const budget = view.type === 'internet_topup' && settledInMs > 35_000 ? MAX_ACTIONS + 1 : MAX_ACTIONS;
      assert.ok(actions.total <= budget, `${label}: ${JSON.stringify(actions)}`);
    }
  });
});
