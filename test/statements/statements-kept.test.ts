/**
 * Kept days (src/statements/statement-days.ts): a statement that reads whole past days from their
 * kept summaries has the figures of one that lists every order (the slow path), over the same
 * seeded orders — cold (nothing kept), warm (all kept), after closed runs enter a kept day and
 * after one leaves it, and after the nightly precompute wrote the days. Orders are closed
 * (terminated after they are seeded, as most orders end) or still running with a final status (a
 * watch after a decision), some in review; the range starts and ends inside a day.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { ClientRegistry } from '../../src/clients/registry';
import { StatementService, type Statement } from '../../src/statements/statement.service';
import { testClientsFile } from '../helpers/api';
import { StatementDays } from '../../src/statements/statement-days';
import type { OrderStatus } from '../../contract/schemas';
import {
  OrderClientAttribute,
  orderWorkflowId,
  type OrderRequest,
  type OrderSettlement,
} from '../../contract/order';
import {
  STATEMENT_DAY_MEMO,
  STATEMENT_DAY_WORKFLOW,
  statementDayWorkflowId,
  type StatementDaySummary,
} from '../../contract/statement';
import { seedListedOrder, statementMixOrder } from '../helpers/orders';
import { connectTestClient } from '../helpers/temporal';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const date = (ms: number) => new Date(ms).toISOString().slice(0, 10);

interface Seed {
  ref: string;
  request: OrderRequest;
  status: OrderStatus;
  acceptedAt: number;
  completedAt?: number;
  settlement?: OrderSettlement;
  /** Terminated once seeded: a closed run, as most orders end. */
  closed: boolean;
}

describe('statements: kept days against listing every order', () => {
  let client: Client;
  let closeTemporal: (() => Promise<void>) | undefined;
  const run = randomUUID().slice(0, 8);
  const owner = `kept_${run}`;
  const taskQueue = `statement-kept-${run}`;
  const caller = { id: owner, name: owner, scopes: new Set(['orders:read']), keyId: 'k1' } as never;
  const day0 = Date.UTC(2002, 0, 1) + Math.floor(Math.random() * 300) * DAY;
  const [day1, day2, day3] = [day0 + DAY, day0 + 2 * DAY, day0 + 3 * DAY];
  // Starts and ends inside a day: day0's evening and day3's morning are listed live, day1 and day2 kept.
  const range = { from: new Date(day0 + 18 * HOUR), to: new Date(day3 + 6 * HOUR) };
  const statuses: OrderStatus[] = ['FULFILLED', 'REFUNDED', 'PARTIALLY_FULFILLED', 'FAILED', 'NEEDS_REVIEW'];
  let n = 0;
  const seedOf = (time: number, closed: boolean): Seed => {
    const i = n++;
    const ref = `KEPT-${run}-${i}`;
    const { request, status, open, settlement } = statementMixOrder(i, ref, statuses);
    return {
      ref,
      request,
      status,
      acceptedAt: open ? time : time - HOUR,
      ...(open ? {} : { completedAt: time }),
      ...(settlement && { settlement }),
      // An open order's run is running.
      closed: closed && !open,
    };
  };
  // Every 50 minutes from day0 to the end of day3, every third one still running; and the day's edges.
  const times = Array.from({ length: 116 }, (_, i) => day0 + i * 50 * 60_000);
  const edges = [day1, day1 - 1, day2, day2 - 1, day3, day3 - 1, range.from.getTime(), range.to.getTime()];
  const seeds: Seed[] = [...times, ...edges].map((time, i) => seedOf(time, i % 3 !== 0));

  const seed = async (orders: Seed[]) => {
    await Promise.all(
      orders.map(async (order) => {
        const handle = await seedListedOrder(client, {
          taskQueue,
          owner,
          request: order.request,
          status: order.status,
          acceptedAt: new Date(order.acceptedAt),
          ...(order.completedAt !== undefined && { completedAt: new Date(order.completedAt) }),
          figures: true,
          ...(order.settlement && { settlement: order.settlement }),
        });
        if (order.closed) await handle.terminate('seeded closed');
      }),
    );
  };
  /** Until visibility shows `count` runs of the owner matching `clause`. */
  const visible = async (clause: string, count: number, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    const query = `${OrderClientAttribute.name} = '${owner}' AND ${clause}`;
    while ((await client.workflow.count(query)).count !== count) {
      assert.ok(Date.now() < deadline, `${count} runs ${clause}`);
      await sleep(200);
    }
  };
  const runningCount = () => seeds.filter((s) => !s.closed).length;

  before(async () => {
    ({ client, close: closeTemporal } = await connectTestClient());
    await seed(seeds);
    await visible(`ExecutionStatus = 'Running'`, runningCount());
    await visible(`ExecutionStatus = 'Terminated'`, seeds.length - runningCount());
  });

  after(async () => {
    await Promise.allSettled(
      seeds.map((s) => client.workflow.getHandle(orderWorkflowId(s.ref, owner)).terminate('test done')),
    );
    await closeTemporal?.();
  });

  const registry = new ClientRegistry(testClientsFile);
  // No margin before a summary's computedAt (LATER_RUNS_MARGIN_MS): the orders here are of past
  // days but seeded seconds before they are summed, and would count as later runs for a minute.
  const slow = () => new StatementService(client, registry).statement(caller, range);
  const kept = () =>
    new StatementService(client, registry, { taskQueue, laterRunsMarginMs: 0 }).statement(caller, range);
  const keptIds = [day1, day2].map((day) => statementDayWorkflowId(owner, date(day)));
  /** The runs of the kept days' workflows, newest summary of each day. */
  const summaries = async () => {
    const query = `WorkflowType = '${STATEMENT_DAY_WORKFLOW}' AND WorkflowId IN (${keptIds.map((id) => `'${id}'`).join(', ')})`;
    const runs: StatementDaySummary[] = [];
    for await (const execution of client.workflow.list({ query }))
      runs.push(execution.memo?.[STATEMENT_DAY_MEMO] as StatementDaySummary);
    return runs;
  };
  const waitForRuns = async (count: number) => {
    const deadline = Date.now() + 30_000;
    while ((await summaries()).length !== count) {
      assert.ok(Date.now() < deadline, `${count} kept-day runs`);
      await sleep(200);
    }
  };
  const totalOrders = (s: Statement) => s.days.reduce((sum, line) => sum + line.orders, 0);

  it('cold: nothing kept, the days are summed, kept, and the statement is the slow one', async () => {
    assert.deepEqual(await summaries(), []);
    const expected = await slow();
    assert.ok(totalOrders(expected) > 50, `${totalOrders(expected)} orders`);
    assert.ok(expected.open.length > 0);
    assert.deepEqual(await kept(), expected);
    await waitForRuns(2);
    const byDate = new Map((await summaries()).map((s) => [s.date, s]));
    assert.deepEqual([...byDate.keys()].sort(), [date(day1), date(day2)]);
    // Only the closed runs are kept: the running ones of those days are read live.
    const closedOf = (day: number) =>
      seeds.filter(
        (s) => s.closed && s.completedAt !== undefined && s.completedAt >= day && s.completedAt < day + DAY,
      );
    assert.equal(byDate.get(date(day1))!.orders, closedOf(day1).length);
    assert.equal(byDate.get(date(day2))!.orders, closedOf(day2).length);
  });

  it('warm: the kept days are read, not summed again, and the figures are the same', async () => {
    await waitForRuns(2);
    assert.deepEqual(await kept(), await slow());
    await sleep(500);
    assert.equal((await summaries()).length, 2, 'no day summed again');
  });

  it('a kept day whose count still matches is trusted as kept: the figures come from the summary', async () => {
    // A summary with the right count and other figures stands for the day: proof the day was not listed.
    const stored = (await summaries()).find((s) => s.date === date(day1))!;
    const forged: StatementDaySummary = {
      ...stored,
      lines: [{ type: 'mobile_topup', status: 'FULFILLED', orders: 1, amount: 1 }],
      computedAt: new Date().toISOString(),
    };
    await new StatementDays(client, taskQueue, 0).store([forged]);
    await waitForRuns(3);
    const statement = await kept();
    const day1Lines = statement.days.filter((line) => line.date === date(day1));
    const running = (await slow()).days.filter((line) => line.date === date(day1));
    assert.ok(
      day1Lines.some(
        (line) => line.type === 'mobile_topup' && line.status === 'FULFILLED' && line.amount !== undefined,
      ),
    );
    assert.notDeepEqual(day1Lines, running, 'the forged summary was read');
    // Summed again from the orders, the day is right again.
    const [summed] = await new StatementDays(client, taskQueue, 0).sum(day1, day1 + DAY, owner);
    await new StatementDays(client, taskQueue, 0).store([summed!]);
    await waitForRuns(4);
    assert.deepEqual(await kept(), await slow());
  });

  it('closed runs enter kept days (a watch closes, an order closed late): the count sees it, the days are summed again', async () => {
    const before = await summaries();
    // Two runs still open with a final status in day1 and day2 close; one new closed order in day2.
    const closing = seeds.filter(
      (s) => !s.closed && s.completedAt !== undefined && s.completedAt >= day1 && s.completedAt < day3,
    );
    const closeOne = (day: number) =>
      closing.find((s) => s.completedAt! >= day && s.completedAt! < day + DAY)!;
    for (const order of [closeOne(day1), closeOne(day2)]) {
      await client.workflow.getHandle(orderWorkflowId(order.ref, owner)).terminate('the watch ends');
      order.closed = true;
    }
    const late = seedOf(day2 + 7 * HOUR, true);
    late.status = 'FULFILLED';
    late.closed = true;
    seeds.push(late);
    await seed([late]);
    await visible(`ExecutionStatus = 'Running'`, runningCount());
    const expected = await slow();
    assert.deepEqual(await kept(), expected);
    await waitForRuns(before.length + 2);
    assert.deepEqual(await kept(), expected);
  });

  it('a closed run leaves a kept day (deleted): the count sees it, the day is summed again', async () => {
    const before = await summaries();
    const leaving = seeds.find(
      (s) => s.closed && s.completedAt !== undefined && s.completedAt >= day2 + HOUR && s.completedAt < day3,
    )!;
    const description = await client.workflow.getHandle(orderWorkflowId(leaving.ref, owner)).describe();
    await client.workflowService.deleteWorkflowExecution({
      namespace: client.options.namespace,
      workflowExecution: { workflowId: description.workflowId, runId: description.runId },
    });
    seeds.splice(seeds.indexOf(leaving), 1);
    // The dev server removes a deleted run from visibility in a task of its own: tens of seconds.
    await visible(`ExecutionStatus = 'Terminated'`, seeds.filter((s) => s.closed).length, 120_000);
    const expected = await slow();
    assert.deepEqual(await kept(), expected);
    await waitForRuns(before.length + 1);
    assert.deepEqual(await kept(), expected);
  });

  it('the default client: its orders and those with no client are kept apart (two keys) and summed together', async () => {
    const shop = { id: 'shop', name: 'shop', scopes: new Set(['orders:read']), keyId: 'k1' } as never;
    const day = Date.UTC(2001, 0, 1) + Math.floor(Math.random() * 300) * DAY;
    const shopRange = { from: new Date(day), to: new Date(day + DAY - 1) };
    const orders = [0, 1, 2, 3].map((i) => ({
      ...seedOf(day + (i + 1) * HOUR, true),
      status: 'FULFILLED' as const,
      closed: true,
    }));
    const handles = await Promise.all(
      orders.map(async (order, i) => {
        const handle = await seedListedOrder(client, {
          taskQueue,
          owner: 'shop',
          request: order.request,
          status: order.status,
          acceptedAt: new Date(order.acceptedAt),
          completedAt: new Date(order.completedAt!),
          figures: true,
          ...(order.settlement && { settlement: order.settlement }),
          // The first two as before clients: no OrderClient.
          ...(i < 2 && { noClient: true }),
        });
        await handle.terminate('seeded closed');
        return handle;
      }),
    );
    assert.equal(handles.length, 4);
    const closedQuery = `ExecutionStatus = 'Terminated' AND CompletedAt >= '${shopRange.from.toISOString()}' AND CompletedAt < '${new Date(day + DAY).toISOString()}'`;
    for (const deadline = Date.now() + 30_000; ; await sleep(200)) {
      const { count } = await client.workflow.count(
        `${closedQuery} AND (OrderClient = 'shop' OR OrderClient IS NULL)`,
      );
      if (count === 4) break;
      assert.ok(Date.now() < deadline, 'the orders are visible');
    }
    const registry = new ClientRegistry(testClientsFile);
    const expected = await new StatementService(client, registry).statement(shop, shopRange);
    assert.equal(totalOrders(expected), 4);
    assert.deepEqual(
      await new StatementService(client, registry, { taskQueue, laterRunsMarginMs: 0 }).statement(
        shop,
        shopRange,
      ),
      expected,
    );
    // The statement stored the two keys' days; visibility lists them a moment later.
    let keptDays = await new StatementDays(client, taskQueue, 0).stored(['shop', '-'], [date(day)]);
    for (const deadline = Date.now() + 30_000; keptDays.size < 2 && Date.now() < deadline; await sleep(200))
      keptDays = await new StatementDays(client, taskQueue, 0).stored(['shop', '-'], [date(day)]);
    assert.deepEqual([...keptDays.values()].map((summary) => [summary.key, summary.orders]).sort(), [
      ['-', 2],
      ['shop', 2],
    ]);
    assert.deepEqual(
      await new StatementService(client, registry, { taskQueue, laterRunsMarginMs: 0 }).statement(
        shop,
        shopRange,
      ),
      expected,
    );
  });

  it('the nightly precompute sums the last days for every client; a statement then sums none', async () => {
    const days = new StatementDays(client, taskQueue, 0);
    // As if the night after day3: day1 and day2 are up to date (unchanged), day0 and day3 new.
    const report = await days.summarizeRecentDays(day3 + DAY + 30 * 60_000, 3);
    assert.deepEqual(report.dates, [date(day1), date(day2), date(day3)]);
    assert.ok(report.written >= 1, JSON.stringify(report));
    const closedIn = (day: number) =>
      seeds.filter(
        (s) => s.closed && s.completedAt !== undefined && s.completedAt >= day && s.completedAt < day + DAY,
      ).length;
    const summedAsClosed = (stored: Map<string, StatementDaySummary>) =>
      [day1, day2, day3].map((day) => stored.get(statementDayWorkflowId(owner, date(day)))?.orders);
    // The days it wrote are listed by visibility a moment later.
    let mine = await days.stored([owner], [date(day1), date(day2), date(day3)]);
    for (
      const deadline = Date.now() + 30_000;
      summedAsClosed(mine).some((orders, i) => orders !== closedIn([day1, day2, day3][i]!)) &&
      Date.now() < deadline;
      await sleep(200)
    )
      mine = await days.stored([owner], [date(day1), date(day2), date(day3)]);
    assert.equal(mine.size, 3);
    assert.deepEqual(summedAsClosed(mine), [closedIn(day1), closedIn(day2), closedIn(day3)]);
    const runs = (await summaries()).length;
    assert.deepEqual(await kept(), await slow());
    await sleep(500);
    assert.equal((await summaries()).length, runs, 'the statement summed no day again');
  });
});
