/**
 * The reconciliation's matching hands over a day's mismatches a chunk at a time by a cursor
 * (src/reconciliation/matching.ts chunkOf): an outage's worth of mismatches, each with many ledger
 * rows, walks out in chunks that cover each mismatch once and stay far below Temporal's 2 MB per
 * payload, where the whole list in one result does not.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chunkOf } from '../../src/reconciliation/matching';
import type { LedgerRow, MatchChunk, Mismatch } from '../../contract/reconciliation';

const TEMPORAL_PAYLOAD_LIMIT = 2 * 1024 * 1024;
const MISMATCHES_PER_CHUNK = 500;

/** A long ref and client, and `rows` ledger rows: the largest mismatch the matching makes. */
function mismatch(i: number, rows: number): Mismatch {
  const ref = `INV-${String(i).padStart(6, '0')}-${'x'.repeat(50)}`;
  const row = (j: number): LedgerRow => ({
    id: `${i}`.padStart(24, 'a') + j,
    type: j % 2 ? 'REFUND-FLEXY' : 'FLEXY',
    amount: 10_000,
    time: '2026-11-26T10:00:00.000Z',
    objid: `${i}`.padStart(24, 'b'),
  });
  const workflowId = `order:some-client-id:${ref}`;
  return {
    kind: 'refund-of-fulfilled',
    key: workflowId,
    workflowId,
    runId: '0195f3a4-7c1e-7b2a-9c4d-3e5f6a7b8c9d',
    ref,
    client: 'some-client-id',
    orderType: 'mobile_topup',
    status: 'FULFILLED',
    providerReference: `${i}`.padStart(24, 'b'),
    rows: Array.from({ length: rows }, (_, j) => row(j)),
  };
}

describe('the matching hands over a day in chunks (chunkOf)', () => {
  it('5,000 mismatches of 20 rows each: ten chunks, each mismatch once, each chunk far below 2 MB', () => {
    const mismatches = Array.from({ length: 5_000 }, (_, i) => mismatch(i, 20)).sort((a, b) =>
      a.key! < b.key! ? -1 : 1,
    );
    const day: Omit<MatchChunk, 'more'> = {
      orders: 20_000,
      matched: 15_000,
      ledgerRows: 40_000,
      unexplainedRows: 0,
      unexplained: [],
      mismatches,
    };
    // As it would travel before: one result with every mismatch and all its rows.
    assert.ok(JSON.stringify(mismatches).length > TEMPORAL_PAYLOAD_LIMIT);

    const seen: string[] = [];
    let after: string | undefined;
    let chunks = 0;
    for (;;) {
      const chunk = chunkOf(day, after, MISMATCHES_PER_CHUNK);
      chunks++;
      const size = JSON.stringify(chunk).length;
      assert.ok(size < TEMPORAL_PAYLOAD_LIMIT / 2, `chunk ${chunks}: ${size} bytes`);
      assert.ok(chunk.mismatches.every((m) => m.rows.length <= 6));
      assert.equal(chunk.orders, 20_000, 'every chunk carries the day’s counts');
      seen.push(...chunk.mismatches.map((m) => m.key!));
      if (!chunk.more) break;
      after = chunk.mismatches.at(-1)!.key;
    }
    assert.equal(chunks, 10);
    assert.deepEqual(
      seen,
      mismatches.map((m) => m.key),
    );
  });

  it('lists the unexplained rows with the first chunk only, the first 100 of them', () => {
    const rows = Array.from({ length: 250 }, (_, i) => ({
      id: `row-${i}`,
      type: 'FLEXY',
      amount: 100,
      time: '2026-11-26T10:00:00.000Z',
    }));
    const day = {
      orders: 0,
      matched: 0,
      ledgerRows: 250,
      unexplainedRows: 250,
      unexplained: rows,
      mismatches: [mismatch(1, 1), mismatch(2, 1)],
    };
    assert.equal(chunkOf(day, undefined, 1).unexplained.length, 100);
    assert.equal(chunkOf(day, undefined, 1).unexplainedRows, 250);
    assert.equal(chunkOf(day, day.mismatches[0]!.key, 1).unexplained.length, 0);
  });
});
