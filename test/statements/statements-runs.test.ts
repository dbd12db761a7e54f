/**
 * An order whose workflow ID holds more than one run with a final status is counted once, by its
 * latest run (docs/integrators.md "Statements"; docs/contributors.md "The latest run decides"): real orders on a real
 * worker and the sandbox over HTTP — FULFILLED, reopened by the nightly reconciliation as DISPUTED
 * (a new run under the same workflow ID), decided REFUNDED, then reset by an operator — read by a
 * statement that lists every order and by one that reads kept days (its clock moved a day on, so
 * today is a kept day: one summed while the order was FULFILLED must not keep that figure).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { temporal as proto } from '@temporalio/proto';
import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { ClientRegistry } from '../../src/clients/registry';
import { StatementService, type Statement } from '../../src/statements/statement.service';
import { OrderListing } from '../../src/orders/order-list.service';
import { pageTokensFromConfig } from '../../src/orders/page-token';
import type { OrderStatus } from '../../contract/schemas';
import { testClientsFile } from '../helpers/api';
import { FIGURES_MEMO, orderFigures } from '../../src/orders/figures';
import { decideReviewUpdate, orderWorkflowId, type OrderInput, type OrderView } from '../../contract/order';
import {
  RECONCILE_DAY_WORKFLOW,
  reconciliationWorkflowId,
  type ReconciliationReport,
} from '../../contract/reconciliation';
import { mobileRequest, newRef, scaledTimings, waitForView, startOrderAs } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** `client`, its visibility listing each page's runs in reverse order. */
function reversedListing(client: Client): Client {
  const service = new Proxy(client.workflowService, {
    get(target, prop, receiver) {
      if (prop !== 'listWorkflowExecutions') return Reflect.get(target, prop, receiver) as unknown;
      return async (request: Parameters<typeof target.listWorkflowExecutions>[0]) => {
        const response = await target.listWorkflowExecutions(request);
        return { ...response, executions: [...(response.executions ?? [])].reverse() };
      };
    },
  });
  return new Proxy(client, {
    get: (target, prop) => (prop === 'workflowService' ? service : (Reflect.get(target, prop) as unknown)),
  });
}

describe('statements: an order with several final runs is counted once, by its latest run', () => {
  let stack: OrderStack<'main'>;
  const run = randomUUID().slice(0, 8);
  const owner = `runs_${run}`;
  const caller = { id: owner, name: owner, scopes: new Set(['orders:read']), keyId: 'k1' } as never;
  const registry = new ClientRegistry(testClientsFile);
  const today = Math.floor(Date.now() / DAY) * DAY;
  // The whole UTC day; an order of the test's last seconds before midnight is today's all the same.
  const range = { from: new Date(today), to: new Date(today + 2 * DAY - 1) };
  const request = mobileRequest(newRef(`runs-${run}`));
  const workflowId = orderWorkflowId(request.ref, owner);
  let handle: WorkflowHandleWithFirstExecutionRunId;

  before(async () => {
    stack = await startOrderStack({ name: 'statement-runs', workers: { main: {} } });
  });
  after(async () => {
    await stack?.client.workflow
      .getHandle(workflowId)
      .terminate('test done')
      .catch(() => undefined);
    await stack?.stop();
  });

  /** Every order listed (the reference). */
  const listed = () => new StatementService(stack.client, registry).statement(caller, range);
  /** Kept days, as a day and an hour from now: today is a whole past day, summed and kept. */
  const kept = () =>
    new StatementService(stack.client, registry, {
      taskQueue: stack.taskQueues.main,
      now: () => Date.now() + DAY + HOUR,
    }).statement(caller, { from: range.from, to: new Date(today + DAY - 1) });
  /** The statement's lines without dates: what the tests compare. */
  const lines = (statement: Statement) => ({
    days: statement.days.map(({ date: _date, ...line }) => line),
    open: statement.open,
  });
  /** Until visibility shows `count` of the order's runs matching `clause`. */
  const visible = async (clause: string, count: number) => {
    const deadline = Date.now() + 30_000;
    const query = `WorkflowId = '${workflowId}' AND ${clause}`;
    while ((await stack.client.workflow.count(query)).count !== count) {
      assert.ok(Date.now() < deadline, `${count} runs ${clause}`);
      await sleep(200);
    }
  };
  const amount = request.amount!;

  /** Both statements as [status, orders, amount] per line, days and open. */
  const both = async () => {
    const brief = (statement: Statement) => ({
      days: statement.days.map((l) => [l.status, l.orders, l.amount]),
      open: statement.open.map((l) => [l.status, l.orders, l.amount]),
    });
    const all = await listed();
    const fromKept = await kept();
    // Kept or listed, the same lines (dates aside: the kept range is today's).
    assert.deepEqual(lines(fromKept), lines(all));
    return { listed: brief(all), kept: brief(fromKept) };
  };
  /**
   * The order as GET /v1/orders lists it (all, and by each status it had) and as the export scans
   * it (GET /v1/orders/export reads each scanned order's view): [ref, status] rows.
   */
  const listings = async () => {
    const listing = new OrderListing(
      stack.client,
      registry,
      (fn) => fn(),
      pageTokensFromConfig({}).pageTokens,
    );
    const list = async (status?: OrderStatus) =>
      (
        await listing.list(caller, { pageSize: 50, acceptedFrom: range.from, ...(status && { status }) })
      ).orders.map((o) => [o.ref, o.status]);
    // A page at a time, one order a page, from a visibility that lists each page's runs in the
    // reverse of the dev server's order (the list API promises none): an order's earlier run sorts
    // before its latest, and a page cut between them must not lose the order.
    const byOne = new OrderListing(
      reversedListing(stack.client),
      registry,
      (fn) => fn(),
      pageTokensFromConfig({}).pageTokens,
    );
    const paged: unknown[][] = [];
    let pageToken: string | undefined;
    do {
      const page = await byOne.list(caller, {
        pageSize: 1,
        acceptedFrom: range.from,
        ...(pageToken && { pageToken }),
      });
      paged.push(...page.orders.map((o) => [o.ref, o.status]));
      pageToken = page.nextPageToken;
    } while (pageToken);
    const scanned: unknown[][] = [];
    for await (const page of listing.scan(caller, { acceptedFrom: range.from, acceptedTo: range.to }))
      scanned.push(...page.map(({ summary }) => [summary.ref, summary.status]));
    return {
      all: await list(),
      fulfilled: await list('FULFILLED'),
      disputed: await list('DISPUTED'),
      refunded: await list('REFUNDED'),
      paged,
      scanned,
    };
  };
  /** What listings() answers for an order whose latest run is `status`: that run, once. */
  const listedOnceAs = (status: OrderStatus) => ({
    all: [[request.ref, status]],
    fulfilled: status === 'FULFILLED' ? [[request.ref, status]] : [],
    disputed: status === 'DISPUTED' ? [[request.ref, status]] : [],
    refunded: status === 'REFUNDED' ? [[request.ref, status]] : [],
    paged: [[request.ref, status]],
    scanned: [[request.ref, status]],
  });
  const expect = (days: unknown[][], open: unknown[][]) => ({
    listed: { days, open },
    kept: { days, open },
  });

  it('FULFILLED: one order, one line', async () => {
    const input: OrderInput = {
      request,
      acceptedAt: new Date().toISOString(),
      timings: scaledTimings({ reviewWatchMs: 1_500, reviewWatchFirstCheckMs: 200 }),
    };
    handle = await startOrderAs(stack.client, {
      taskQueue: stack.taskQueues.main,
      workflowId,
      input,
      // As the API starts an order for a client: its figures in the memo, its client and acceptance.
      memo: { [FIGURES_MEMO]: orderFigures(request) },
      owner,
    });
    assert.equal(((await handle.result()) as OrderView).status, 'FULFILLED');
    await visible(`ExecutionStatus = 'Completed' AND OrderStatus = 'FULFILLED'`, 1);
    // The kept day is summed now, while the order is FULFILLED.
    assert.deepEqual(await both(), expect([['FULFILLED', 1, amount]], []));
    assert.deepEqual(await listings(), listedOnceAs('FULFILLED'));
  });

  it('reopened by the reconciliation as DISPUTED (a new run): open only, in no day — listed and kept', async () => {
    await stack.sandbox.changeTopup(request.ref, { status: 'REFUNDED' });
    const date = `2004-${String(1 + Math.floor(Math.random() * 12)).padStart(2, '0')}-${String(1 + Math.floor(Math.random() * 28)).padStart(2, '0')}`;
    const reconciliation = await stack.client.workflow.start(RECONCILE_DAY_WORKFLOW, {
      workflowId: `${reconciliationWorkflowId(date)}-${run}`,
      taskQueue: stack.taskQueues.main,
      args: [
        {
          date,
          timeZone: 'UTC',
          from: new Date(today).toISOString(),
          to: new Date(Date.now() + 1).toISOString(),
          lookbackMs: 0,
        },
      ],
    });
    const report = (await reconciliation.result()) as ReconciliationReport;
    assert.equal(report.disputed, 1, JSON.stringify(report));
    await waitForView(stack.client.workflow.getHandle(workflowId), (v) => v.status === 'DISPUTED');
    await visible(`ExecutionStatus = 'Running' AND OrderStatus = 'DISPUTED'`, 1);
    // The FULFILLED run no longer counts; the kept day summed while it did is not trusted.
    assert.deepEqual(await both(), expect([], [['DISPUTED', 1, amount]]));
    // The list and the export: the order once, as its latest run; not under its old status.
    assert.deepEqual(await listings(), listedOnceAs('DISPUTED'));
  });

  it('decided REFUNDED: counted once, REFUNDED, in its watch and once closed — listed and kept', async () => {
    const latest = stack.client.workflow.getHandle(workflowId);
    const decided = await latest.executeUpdate(decideReviewUpdate, {
      args: [{ decision: 'REFUNDED', operator: 'amina', note: 'refunded by the provider' }],
    });
    assert.equal(decided.outcome, 'applied');
    await visible(`OrderStatus = 'REFUNDED'`, 1);
    const refunded = expect([['REFUNDED', 1, amount]], []);
    assert.deepEqual(await both(), refunded);

    assert.equal(((await latest.result()) as OrderView).status, 'REFUNDED');
    await visible(`ExecutionStatus = 'Completed' AND OrderStatus = 'REFUNDED'`, 1);
    // Summed again, then read from the kept day: the same.
    assert.deepEqual(await both(), refunded);
    assert.deepEqual(await both(), refunded);
    assert.deepEqual(await listings(), listedOnceAs('REFUNDED'));
  });

  it('its first run reset by an operator (a third run, which looks the order up: REFUNDED): still once', async () => {
    const first = stack.client.workflow.getHandle(workflowId, handle.firstExecutionRunId);
    const history = (await first.fetchHistory()).events ?? [];
    const firstTaskCompleted = history.find(
      (e) => e.eventType === proto.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    );
    assert.ok(firstTaskCompleted?.eventId);
    const { runId } = await stack.client.workflowService.resetWorkflowExecution({
      namespace: stack.client.options.namespace,
      workflowExecution: { workflowId, runId: handle.firstExecutionRunId },
      reason: 'pressed Reset (first workflow task)',
      workflowTaskFinishEventId: firstTaskCompleted.eventId,
      requestId: randomUUID(),
    });
    const view = (await stack.client.workflow
      .getHandle(workflowId, runId ?? undefined)
      .result()) as OrderView;
    assert.equal(view.status, 'REFUNDED');
    await visible(`ExecutionStatus = 'Completed' AND OrderStatus = 'REFUNDED'`, 2);
    assert.deepEqual(await both(), expect([['REFUNDED', 1, amount]], []));
    assert.deepEqual(await listings(), listedOnceAs('REFUNDED'));
  });
});
