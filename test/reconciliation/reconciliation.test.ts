/**
 * The nightly reconciliation end to end: a real Temporal dev server, a real worker, the sandbox's
 * ledger over HTTP and the API's GET /v1/reconciliations/{date}. Each test reconciles a window of
 * its own (the orders it made), under a date of its own, so the tests do not see each other's rows.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import type { Problem } from '../../src/http/errors';
import { testClients } from '../helpers/api';
import type { ReconciliationAnswer } from '../../src/reconciliation/reconciliation.service';
import { decideReviewUpdate, orderWorkflowId, type OrderView } from '../../contract/order';
import {
  RECONCILE_DAY_WORKFLOW,
  reconciliationWorkflowId,
  type ReconcileDayInput,
  type ReconciliationReport,
} from '../../contract/reconciliation';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { providerRefFor } from '../../src/orders/provider-ref';
import { reconciliationDayOf, previousDay } from '../../src/reconciliation/day';
import { mobileRequest, newRef, scaledTimings, startOrder, waitForView } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';
import { ensureReconciliationSchedule } from '../../src/reconciliation/reconciliation.schedule';
import { mkdirSync, writeFileSync } from 'node:fs';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { join } from 'node:path';
import { historiesDir, historyToJson } from '../helpers/histories';
import { reconcileDayInput } from '../helpers/reconciliation';

/**
 * With RECORD_RECONCILIATION_HISTORIES=1, writes a run's history as a replay fixture of the current
 * lifecycle (test/fixtures/histories/lifecycle-<N>/reconciliation-<name>.json; docs/contributors.md
 * "Worker versioning, never patches").
 */
async function recordFixture(name: string, handle: WorkflowHandle): Promise<void> {
  if (process.env.RECORD_RECONCILIATION_HISTORIES !== '1') return;
  mkdirSync(historiesDir, { recursive: true });
  writeFileSync(
    join(historiesDir, `reconciliation-${name}.json`),
    historyToJson(await handle.fetchHistory()),
  );
}

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
  ): Promise<{ report: ReconciliationReport; handle: WorkflowHandleWithFirstExecutionRunId }> {
    await sleep(50);
    const input = reconcileDayInput(date, from, extra);
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

    // One re-check per run and one mismatch per chunk: the matching goes on by its cursor.
    const { report, handle: reconciliation } = await reconcile('2001-01-02', from, {
      recheckPerRun: 1,
      mismatchesPerChunk: 1,
    });
    assert.deepEqual(
      [report.orders, report.checked, report.disputed, report.agreed, report.unreachable, report.foreign],
      [2, 3, 2, 0, 0, 1],
      JSON.stringify(report),
    );
    assert.deepEqual(
      report.items.map((i) => [i.ref, i.kind, i.outcome]).sort(),
      [
        [plain.ref, 'refund-of-fulfilled', 'disputed'],
        [request.ref, 'refund-of-fulfilled', 'disputed'],
        ['', 'unexplained-row', 'foreign'],
      ].sort(),
    );
    assert.deepEqual(
      report.unexplained.map((r) => [r.type, r.objid]),
      [['FLEXY', stray.topupId]],
    );
    // The row no order explains, checked by its id: the provider names the ref it was sent under.
    const foreign = report.items.find((i) => i.outcome === 'foreign');
    assert.equal(foreign?.row?.objid, stray.topupId);
    assert.match(
      foreign?.evidence ?? '',
      new RegExp(
        `the provider's mobile_topup ${stray.topupId} is \\w+ \\(ref stray-${run}, created .*\\), no order of ours has it`,
      ),
    );
    // Three re-checks, one per run: the day continued as new twice, each run carrying at most one
    // mismatch and the cursor, never the day's list.
    const runs = [];
    for await (const execution of stack.client.workflow.list({
      query: `WorkflowId = '${reconciliation.workflowId}'`,
    }))
      runs.push(execution.status.name);
    assert.equal(runs.filter((r) => r === 'CONTINUED_AS_NEW').length, 2, JSON.stringify(runs));
    const last = await reconciliation.fetchHistory();
    const lastStart = last.events?.[0]?.workflowExecutionStartedEventAttributes;
    const carried = await decodeFromPayloadsAtIndex<ReconcileDayInput>(
      stack.client.options.loadedDataConverter,
      0,
      lastStart?.input?.payloads,
    );
    assert.ok(carried.continued && 'chunk' in carried.continued, JSON.stringify(carried.continued));
    assert.ok(carried.continued.chunk.length <= 1);
    await recordFixture(
      'day-chunked',
      stack.client.workflow.getHandle(reconciliation.workflowId, reconciliation.firstExecutionRunId),
    );
    await recordFixture('day-chunked-continued', reconciliation);

    // The same day run again: the disputes the first run opened are reported again, with their
    // evidence (the first run's report stays readable under its run ID).
    const rerun = await reconcile('2001-01-02', from);
    assert.deepEqual(
      [rerun.report.orders, rerun.report.disputed, rerun.report.foreign],
      [2, 2, 1],
      JSON.stringify(rerun.report),
    );
    for (const item of rerun.report.items.filter((i) => i.kind !== 'unexplained-row')) {
      assert.equal(item.kind, 'reopened');
      assert.equal(item.outcome, 'disputed');
      assert.match(
        item.evidence,
        /^DISPUTED since .* \(by the reconciliation of 2001-01-02\): provider status REFUNDED; ledger: FLEXY/,
      );
    }
    const day = await stack.api.request<ReconciliationAnswer>(
      'GET',
      '/v1/reconciliations/2001-01-02',
      key('auditor'),
    );
    assert.equal(day.status, 200, day.text);
    assert.equal(day.body.runId, (await rerun.handle.describe()).runId);
    assert.equal(day.body.runs.length, 2, JSON.stringify(day.body.runs));
    const first = day.body.runs.find((r) => r.runId !== day.body.runId)!;
    const earlier = await stack.api.request<ReconciliationAnswer>(
      'GET',
      `/v1/reconciliations/2001-01-02?run=${first.runId}`,
      key('auditor'),
    );
    assert.equal(earlier.status, 200, earlier.text);
    assert.equal(earlier.body.runId, first.runId);
    assert.deepEqual(earlier.body.report?.items.map((i) => i.kind).sort(), [
      'refund-of-fulfilled',
      'refund-of-fulfilled',
      'unexplained-row',
    ]);

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
    // Its earlier FULFILLED runs are superseded: only its latest (REFUNDED, refund in the ledger)
    // counts; the other is still DISPUTED, and reported so.
    const again = await reconcile('2001-01-03', from);
    assert.deepEqual(
      [again.report.orders, again.report.matched, again.report.disputed],
      [2, 1, 1],
      JSON.stringify(again.report),
    );
    assert.deepEqual(
      again.report.items.filter((i) => i.outcome === 'disputed').map((i) => [i.ref, i.kind]),
      [[plain.ref, 'reopened']],
    );
  });

  it('a day run again reports the disputes its first run opened (already DISPUTED, with their evidence), and the first run stays readable', async () => {
    const from = Date.now();
    const order = await settledOrder();
    await stack.sandbox.changeTopup(order.ref, { status: 'REFUNDED' });
    const first = await reconcile('2001-03-01', from);
    assert.deepEqual([first.report.checked, first.report.disputed], [1, 1], JSON.stringify(first.report));
    const again = await reconcile('2001-03-01', from);
    assert.deepEqual(
      [again.report.orders, again.report.matched, again.report.disputed],
      [1, 0, 1],
      JSON.stringify(again.report),
    );
    assert.equal(again.report.items[0]?.kind, 'reopened');
    assert.match(
      again.report.items[0]?.evidence ?? '',
      /by the reconciliation of 2001-03-01\): provider status REFUNDED/,
    );
    const answer = await stack.api.request<ReconciliationAnswer>(
      'GET',
      `/v1/reconciliations/2001-03-01?run=${first.handle.firstExecutionRunId}`,
      key('auditor'),
    );
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.report?.items[0]?.kind, 'refund-of-fulfilled');
    assert.deepEqual(
      answer.body.runs.map((r) => r.runId).sort(),
      [first.handle.firstExecutionRunId, again.handle.firstExecutionRunId].sort(),
    );
  });

  it('a CANCELLED order the provider debited anyway, and an order whose run was terminated in its watch: both re-checked and DISPUTED', async () => {
    const from = Date.now();
    // Cancelled while every send was refused with 429: the order says nothing reached the provider.
    await stack.sandbox.addFault({ kind: 'rate_limit', routes: ['mobile.send'], retryAfterSeconds: 1 });
    const cancelledRequest = mobileRequest(newRef(`rec-${run}-cancelled`));
    const sendsBefore = (await stack.sandbox.requests('mobile.send')).length;
    const accepted = await stack.api.request('POST', '/v1/orders', {
      body: cancelledRequest,
      ...key('shop'),
    });
    assert.equal(accepted.status, 201, accepted.text);
    const read = await stack.api.request<OrderView & { workflowId: string }>(
      'GET',
      `/v1/orders/${cancelledRequest.ref}`,
      key('shop'),
    );
    const cancelledHandle = stack.client.workflow.getHandle(read.body.workflowId);
    started.push(cancelledHandle.workflowId);
    while ((await stack.sandbox.requests('mobile.send')).length < sendsBefore + 2) await sleep(20);
    await cancelledHandle.cancel();
    assert.equal(((await cancelledHandle.result()) as OrderView).status, 'CANCELLED');
    await stack.sandbox.clearFaults();
    // Yet the provider has a top-up under the order's ref (a 429 it committed all the same).
    const debited = await stack.provider.client.sendMobileTopup({
      plan_code: cancelledRequest.planCode,
      MSSIDN: cancelledRequest.msisdn,
      amount: cancelledRequest.amount,
      ref: providerRefFor('shop', cancelledRequest.ref),
    });
    while ((await stack.provider.client.checkMobileTopupById(debited.topupId)).status !== 'FULFILLED')
      await sleep(50);

    // Decided FULFILLED (forced while the provider said HANDLING), then terminated during its watch:
    // the run closed with a final view, which the sweep leaves alone.
    const watched = mobileRequest(newRef(`rec-${run}-terminated`), sandboxSpecialNumbers.unknownError);
    assert.equal(
      (await stack.api.request('POST', '/v1/orders', { body: watched, ...key('shop') })).status,
      201,
    );
    const watchedId = (
      await stack.api.request<OrderView & { workflowId: string }>(
        'GET',
        `/v1/orders/${watched.ref}`,
        key('shop'),
      )
    ).body.workflowId;
    const watchedHandle = stack.client.workflow.getHandle(watchedId);
    started.push(watchedId);
    await waitForView(watchedHandle, (v) => v.status === 'NEEDS_REVIEW');
    const watchedRef = providerRefFor('shop', watched.ref);
    await stack.sandbox.changeTopup(watchedRef, { status: 'HANDLING' });
    const decided = await watchedHandle.executeUpdate(decideReviewUpdate, {
      args: [{ decision: 'FULFILLED', operator: 'amina', note: 'customer confirmed', force: true }],
    });
    assert.equal(decided.view.status, 'FULFILLED');
    await watchedHandle.terminate('stuck worker');
    await stack.sandbox.changeTopup(watchedRef, { status: 'REFUNDED' });

    const { report } = await reconcile('2001-03-02', from);
    const byRef = new Map(report.items.map((i) => [i.ref, i]));
    const cancelled = byRef.get(cancelledRequest.ref);
    assert.deepEqual(
      [cancelled?.kind, cancelled?.outcome, cancelled?.status],
      ['unexplained-row', 'disputed', 'CANCELLED'],
      JSON.stringify(report),
    );
    assert.equal(cancelled?.row?.objid, debited.topupId);
    const terminated = byRef.get(watched.ref);
    assert.deepEqual(
      [terminated?.kind, terminated?.outcome],
      ['refund-of-fulfilled', 'disputed'],
      JSON.stringify(report),
    );

    const reopened = await waitForView(cancelledHandle, (v) => v.status === 'DISPUTED');
    assert.deepEqual(
      [reopened.dispute?.decision, reopened.dispute?.providerStatus, reopened.dispute?.reconciliation],
      ['REFUNDED', 'FULFILLED', '2001-03-02'],
    );
    assert.match(
      reopened.review?.evidence ?? '',
      new RegExp(`${debited.topupId} is FULFILLED, an id the order never named`),
    );
    const resumed = await waitForView(watchedHandle, (v) => v.status === 'DISPUTED');
    assert.deepEqual([resumed.dispute?.decision, resumed.dispute?.providerStatus], ['FULFILLED', 'REFUNDED']);
  });

  it('a second top-up the provider committed under the ref of a fulfilled order (money sent twice): its own outcome, with the order and both top-ups as evidence, not foreign', async () => {
    const from = Date.now();
    const request = mobileRequest(newRef(`rec-${run}-twice`));
    const accepted = await stack.api.request('POST', '/v1/orders', { body: request, ...key('shop') });
    assert.equal(accepted.status, 201, accepted.text);
    const read = await stack.api.request<OrderView & { workflowId: string }>(
      'GET',
      `/v1/orders/${request.ref}`,
      key('shop'),
    );
    const handle = stack.client.workflow.getHandle(read.body.workflowId);
    started.push(handle.workflowId);
    const view = (await handle.result()) as OrderView;
    assert.equal(view.status, 'FULFILLED');
    const first = view.providerReference!;
    // A provider without an atomic uniqueness check commits a second send of the same ref.
    await stack.sandbox.settings({ uniqueRefs: false });
    let second: string;
    try {
      second = (
        await stack.provider.client.sendMobileTopup({
          plan_code: request.planCode,
          MSSIDN: request.msisdn,
          amount: 700,
          ref: providerRefFor('shop', request.ref),
        })
      ).topupId;
    } finally {
      await stack.sandbox.settings({ uniqueRefs: true });
    }
    assert.notEqual(second, first);
    while ((await stack.provider.client.checkMobileTopupById(second)).status !== 'FULFILLED') await sleep(50);

    const { report } = await reconcile('2001-03-03', from);
    assert.deepEqual(
      [report.orders, report.matched, report.checked, report.secondTopUps, report.foreign, report.disputed],
      [1, 1, 1, 1, 0, 0],
      JSON.stringify(report),
    );
    const [item] = report.items;
    assert.deepEqual(
      [item?.kind, item?.outcome, item?.workflowId, item?.ref, item?.status, item?.row?.objid],
      ['unexplained-row', 'second-top-up', handle.workflowId, request.ref, 'FULFILLED', second],
    );
    assert.deepEqual(item?.secondTopUp, {
      order: { providerReference: first, status: 'FULFILLED', amount: request.amount },
      second: { providerReference: second, status: 'FULFILLED', amount: 700 },
    });
    assert.match(
      item?.evidence ?? '',
      new RegExp(
        `^a second top-up under the ref of order ${handle.workflowId}: the provider's mobile_topup ${second} ` +
          `\\(FULFILLED, 700 DZD\\), the order's own ${first} \\(FULFILLED, ${request.amount} DZD\\); ledger: FLEXY`,
      ),
    );
    // No personal data in the evidence: neither the phone number nor any part of it.
    assert.doesNotMatch(JSON.stringify(item), new RegExp(request.msisdn.slice(-6)));
    // Not reopened: the order's own outcome is not in question (docs/operators.md).
    const latest = await stack.client.workflow.getHandle(handle.workflowId).describe();
    assert.equal(latest.runId, (await handle.describe()).runId);
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
    const badRun = await stack.api.request<Problem>(
      'GET',
      '/v1/reconciliations/2001-02-01?run=first',
      key('auditor'),
    );
    assert.equal(badRun.status, 400, badRun.text);
    assert.deepEqual(
      badRun.body.errors?.map((e) => e.field),
      ['run'],
    );
    const otherRun = await stack.api.request<Problem>(
      'GET',
      `/v1/reconciliations/2001-02-01?run=${randomUUID()}`,
      key('auditor'),
    );
    assert.equal(otherRun.status, 404, otherRun.text);
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
