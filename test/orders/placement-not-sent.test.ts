/**
 * A gift-card placement whose request never left the worker is placed again, not looked for in the
 * provider's records (src/orders/lifecycle/send.workflow.ts `place`): the provider client proves it
 * ended unwritten (src/provider/client.ts), so the attempt reports a certain "not reached" within
 * its own deadline. Against the sandbox over HTTP and a real Temporal dev server: the worker's
 * provider pool has one connection, and another call holds it (a `hang` on the catalog) while the
 * first placement — a local activity — waits in the pool's queue past its deadline.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createProviderPool, ProviderClient } from '../../src/provider';
import { giftCardRequest, newRef, SANDBOX_KEY, TEST_HTTP_TIMEOUTS, waitForView } from '../helpers/orders';
import { useFaultStack } from '../helpers/stack';

/** How long the blocking call holds the pool's one connection: past the local placement's deadline (5 s at most). */
const HOLD_MS = 6_500;

describe('a gift-card placement that never left the worker', () => {
  let pool: ReturnType<typeof createProviderPool>;
  /** On the worker's pool, with room to wait: it holds the one connection. */
  let blocker: ProviderClient;

  const env = useFaultStack({
    name: 'placement-not-sent',
    workers: {
      main: {
        provider: (s) => {
          pool = createProviderPool({
            baseUrl: s.url,
            connectTimeoutMs: TEST_HTTP_TIMEOUTS.connectTimeoutMs,
            connections: 1,
          });
          blocker = new ProviderClient({
            baseUrl: s.url,
            apiKey: SANDBOX_KEY,
            dispatcher: pool,
            headersTimeoutMs: 2 * HOLD_MS,
            bodyTimeoutMs: 2 * HOLD_MS,
          });
          return new ProviderClient({
            baseUrl: s.url,
            apiKey: SANDBOX_KEY,
            dispatcher: pool,
            ...TEST_HTTP_TIMEOUTS,
          });
        },
      },
    },
  });
  // After the stack's own `after`: the worker has stopped using the pool.
  after(async () => {
    await pool.destroy();
  });

  it('queued behind a call that holds the only connection until past its deadline: placed again once free, FULFILLED, placed once, never in review', async () => {
    await env.sandbox.addFault({ kind: 'hang', routes: ['giftcards.catalog'], times: 1 });
    const holding = blocker
      .getGiftCardCatalog({ signal: AbortSignal.timeout(HOLD_MS) })
      .catch((err: unknown) => err);
    // The catalog call is on the socket before the order starts.
    const deadline = Date.now() + 5_000;
    while ((await env.sandbox.requests('giftcards.catalog')).length === 0) {
      assert.ok(Date.now() < deadline, 'the blocking call never reached the sandbox');
      await new Promise((r) => setTimeout(r, 50));
    }
    const handle = await env.start(giftCardRequest(newRef('not-sent'), 7));
    const view = await waitForView(
      handle,
      (v) => !['ACCEPTED', 'SUBMITTED', 'PROCESSING'].includes(v.status),
      60_000,
    );
    await holding;

    assert.equal(view.status, 'FULFILLED', `${view.review?.reason}: ${view.review?.evidence}`);
    const placed = (await env.sandbox.giftCardOrders()).filter((o) => o.clientRef === handle.workflowId);
    assert.equal(placed.length, 1, 'placed once');
    assert.equal(view.providerReference, placed[0]!.orderId);
    // Placed again after a certain "not sent", not found in the records after an unknown outcome.
    assert.ok(
      !view.timeline.some((e) => e.event.includes("provider's gift-card list")),
      view.timeline.map((e) => e.event).join(' | '),
    );
    // The first placement waited in the pool past its deadline, with the blocking call on the socket.
    const [placement] = await env.sandbox.requests('giftcards.placeOrder');
    const [catalog] = await env.sandbox.requests('giftcards.catalog');
    assert.ok(placement && catalog);
    assert.ok(
      placement.receivedAt >= catalog.endedAt!,
      'the placement was written only once the connection was free',
    );
  });
});
