/**
 * The order lifecycle at its real timings (spec and design: 30 minutes to review, a review re-check
 * every 30 minutes, 60-minute gift-card deadline, at most 20 placements), on Temporal's
 * time-skipping test server: the workflows and activities are the real ones and every provider
 * call goes to the sandbox over HTTP, but whenever the workflows only wait, time jumps ahead. The
 * tests run one after the other because they share the server's clock.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  WorkflowUpdateStage,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { decideReviewUpdate, OrderStatusAttribute, type OrderView } from '../../contract/order';
import {
  giftCardRequest,
  mobileRequest,
  newRef,
  startOrder,
  startTestSandbox,
  testProvider,
  type TestSandbox,
} from '../helpers/orders';
import { startTimeSkippingWorkers, type TimeSkippingWorkers } from '../helpers/time-skipping';

const MINUTE = 60_000;

describe('the lifecycle at its real timings (time-skipping)', () => {
  let sandboxes: Record<Provider, TestSandbox>;
  let providers: Record<Provider, ReturnType<typeof testProvider>>;
  let workers: TimeSkippingWorkers<Provider>;

  before(async () => {
    const started = await Promise.all(
      providerNames.map(async (name) => {
        const sandbox = await startTestSandbox(name === 'stalled' ? 1_000 : undefined);
        if (name === 'slowChecks') {
          await sandbox.addFault({ kind: 'latency', latencyMs: 800, routes: ['mobile.check'] });
        }
        if (name === 'rateLimited' || name === 'rateLimitedLong') {
          const retryAfterSeconds = name === 'rateLimited' ? 60 : 300;
          await sandbox.addFault({ kind: 'rate_limit', retryAfterSeconds, routes: ['giftcards.placeOrder'] });
        }
        return [name, sandbox] as const;
      }),
    );
    sandboxes = Object.fromEntries(started) as typeof sandboxes;
    providers = Object.fromEntries(
      started.map(([name, s]) => [name, testProvider(s.url)]),
    ) as typeof providers;
    workers = await startTimeSkippingWorkers(
      Object.fromEntries(providerNames.map((name) => [name, providers[name].client])) as Record<
        Provider,
        ReturnType<typeof testProvider>['client']
      >,
    );
  });
  after(async () => {
    await workers?.stop();
    await Promise.all(Object.values(providers ?? {}).map((p) => p.close()));
    await Promise.all(Object.values(sandboxes ?? {}).map((s) => s.close()));
  });

  const start = (provider: Provider, ...rest: Tail<Parameters<typeof startOrder>>) =>
    startOrder(workers.client, workers.taskQueues[provider], ...rest);

  const view = (handle: WorkflowHandle) => handle.query<OrderView>('status');
  /**
   * Workflow time (the server's skipped clock) from the order's workflow start to its timeline entry
   * with `status`. (The timeline's first entry is the starter's acceptedAt, on the real clock.)
   */
  const minutesUntil = async (
    handle: WorkflowHandleWithFirstExecutionRunId,
    v: OrderView,
    status: OrderView['status'],
  ) => {
    const at = v.timeline.find((e) => e.status === status)?.at;
    assert.ok(at, `the timeline reaches ${status}: ${JSON.stringify(v.timeline)}`);
    const [first] = await runsOf(workers, handle.workflowId, handle.firstExecutionRunId);
    const started = first?.[0]?.eventTime;
    assert.ok(started);
    return (Date.parse(at) - (Number(started.seconds) * 1_000 + (started.nanos ?? 0) / 1e6)) / MINUTE;
  };

  /**
   * A top-up the provider keeps PENDING, polled until the 30-minute deadline sends it to review.
   * `lateByMinutes`: how long after the deadline the review may come.
   */
  const stuckAtTheDeadline = async (lateByMinutes: number) => {
    const ref = newRef('stuck');
    const handle = await start('stalled', mobileRequest(ref));
    await workers.env.sleep(29 * MINUTE);
    assert.equal((await view(handle)).status, 'SUBMITTED', 'still polling at 29 minutes');

    // Workflow time goes on in 5-second steps, so the review is seen within a step of when it came.
    const stuck = await untilReviewRun(workers, handle);
    assert.equal(stuck.status, 'NEEDS_REVIEW');
    assert.match(stuck.review?.reason ?? '', /^stuck: no final status by the deadline/);
    const minutes = await minutesUntil(handle, stuck, 'NEEDS_REVIEW');
    assert.ok(minutes >= 30 && minutes < 30 + lateByMinutes, `review after ${minutes} minutes`);
    // The order stays in review, re-checked while the later tests skip time. Terminating it could
    // catch a task of it in flight, and this test server then never releases that task's hold on
    // its clock (sdk-java#1138): every later wait would take real time, and one test file hours.
  };

  it('a top-up the provider keeps PENDING goes to review as stuck at 30 minutes, not before (its polling the server retries)', async () => {
    // This test server retries by the activity's retry policy and ignores the `nextRetryDelay` the
    // poll activity asks for (a real server honours it), so the last check before the deadline can
    // come up to one policy interval (60 s) late, and the count of checks is the server's, not ours.
    await stuckAtTheDeadline(1.1);
  });

  it('in review, the provider is asked again every 30 minutes and a final answer resolves the order', async () => {
    const ref = newRef('recheck');
    const handle = await start('normal', mobileRequest(ref, sandboxSpecialNumbers.unknownError));
    assert.equal((await untilReviewRun(workers, handle)).status, 'NEEDS_REVIEW');
    await sandboxes.normal.changeTopup(ref, { status: 'FULFILLED' });

    await workers.env.sleep(29 * MINUTE);
    assert.equal((await view(handle)).status, 'NEEDS_REVIEW', 'no re-check before 30 minutes');
    await workers.env.sleep(2 * MINUTE);
    const resolved = await handle.result();
    assert.equal(resolved.status, 'FULFILLED');
    const inReview =
      (await minutesUntil(handle, resolved, 'FULFILLED')) -
      (await minutesUntil(handle, resolved, 'NEEDS_REVIEW'));
    assert.ok(inReview >= 30 && inReview < 31, `resolved by the re-check after ${inReview} minutes`);
  });

  it('a decision queued behind another is worked off before the run continues as new; the re-check goes on', async () => {
    const ref = newRef('continue');
    const handle = await start('slowChecks', mobileRequest(ref, sandboxSpecialNumbers.unknownError), {
      historyEventLimit: 20,
    });
    assert.equal((await untilReviewRun(workers, handle)).status, 'NEEDS_REVIEW');
    const recheck = (note: string) =>
      handle.startUpdate(decideReviewUpdate, {
        args: [{ decision: 'RECHECK', operator: 'amina', note }],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
    const first = await recheck('first');
    const second = await recheck('second, queued behind the first');
    assert.deepEqual(
      [(await first.result()).outcome, (await second.result()).outcome],
      ['rechecked', 'rechecked'],
    );

    const runs = await runsOf(workers, handle.workflowId, handle.firstExecutionRunId);
    const decided = runs.find((events) => events.filter(isUpdateAccepted).length === 2);
    assert.ok(decided, `one run accepted both decisions (runs: ${runs.length})`);
    const secondAccepted = decided.map(isUpdateAccepted).lastIndexOf(true);
    const continuedAt = decided.findIndex((e) => e.workflowExecutionContinuedAsNewEventAttributes);
    assert.ok(continuedAt > secondAccepted, 'that run continued as new after the second decision');
    assert.ok(
      decided.slice(secondAccepted, continuedAt).some((e) => e.activityTaskScheduledEventAttributes),
      'the queued decision asked the provider before the run continued as new',
    );

    // The new run carries the review on at the same 30-minute pace.
    await sandboxes.slowChecks.changeTopup(ref, { status: 'FULFILLED' });
    await workers.env.sleep(29 * MINUTE);
    assert.equal((await view(handle)).status, 'NEEDS_REVIEW');
    await workers.env.sleep(2 * MINUTE);
    const resolved = await handle.result();
    assert.equal(resolved.status, 'FULFILLED');
    assert.equal(resolved.timeline[0]?.status, 'ACCEPTED', 'the timeline was carried over');
  });

  it('a gift card the provider keeps turning away is placed at most 20 times, then FAILED', async () => {
    const handle = await start('rateLimited', giftCardRequest(newRef('gift-tries')));
    const result = await handle.result();
    assert.equal(result.status, 'FAILED');
    assert.equal(result.failure?.code, 'PROVIDER_UNREACHABLE');
    assert.equal((await sandboxes.rateLimited.requests('giftcards.placeOrder')).length, 20);
    assert.deepEqual(await sandboxes.rateLimited.giftCardOrders(), [], 'nothing was placed');
    // 19 waits of the provider's Retry-After (60 s) between the 20 placements: the first is the
    // local placement, then the workflow's timer, then the placement activity's retries, which
    // this test server spaces by the failure's nextRetryDelay.
    const minutes = await minutesUntil(handle, result, 'FAILED');
    assert.ok(minutes >= 19 && minutes < 20, `gave up after ${minutes} minutes`);
  });

  it('nor is a gift card placed again past its 60-minute deadline', async () => {
    const handle = await start('rateLimitedLong', giftCardRequest(newRef('gift-deadline')));
    const result = await handle.result();
    assert.equal(result.status, 'FAILED');
    assert.equal(result.failure?.code, 'PROVIDER_UNREACHABLE');
    // Every 5 minutes (the provider's Retry-After) from 0 to 55; a 13th would be after the deadline.
    assert.equal((await sandboxes.rateLimitedLong.requests('giftcards.placeOrder')).length, 12);
    const minutes = await minutesUntil(handle, result, 'FAILED');
    assert.ok(minutes >= 55 && minutes < 56, `gave up after ${minutes} minutes`);
  });
});

const providerNames = ['normal', 'stalled', 'slowChecks', 'rateLimited', 'rateLimitedLong'] as const;
/**
 * `normal` answers at the sandbox's 100× pace; `stalled` keeps every top-up PENDING for hours of
 * real time; `slowChecks` answers every check after 800 ms, so decisions queue behind each other;
 * `rateLimited` and `rateLimitedLong` turn every gift-card placement away with a Retry-After of
 * 1 and 5 minutes.
 */
type Provider = (typeof providerNames)[number];
type Tail<T extends unknown[]> = T extends [unknown, unknown, ...infer R] ? R : never;

/**
 * Lets workflow time pass in 5-second steps until the order runs in its own review run (it
 * continues as new into review), or has closed; then its view.
 *
 * The order is not queried on the way: this test server takes a query as a task that holds its
 * clock until answered, and a query that meets the run continuing as new is never answered by that
 * run, so the clock stays held and every later wait takes real time (sdk-java#1138 is the same
 * leak for activities). Describing the run and reading its history holds nothing.
 */
async function untilReviewRun(
  workers: TimeSkippingWorkers<string>,
  handle: WorkflowHandle,
): Promise<OrderView> {
  for (let step = 0; step < 200; step++) {
    const { runId, status } = await handle.describe();
    if (status.name !== 'RUNNING') break;
    const [started] =
      (await workers.client.workflow.getHandle(handle.workflowId, runId).fetchHistory()).events ?? [];
    const listedAs =
      started?.workflowExecutionStartedEventAttributes?.searchAttributes?.indexedFields?.[
        OrderStatusAttribute.name
      ];
    if (listedAs && defaultPayloadConverter.fromPayload(listedAs) === 'NEEDS_REVIEW') break;
    await workers.env.sleep(5_000);
  }
  return handle.query<OrderView>('status');
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const isUpdateAccepted = (e: HistoryEvent) => Boolean(e.workflowExecutionUpdateAcceptedEventAttributes);

/** Every run's events, from the first run along its continue-as-new chain. */
async function runsOf(
  workers: TimeSkippingWorkers<string>,
  workflowId: string,
  firstRunId: string | undefined,
): Promise<HistoryEvent[][]> {
  const runs: HistoryEvent[][] = [];
  for (let runId = firstRunId; runId;) {
    const events = (await workers.client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    runs.push(events);
    runId =
      events.find((e) => e.workflowExecutionContinuedAsNewEventAttributes)
        ?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return runs;
}
