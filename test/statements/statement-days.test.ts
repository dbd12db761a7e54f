/**
 * A kept day's check against later runs (src/statements/statement-days.ts), on a real Temporal server:
 * a later run the summing could not see (visibility late, clocks apart) is caught all the same, and
 * a day the nightly run finds unchanged after a later run is rewritten so the next statement
 * trusts it instead of summing it again.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { StatementDays } from '../../src/statements/statement-days';
import { OrderClientAttribute, orderWorkflowId } from '../../contract/order';
import type { StatementDaySummary } from '../../contract/statement';
import { mobileRequest, seedListedOrder } from '../helpers/orders';
import { connectTestClient } from '../helpers/temporal';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe('statement days: later runs since a day was summed', () => {
  let client: Client;
  let closeTemporal: (() => Promise<void>) | undefined;
  const run = randomUUID().slice(0, 8);
  const owner = `days_${run}`;
  const taskQueue = `statement-days-${run}`;
  const refs: string[] = [];

  before(async () => {
    ({ client, close: closeTemporal } = await connectTestClient());
  });
  after(async () => {
    await Promise.allSettled(
      refs.map((ref) => client.workflow.getHandle(orderWorkflowId(ref, owner)).terminate('test done')),
    );
    await closeTemporal?.();
  });

  /** A closed FULFILLED run accepted an hour before `completedAt` (a new run when the ref exists). */
  const closedOrder = async (ref: string, completedAt: number) => {
    refs.push(ref);
    const handle = await seedListedOrder(client, {
      taskQueue,
      owner,
      request: mobileRequest(ref),
      status: 'FULFILLED',
      acceptedAt: new Date(completedAt - HOUR),
      completedAt: new Date(completedAt),
    });
    await handle.terminate('seeded closed');
  };
  /** A later run of `ref` (accepted at `acceptedAt`), reopened as DISPUTED: open. */
  const reopened = async (ref: string, acceptedAt: number) => {
    await seedListedOrder(client, {
      taskQueue,
      owner,
      request: mobileRequest(ref),
      status: 'DISPUTED',
      acceptedAt: new Date(acceptedAt),
    });
  };
  const visible = async (clause: string, count: number) => {
    const deadline = Date.now() + 30_000;
    const query = `${OrderClientAttribute.name} = '${owner}' AND ${clause}`;
    while ((await client.workflow.count(query)).count !== count) {
      assert.ok(Date.now() < deadline, `${count} runs ${clause}`);
      await sleep(200);
    }
  };
  const randomDay = (year: number) => Date.UTC(year, 0, 1) + Math.floor(Math.random() * 300) * DAY;

  it('a later run started shortly before the summing but not seen by it is caught by the check', async () => {
    const day = randomDay(2003);
    const ref = `LAG-${run}`;
    await closedOrder(ref, day + 10 * HOUR);
    await visible(`ExecutionStatus = 'Terminated' AND WorkflowId = '${orderWorkflowId(ref, owner)}'`, 1);
    const days = new StatementDays(client, taskQueue);
    const [summed] = await days.sum(day, day + DAY, owner);
    assert.equal(summed?.orders, 1);
    // The order reopens; a summing that began a few seconds after (its clock ahead of the
    // server's, or the run not yet visible to it) summed the FULFILLED run all the same.
    await reopened(ref, day + 9 * HOUR);
    await visible(`ExecutionStatus = 'Running' AND WorkflowId = '${orderWorkflowId(ref, owner)}'`, 1);
    const lagged: StatementDaySummary = {
      ...summed!,
      computedAt: new Date(Date.now() + 5_000).toISOString(),
    };
    assert.deepEqual(await days.stillValid([lagged]), [], 'the reopened order’s day is summed again');
    // Once the margin has passed, the same run no longer counts against a summary.
    const later = { ...summed!, computedAt: new Date(Date.now() + 120_000).toISOString() };
    assert.deepEqual(await days.stillValid([later]), [later]);
  });

  it('a day the nightly run finds unchanged after a later run of an older order is rewritten, then trusted', async () => {
    const day = randomDay(2004);
    const [inDay, older] = [`DAY-${run}`, `OLDER-${run}`];
    await closedOrder(inDay, day + 12 * HOUR);
    // Accepted (and completed) the day before: accepted by the day's end, so its later runs count.
    await closedOrder(older, day - 12 * HOUR);
    const ids = [inDay, older].map((ref) => `'${orderWorkflowId(ref, owner)}'`).join(', ');
    await visible(`ExecutionStatus = 'Terminated' AND WorkflowId IN (${ids})`, 2);
    // No margin: the later run below is not "just before" the second summing.
    const days = new StatementDays(client, taskQueue, 0);
    const nightly = () => days.summarizeRecentDays(day + DAY + HOUR, 1);
    const keptDay = async () =>
      (await days.stored([owner], [new Date(day).toISOString().slice(0, 10)])).values().next().value;

    assert.equal((await nightly()).written, 1);
    const first = await waitFor(keptDay);
    await reopened(older, day - 13 * HOUR);
    await visible(`ExecutionStatus = 'Running' AND WorkflowId IN (${ids})`, 1);
    assert.deepEqual(await days.stillValid([first]), [], 'the later run fails the first summary’s check');

    // The nightly run: the day's figures are the same, but its summary is written again as of now.
    const report = await nightly();
    assert.equal(report.written + report.unchanged, 1, JSON.stringify(report));
    const deadline = Date.now() + 15_000;
    for (;;) {
      const kept = await keptDay();
      if (kept && (await days.stillValid([kept])).length === 1) {
        assert.deepEqual({ ...kept, computedAt: '' }, { ...first, computedAt: '' }, 'same figures');
        break;
      }
      assert.ok(Date.now() < deadline, 'the next statement trusts the day (no summing again)');
      await sleep(300);
    }
  });
});

async function waitFor<T>(read: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    assert.ok(Date.now() < deadline, 'a kept day');
    await new Promise((r) => setTimeout(r, 200));
  }
}
