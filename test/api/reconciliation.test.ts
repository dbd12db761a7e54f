/**
 * The nightly reconciliation end to end: a real Temporal dev server, a real worker, the sandbox's
 * ledger over HTTP and the API's GET /v1/reconciliations/{date}. Each test reconciles a window of
 * its own (the orders it made), under a date of its own, so the tests do not see each other's rows.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import type { Problem } from '../../src/api/errors';
import { testClients } from '../../src/api/testing';
import type { ReconciliationAnswer } from '../../src/api/reconciliations';
import { decideReviewUpdate, orderWorkflowId, type OrderView } from '../../contract/order';
import {
  RECONCILE_DAY_WORKFLOW,
  reconciliationWorkflowId,
  type ReconcileDayInput,
  type ReconciliationReport,
} from '../../contract/reconciliation';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { providerRefFor } from '../../src/orders/provider-ref';
import { reconciliationDayOf, previousDay } from '../../activities/reconciliation';
import { mobileRequest, newRef, scaledTimings, startOrder, waitForView } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';
import { ensureReconciliationSchedule } from '../../src/temporal/reconciliation-schedule';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { historiesDir, historyToJson } from '../helpers/histories';

/**
 * With RECORD_RECONCILIATION_HISTORIES=1, writes a run's history as a replay fixture
 * (test/fixtures/histories/reconciliation-<name>.json; docs/contributors.md "Changing a workflow safely").
 */
async function recordFixture(name: string, handle: WorkflowHandle): Promise<void> {
  if (process.env.RECORD_RECONCILIATION_HISTORIES !== '1') return;
  writeFileSync(
    join(historiesDir, `reconciliation-${name}.json`),
    historyToJson(await handle.fetchHistory()),
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const key = (client: keyof typeof testClients) => ({ apiKey: testClients[client].key });

describe('the nightly reconciliation against the provider ledger', () => {
  let stack: OrderStack<'main'>;
  const run = randomUUID().slice(0, 6);
  const started: string[] = [];

  before(async () => {
    stack = await startOrderStack({
      name: 'reconcile',
      workers: { main: {} },
      // Orders through the API: a decision the provider has not confirmed is watched for 1.5 s.
      api: { timingsFor: () => scaledTimings({ reviewWatchMs: 1_500, reviewWatchFirstCheckMs: 200 }) },
    });
  });
  after(async () => {
    await Promise.allSettled(started.map((id) => stack.client.workflow.getHandle(id).terminate('test done')));
    await stack?.stop();
  });

  /** An order started as the API starts one; resolves when its workflow has closed with `status`. */
  async function settledOrder(msisdn?: string, overrides = {}): Promise<{ ref: string; view: OrderView }> {
    const request = mobileRequest(newRef(`rec-${run}`), msisdn);
    const handle = await startOrder(stack.client, stack.taskQueues.main, request, {
      timings: scaledTimings(overrides),
    });
    started.push(handle.workflowId);
    return { ref: request.ref, view: (await handle.result()) as OrderView };
  }

  /** Reconciles [from, now] under `date`, as the Schedule's child would, and waits for the report. */
  async function reconcile(
    date: string,
    from: number,
    extra: Partial<ReconcileDayInput> = {},
  ): Promise<{ report: ReconciliationReport; handle: WorkflowHandle }> {
    await sleep(50);
    const input: ReconcileDayInput = {
      date,
      timeZone: 'UTC',
      from: new Date(from).toISOString(),
      to: new Date(Date.now() + 1).toISOString(),
      lookbackMs: 0,
      ...extra,
    };
    const handle = await stack.client.workflow.start(RECONCILE_DAY_WORKFLOW, {
      workflowId: reconciliationWorkflowId(date),
      taskQueue: stack.taskQueues.main,
      args: [input],
    });
    started.push(handle.workflowId);
    return { report: (await handle.result()) as ReconciliationReport, handle };
  }

  it('a day where the ledger and every order agree: nothing re-checked, nothing disputed', async () => {
    const from = Date.now();
    const fulfilled = await settledOrder();
    const refunded = await settledOrder(sandboxSpecialNumbers.refunded);
    assert.equal(fulfilled.view.status, 'FULFILLED');
    assert.equal(refunded.view.status, 'REFUNDED');
    const { report, handle } = await reconcile(`2001-01-01`, from);
    assert.deepEqual(
      [report.orders, report.matched, report.checked, report.disputed, report.unexplained.length],
      [2, 2, 0, 0, 0],
      JSON.stringify(report),
    );
    // The fulfilled one's debit, the refunded one's debit and its refund.
    assert.equal(report.ledgerRows, 3);
    // Behind every client's live orders: the lowest priority key and a fairness key of its own.
    const scheduled = ((await handle.fetchHistory()).events ?? []).flatMap(
      (e) => e.activityTaskScheduledEventAttributes ?? [],
    );
    assert.ok(scheduled.length > 0);
    for (const activity of scheduled) {
      assert.deepEqual(
        [activity.priority?.priorityKey, activity.priority?.fairnessKey],
        [5, 'reconciliation'],
        activity.activityType?.name ?? '',
      );
    }
  });

  it('a provider outcome changed after the watch ended: the refund is found, re-checked and the order DISPUTED with the evidence; a debit no order explains is reported; a long day continues as new', async () => {
    const from = Date.now();
    // Goes to review (the provider answers UNKNOWN_ERROR); an operator forces FULFILLED while the
    // provider says HANDLING; the watch (1.5 s) ends quietly and the workflow closes.
    // Through the API, as shop: the order view is read back through it below.
    const request = mobileRequest(newRef(`rec-${run}-watched`), sandboxSpecialNumbers.unknownError);
    const accepted = await stack.api.request('POST', '/v1/orders', { body: request, ...key('shop') });
    assert.equal(accepted.status, 201, accepted.text);
    const handle = stack.client.workflow.getHandle(orderWorkflowId(request.ref));
    started.push(handle.workflowId);
    await waitForView(handle, (v) => v.status === 'NEEDS_REVIEW');
    const providerRef = providerRefFor('shop', request.ref);
    await stack.sandbox.changeTopup(providerRef, { status: 'HANDLING' });
    const decided = await handle.executeUpdate(decideReviewUpdate, {
      args: [{ decision: 'FULFILLED', operator: 'amina', note: 'customer confirmed', force: true }],
    });
    assert.equal(decided.outcome, 'applied');
    const closed = (await handle.result()) as OrderView;
    assert.equal(closed.status, 'FULFILLED');
    assert.equal(closed.watch?.ended?.outcome, 'quiet', JSON.stringify(closed.watch));
    // A second order settled FULFILLED by the provider itself, refunded later too.
    const plain = await settledOrder();
    // Days later (here: now) the provider refunds both.
    await stack.sandbox.changeTopup(providerRef, { status: 'REFUNDED' });
    await stack.sandbox.changeTopup(plain.ref, { status: 'REFUNDED' });
    // A top-up sent to the provider with our key but not through us: a debit no order explains.
    const stray = await stack.provider.client.sendMobileTopup({
      plan_code: 'PREPAID_DJEZZY',
      MSSIDN: '0557654321',
      amount: 300,
      ref: `stray-${run}`,
    });

    const { report, handle: reconciliation } = await reconcile('2001-01-02', from, { recheckPerRun: 1 });
    assert.deepEqual(
      [report.orders, report.checked, report.disputed, report.agreed, report.unreachable],
      [2, 2, 2, 0, 0],
      JSON.stringify(report),
    );
    assert.deepEqual(
      report.items.map((i) => [i.ref, i.kind, i.outcome]).sort(),
      [
        [plain.ref, 'refund-of-fulfilled', 'disputed'],
        [request.ref, 'refund-of-fulfilled', 'disputed'],
      ].sort(),
    );
    assert.deepEqual(
      report.unexplained.map((r) => [r.type, r.objid]),
      [['FLEXY', stray.topupId]],
    );
    // Two re-checks, one per run: the day continued as new once.
    const runs = [];
    for await (const execution of stack.client.workflow.list({
      query: `WorkflowId = '${reconciliation.workflowId}'`,
    }))
      runs.push(execution.status.name);
    assert.ok(runs.includes('CONTINUED_AS_NEW'), JSON.stringify(runs));
    await recordFixture(
      'day-continued-lifecycle-1',
      stack.client.workflow.getHandle(reconciliation.workflowId, reconciliation.firstExecutionRunId),
    );
    await recordFixture('day-rechecked-lifecycle-1', reconciliation);

    // The order reopened as DISPUTED, in a new run under its workflow ID, with the evidence.
    const disputed = await waitForView(
      stack.client.workflow.getHandle(orderWorkflowId(request.ref)),
      (v) => v.status === 'DISPUTED',
    );
    assert.equal(disputed.dispute?.reconciliation, '2001-01-02');
    assert.deepEqual(
      [disputed.dispute?.decision, disputed.dispute?.providerStatus],
      ['FULFILLED', 'REFUNDED'],
    );
    assert.match(disputed.review?.reason ?? '', /reports REFUNDED for an order that was FULFILLED/);
    assert.match(
      disputed.review?.evidence ?? '',
      /provider status REFUNDED; ledger: FLEXY [\d.]+ at .*REFUND-FLEXY [\d.]+ at /,
    );
    assert.equal(disputed.review?.resolution?.operator, 'amina', 'the decision the provider now contradicts');
    assert.equal(disputed.completedAt, undefined);

    // The API reads the order as DISPUTED (the latest run); operators settle it as any dispute.
    const view = await stack.api.request<OrderView>('GET', `/v1/orders/${request.ref}`, key('shop'));
    assert.equal(view.status, 200, view.text);
    assert.equal(view.body.status, 'DISPUTED');
    const settled = await stack.client.workflow
      .getHandle(orderWorkflowId(request.ref))
      .executeUpdate(decideReviewUpdate, {
        args: [{ decision: 'REFUNDED', operator: 'amina', note: 'refunded' }],
      });
    assert.equal(settled.outcome, 'applied');
    assert.equal(settled.view.status, 'REFUNDED');

    // Run again, the day finds the first order no longer FULFILLED: no double dispute.
    // Its earlier FULFILLED runs are superseded: only its latest (REFUNDED, refund in the ledger) counts.
    const again = await reconcile('2001-01-03', from);
    assert.deepEqual(
      [again.report.orders, again.report.matched, again.report.disputed],
      [1, 1, 0],
      JSON.stringify(again.report),
    );
  });

  it('GET /v1/reconciliations/{date}: an auditor reads the report; a client without audit:read, no key, a bad date and a day never reconciled are refused', async () => {
    const from = Date.now();
    await settledOrder();
    await reconcile('2001-02-01', from);
    const res = await stack.api.request<ReconciliationAnswer>(
      'GET',
      '/v1/reconciliations/2001-02-01',
      key('auditor'),
    );
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.state, 'completed');
    assert.deepEqual([res.body.report?.orders, res.body.report?.matched], [1, 1]);
    // A client key (even one with orders:read) reads no account-wide ledger.
    for (const who of ['shop', 'reader', 'operator'] as const) {
      const refused = await stack.api.request<Problem>('GET', '/v1/reconciliations/2001-02-01', key(who));
      assert.equal(refused.status, 403, `${who}: ${refused.text}`);
    }
    const anonymous = await stack.api.request('GET', '/v1/reconciliations/2001-02-01', { apiKey: null });
    assert.equal(anonymous.status, 401);
    for (const bad of ['2001-02-30', 'yesterday', '2001-2-1']) {
      const invalid = await stack.api.request<Problem>('GET', `/v1/reconciliations/${bad}`, key('auditor'));
      assert.equal(invalid.status, 400, `${bad}: ${invalid.text}`);
      assert.deepEqual(
        invalid.body.errors?.map((e) => e.field),
        ['date'],
      );
    }
    const never = await stack.api.request<Problem>('GET', '/v1/reconciliations/1999-12-31', key('auditor'));
    assert.equal(never.status, 404);
    assert.equal(never.body.type, '/problems/reconciliation-not-found');
  });

  it('the Schedule: created by the setup, updated when it exists (time, zone); a run reconciles the day before in that zone and the route reads it', async () => {
    const scheduleId = `order-reconciliation-test-${run}`;
    const options = { taskQueue: stack.taskQueues.main, scheduleId };
    assert.equal(
      await ensureReconciliationSchedule(stack.client, {
        ...options,
        at: '02:30',
        timeZone: 'Africa/Algiers',
      }),
      'created',
    );
    assert.equal(
      await ensureReconciliationSchedule(stack.client, { ...options, at: '03:15', timeZone: 'Asia/Tokyo' }),
      'updated',
    );
    const schedule = stack.client.schedule.getHandle(scheduleId);
    try {
      const described = await schedule.describe();
      assert.equal(described.spec.timezone, 'Asia/Tokyo');
      assert.deepEqual(
        described.spec.calendars?.map((c) => [c.hour, c.minute]),
        [[[{ start: 3, end: 3, step: 1 }], [{ start: 15, end: 15, step: 1 }]]],
      );
      const since = Date.now();
      await schedule.trigger();
      const yesterday = previousDay(since, 'Asia/Tokyo').date;
      let answer: ReconciliationAnswer | undefined;
      for (const deadline = Date.now() + 30_000; answer?.state !== 'completed'; await sleep(200)) {
        assert.ok(Date.now() < deadline, `the day before was reconciled: ${JSON.stringify(answer)}`);
        const res = await stack.api.request<ReconciliationAnswer>(
          'GET',
          `/v1/reconciliations/${yesterday}`,
          key('auditor'),
        );
        if (res.status === 200) answer = res.body;
        else assert.equal(res.status, 404, res.text);
      }
      assert.deepEqual(
        [answer.report?.timeZone, answer.report?.from],
        ['Asia/Tokyo', reconciliationDayOf(yesterday, 'Asia/Tokyo').from],
      );
    } finally {
      await schedule.delete();
    }
  });

  it('the day before in a time zone, and its bounds across a DST change', () => {
    // 01:00 UTC on 27 Nov is 02:00 in Algiers (UTC+1): yesterday there is 26 Nov.
    assert.deepEqual(previousDay(Date.parse('2026-11-27T01:00:00Z'), 'Africa/Algiers'), {
      date: '2026-11-26',
      timeZone: 'Africa/Algiers',
      from: '2026-11-25T23:00:00.000Z',
      to: '2026-11-26T23:00:00.000Z',
    });
    // 23:30 UTC on 26 Nov is already 27 Nov in Algiers.
    assert.equal(previousDay(Date.parse('2026-11-26T23:30:00Z'), 'Africa/Algiers').date, '2026-11-26');
    // Paris springs forward on 29 March 2026: a day of 23 hours.
    const short = reconciliationDayOf('2026-03-29', 'Europe/Paris');
    assert.deepEqual([short.from, short.to], ['2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z']);
  });
});
