/**
 * A statement read as several listings of disjoint time slices at once (the fast path) has the
 * figures of the straightforward one listing, over the same seeded orders: some completed on the
 * slices' edges, on `from` and on `to`, some open and accepted before the range. Its totals are
 * also checked against a plain sum of what was seeded.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { ClientRegistry } from '../../src/clients/registry';
import { StatementService, type Statement } from '../../src/statements/statement.service';
import { testClientsFile } from '../helpers/api';
import type { OrderStatus } from '../../contract/schemas';
import { OrderClientAttribute, type OrderRequest, type OrderSettlement } from '../../contract/order';
import { seedVisibleOrders, statementMixOrder, terminateOrders } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

interface Seed {
  request: OrderRequest;
  status: OrderStatus;
  acceptedAt: number;
  completedAt?: number;
  settlement?: OrderSettlement;
}

describe('statements: time slices read at once against one listing', () => {
  let stack: OrderStack;
  let client: Client;
  const run = randomUUID().slice(0, 8);
  const owner = `slices-${run}`;
  const caller = { id: owner, name: owner, scopes: new Set(['orders:read']), keyId: 'k1' } as never;
  const from = Date.UTC(2003, 0, 1) + Math.floor(Math.random() * 300) * DAY;
  const to = from + 3 * DAY - 1;
  const range = { from: new Date(from), to: new Date(to) };

  // Times a slicing could miss or count twice: the range's ends and, for 2 to 7 slices, each edge
  // and the millisecond before it; then times spread over the range and the day after it.
  const edges = [from, to, to + 1, from - 1];
  for (let slices = 2; slices <= 7; slices++) {
    const step = Math.ceil((to - from + 1) / slices);
    for (let i = 1; i < slices; i++) edges.push(from + i * step, from + i * step - 1);
  }
  const times = [...edges, ...Array.from({ length: 80 }, (_, i) => from + Math.floor((i / 70) * 3.5 * DAY))];
  const statuses: OrderStatus[] = [
    'FULFILLED',
    'REFUNDED',
    'PARTIALLY_FULFILLED',
    'FAILED',
    'NEEDS_REVIEW',
    'PROCESSING',
  ];
  const seeds: Seed[] = times.map((time, i) => {
    const ref = `SLICE-${run}-${i}`;
    const { request, status, open, settlement } = statementMixOrder(i, ref, statuses);
    return {
      request,
      status,
      // Open orders are listed by acceptance: those at the edges are accepted there.
      acceptedAt: open ? time : time - HOUR,
      ...(open ? {} : { completedAt: time }),
      ...(settlement && { settlement }),
    };
  });

  before(async () => {
    stack = await startOrderStack({ name: 'statements-slices', sandbox: false });
    client = stack.client;
    await seedVisibleOrders(
      client,
      seeds.map((seed) => ({
        taskQueue: `statement-slices-${run}`,
        owner,
        request: seed.request,
        status: seed.status,
        acceptedAt: new Date(seed.acceptedAt),
        ...(seed.completedAt !== undefined && { completedAt: new Date(seed.completedAt) }),
        figures: true,
        ...(seed.settlement && { settlement: seed.settlement }),
      })),
      async () => (await client.workflow.count(`${OrderClientAttribute.name} = '${owner}'`)).count,
    );
  });

  after(async () => {
    await terminateOrders(
      client,
      seeds.map((s) => s.request.ref),
      owner,
    );
    await stack?.stop();
  });

  const statement = (slices: number) =>
    new StatementService(client, new ClientRegistry(testClientsFile), { slices }).statement(caller, range);
  const total = (s: Statement, field: 'orders' | 'debited' | 'debitUnrecorded') =>
    [...s.days, ...s.open].reduce((sum, line) => sum + (line[field] ?? 0), 0);

  it('one listing sums what was seeded: every order in the range once, the debits, the open ones', async () => {
    const one = await statement(1);
    const inRange = seeds.filter((s) =>
      s.completedAt === undefined ? s.acceptedAt <= to : s.completedAt >= from && s.completedAt <= to,
    );
    assert.equal(total(one, 'orders'), inRange.length);
    const debited = inRange.reduce((sum, s) => sum + (s.settlement?.debit?.amount ?? 0), 0);
    assert.equal(total(one, 'debited'), Math.round(debited * 100) / 100);
    const settled = ['FULFILLED', 'PARTIALLY_FULFILLED', 'REFUNDED'];
    assert.equal(
      total(one, 'debitUnrecorded'),
      inRange.filter((s) => settled.includes(s.status) && !s.settlement?.debit).length,
    );
    assert.equal(
      one.open.reduce((sum, line) => sum + line.orders, 0),
      inRange.filter((s) => s.completedAt === undefined).length,
    );
  });

  it('2, 4 and 7 slices at once give the same statement as one listing', async () => {
    const one = await statement(1);
    for (const slices of [2, 4, 7]) assert.deepEqual(await statement(slices), one, `${slices} slices`);
  });
});
