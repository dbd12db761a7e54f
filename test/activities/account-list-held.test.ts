/**
 * The account round's listing of held orders (activities/account.ts `listHeld`) for orders held
 * before patch hold-search-attributes: they carry no hold attributes, so each is read with a status
 * query. A unit test on a stand-in Temporal client (the listing and the queries are all it uses):
 * the queries run a few at a time with progress reported after each, at most a round's worth, and
 * the orders left for the next round stop the balance line instead of being passed by later ones.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { listHeld } from '../../activities/account';
import { resumableHeld } from '../../contract/account';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `count` unmarked held orders, accepted one second apart, each needing 100 DZD. */
function standIn(count: number) {
  const base = Date.UTC(2026, 10, 27);
  const ids = Array.from({ length: count }, (_, i) => `order-${String(i).padStart(3, '0')}`);
  let inFlight = 0;
  let mostInFlight = 0;
  let queries = 0;
  const client = {
    withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn(),
    workflow: {
      async *list() {
        for (const [i, workflowId] of ids.entries()) {
          yield {
            workflowId,
            startTime: new Date(base + i * 1_000),
            typedSearchAttributes: { get: () => undefined },
          };
        }
      },
      getHandle: (workflowId: string) => ({
        async query() {
          queries++;
          inFlight++;
          mostInFlight = Math.max(mostInFlight, inFlight);
          await sleep(2);
          inFlight--;
          return {
            status: 'HELD',
            hold: { reason: 'balance', required: 100 },
            request: { type: 'mobile_topup', amount: 100 },
            workflowId,
          };
        },
      }),
    },
  } as unknown as Client;
  return { client, ids, stats: () => ({ queries, mostInFlight }) };
}

describe('the account round lists orders held before the hold attributes', () => {
  it('queries them a few at a time, reporting progress after each', async () => {
    const { client, stats } = standIn(20);
    let progress = 0;
    const held = await listHeld(client, 'orders', () => progress++);
    assert.equal(held.length, 20);
    assert.ok(held.every((order) => order.reason === 'balance' && order.required === 100));
    assert.equal(stats().queries, 20);
    assert.ok(
      stats().mostInFlight > 1 && stats().mostInFlight <= 8,
      `at most 8 at once: ${stats().mostInFlight}`,
    );
    assert.ok(progress >= 20, `progress after each query: ${progress}`);
  });

  it('reads at most 64 a round; the rest stop the balance line, so no later order passes them', async () => {
    const { client, ids, stats } = standIn(70);
    const held = await listHeld(client, 'orders', () => undefined);
    assert.equal(stats().queries, 64, 'the oldest 64 are read');
    assert.equal(held.length, 70, 'all are counted as held');
    // A balance that covers every order: the 64 read go, and the line stops at the first one not read.
    const go = resumableHeld(held, { balance: 1_000_000 });
    assert.deepEqual(
      go.map((order) => order.workflowId),
      ids.slice(0, 64),
    );
  });
});
