/**
 * The nightly precompute of statements' closed days, end to end: the Schedule as
 * `npm run temporal:setup` creates it, triggered, run by a real worker, keeps each client's days;
 * the kept days' workflows end at once on that worker; a statement over those days then reads them
 * and has the figures of listing every order.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ClientRegistry } from '../../src/clients/registry';
import { StatementService } from '../../src/statements/statement.service';
import { testClientsFile } from '../helpers/api';
import { StatementDays } from '../../src/statements/statement-days';
import { ensureStatementDaysSchedule } from '../../src/statements/statement-days.schedule';
import { orderWorkflowId } from '../../contract/order';
import {
  STATEMENT_DAY_WORKFLOW,
  statementDayWorkflowId,
  type StatementDaysReport,
} from '../../contract/statement';
import { mobileRequest, seedListedOrder } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const DAY = 86_400_000;
const date = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe('the nightly precompute of statements’ days (Schedule)', () => {
  let stack: OrderStack<'main'>;
  const run = randomUUID().slice(0, 8);
  const owner = `nightly_${run}`;
  const refs: string[] = [];

  before(async () => {
    stack = await startOrderStack({ name: 'statement-days', workers: { main: {} } });
  });
  after(async () => {
    await Promise.allSettled(
      refs.map((ref) => stack.client.workflow.getHandle(orderWorkflowId(ref, owner)).terminate('test done')),
    );
    await stack?.stop();
  });

  it('created by the setup, updated when it exists; a run keeps the last three days of every client, and a statement reads them', async () => {
    const today = Math.floor(Date.now() / DAY) * DAY;
    const [twoDaysAgo, yesterday] = [today - 2 * DAY, today - DAY];
    // Closed orders of this client two days ago (3) and yesterday (2), in the days' first hour.
    for (const [i, completedAt] of [twoDaysAgo, twoDaysAgo, twoDaysAgo, yesterday, yesterday].entries()) {
      const request = { ...mobileRequest(`NIGHT-${run}-${i}`), amount: 100 * (i + 1) };
      refs.push(request.ref);
      const handle = await seedListedOrder(stack.client, {
        taskQueue: `statement-days-orders-${run}`,
        owner,
        request,
        status: 'FULFILLED',
        acceptedAt: new Date(completedAt + 60_000),
        completedAt: new Date(completedAt + 120_000 + i),
        figures: true,
        settlement: { debit: { amount: 90 * (i + 1), source: 'balance_amount' } },
      });
      await handle.terminate('closed');
    }
    for (const deadline = Date.now() + 30_000; ; await sleep(200)) {
      const { count } = await stack.client.workflow.count(
        `OrderClient = '${owner}' AND ExecutionStatus = 'Terminated'`,
      );
      if (count === 5) break;
      assert.ok(Date.now() < deadline, 'the orders are visible');
    }

    const scheduleId = `statement-days-test-${run}`;
    const options = { taskQueue: stack.taskQueues.main, scheduleId };
    assert.equal(await ensureStatementDaysSchedule(stack.client, { ...options, at: '00:30' }), 'created');
    assert.equal(await ensureStatementDaysSchedule(stack.client, { ...options, at: '01:15' }), 'updated');
    const schedule = stack.client.schedule.getHandle(scheduleId);
    try {
      const described = await schedule.describe();
      assert.equal(described.spec.timezone, 'UTC');
      assert.deepEqual(
        described.spec.calendars?.map((c) => [c.hour, c.minute]),
        [[[{ start: 1, end: 1, step: 1 }], [{ start: 15, end: 15, step: 1 }]]],
      );
      await schedule.trigger();
      let workflowId: string | undefined;
      for (const deadline = Date.now() + 30_000; !workflowId; await sleep(200)) {
        assert.ok(Date.now() < deadline, 'the Schedule started its workflow');
        const action = (await schedule.describe()).info.recentActions.at(-1)?.action;
        workflowId = action?.type === 'startWorkflow' ? action.workflow.workflowId : undefined;
      }
      const report = (await stack.client.workflow.getHandle(workflowId).result()) as StatementDaysReport;
      assert.deepEqual(report.dates, [date(today - 3 * DAY), date(twoDaysAgo), date(yesterday)]);
      assert.ok(report.orders >= 5, JSON.stringify(report));

      const days = new StatementDays(stack.client, stack.taskQueues.main);
      const keptOrders = async () => {
        const kept = await days.stored([owner], [date(twoDaysAgo), date(yesterday)]);
        return [twoDaysAgo, yesterday].map(
          (day) => kept.get(statementDayWorkflowId(owner, date(day)))?.orders,
        );
      };
      // The kept days are listed by visibility a moment after the run that wrote them.
      let orders = await keptOrders();
      for (
        const deadline = Date.now() + 30_000;
        (orders[0] !== 3 || orders[1] !== 2) && Date.now() < deadline;
      )
        orders = await sleep(200).then(keptOrders);
      assert.deepEqual(orders, [3, 2]);
      // Each kept day's workflow ended at once on the worker.
      for (const day of [twoDaysAgo, yesterday]) {
        const handle = stack.client.workflow.getHandle(statementDayWorkflowId(owner, date(day)));
        assert.equal(await handle.result(), undefined);
        assert.equal((await handle.describe()).type, STATEMENT_DAY_WORKFLOW);
      }

      const caller = { id: owner, name: owner, scopes: new Set(['orders:read']), keyId: 'k1' } as never;
      const range = { from: new Date(twoDaysAgo), to: new Date(today - 1) };
      const registry = new ClientRegistry(testClientsFile);
      const statement = await new StatementService(stack.client, registry, {
        taskQueue: stack.taskQueues.main,
        // Orders of past days seeded seconds ago: within the margin they count as later runs.
        laterRunsMarginMs: 0,
      }).statement(caller, range);
      assert.deepEqual(
        statement,
        await new StatementService(stack.client, registry).statement(caller, range),
      );
      assert.deepEqual(
        statement.days.map((line) => [line.date, line.orders, line.amount, line.debited]),
        [
          [date(twoDaysAgo), 3, 600, 540],
          [date(yesterday), 2, 900, 810],
        ],
      );
    } finally {
      await schedule.delete();
    }
  });

  it('created on a deployment with past days: backfilled (a run per night of the last days, one at a time), so a statement finds them kept; updated, not again', async () => {
    const today = Math.floor(Date.now() / DAY) * DAY;
    const backfillOwner = `backfill_${run}`;
    // Closed orders 6, 5 and 2 days ago: older than the nightly run's three days.
    const orderDays = [today - 6 * DAY, today - 5 * DAY, today - 5 * DAY, today - 2 * DAY];
    for (const [i, day] of orderDays.entries()) {
      const request = { ...mobileRequest(`FILL-${run}-${i}`), amount: 100 * (i + 1) };
      const handle = await seedListedOrder(stack.client, {
        taskQueue: `statement-days-orders-${run}`,
        owner: backfillOwner,
        request,
        status: 'FULFILLED',
        acceptedAt: new Date(day + 60_000),
        completedAt: new Date(day + 120_000 + i),
        figures: true,
      });
      await handle.terminate('closed');
    }
    for (const deadline = Date.now() + 30_000; ; await sleep(200)) {
      const { count } = await stack.client.workflow.count(
        `OrderClient = '${backfillOwner}' AND ExecutionStatus = 'Terminated'`,
      );
      if (count === orderDays.length) break;
      assert.ok(Date.now() < deadline, 'the orders are visible');
    }

    const scheduleId = `statement-days-backfill-${run}`;
    const options = { taskQueue: stack.taskQueues.main, scheduleId, at: '00:30', backfillDays: 7 };
    const schedule = stack.client.schedule.getHandle(scheduleId);
    try {
      assert.equal(await ensureStatementDaysSchedule(stack.client, options), 'created');
      const wanted = [6, 5, 2].map((n) => date(today - n * DAY));
      const days = new StatementDays(stack.client, stack.taskQueues.main);
      for (const deadline = Date.now() + 120_000; ; await sleep(500)) {
        const kept = await days.stored([backfillOwner], wanted);
        if (kept.size === wanted.length) break;
        assert.ok(Date.now() < deadline, `kept days by the backfill: ${[...kept.keys()].join(', ')}`);
      }
      // Temporal's backfill: one run per night in the last 7 days, each with its night's time.
      const actions = (await schedule.describe()).info.recentActions;
      assert.ok(actions.length >= 6, `${actions.length} runs`);
      assert.ok(
        actions.every((a) => a.scheduledAt.getUTCHours() === 0 && a.scheduledAt.getUTCMinutes() === 30),
        JSON.stringify(actions.map((a) => a.scheduledAt)),
      );

      const caller = {
        id: backfillOwner,
        name: backfillOwner,
        scopes: new Set(['orders:read']),
        keyId: 'k1',
      } as never;
      const range = { from: new Date(today - 7 * DAY), to: new Date(today - 1) };
      const registry = new ClientRegistry(testClientsFile);
      const before = (await listKeptRuns(backfillOwner, wanted)).length;
      const statement = await new StatementService(stack.client, registry, {
        taskQueue: stack.taskQueues.main,
        // Orders of past days seeded seconds ago: within the margin they count as later runs.
        laterRunsMarginMs: 0,
      }).statement(caller, range);
      assert.deepEqual(
        statement,
        await new StatementService(stack.client, registry).statement(caller, range),
      );
      assert.deepEqual(
        statement.days.map((line) => [line.date, line.orders, line.amount]),
        [
          [date(today - 6 * DAY), 1, 100],
          [date(today - 5 * DAY), 2, 500],
          [date(today - 2 * DAY), 1, 400],
        ],
      );
      await sleep(500);
      // The days with orders were read as kept; the days without (none kept: a night writes a
      // client's day only where it has orders) were summed, each an empty listing.
      assert.equal(
        (await listKeptRuns(backfillOwner, wanted)).length,
        before,
        'no day with orders summed again',
      );

      // Updated at the next start: no second backfill.
      const runs = (await schedule.describe()).info.numActionsTaken;
      assert.equal(await ensureStatementDaysSchedule(stack.client, options), 'updated');
      await sleep(1_000);
      assert.equal((await schedule.describe()).info.numActionsTaken, runs);
    } finally {
      await schedule.delete();
    }
  });

  /** The runs of a client's kept days of `dates` (each summing writes a new run). */
  async function listKeptRuns(owner: string, dates: string[]): Promise<string[]> {
    const ids = dates.map((d) => `'${statementDayWorkflowId(owner, d)}'`);
    const runs: string[] = [];
    for await (const execution of stack.client.workflow.list({
      query: `WorkflowType = '${STATEMENT_DAY_WORKFLOW}' AND WorkflowId IN (${ids.join(', ')})`,
    }))
      runs.push(execution.runId);
    return runs;
  }
});
