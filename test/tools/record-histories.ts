/**
 * `tsx test/tools/record-histories.ts [--time-scale 1] [--only a,b] [--overwrite]`: runs one order per
 * scenario against the sandbox (each with its own sandbox, provider client and worker, all at
 * once), writes each workflow history to test/fixtures/histories/lifecycle-<LIFECYCLE_VERSION>/
 * <scenario>.json for the replay test, and prints how many history events and provider calls each took.
 *
 * Only scenarios without a fixture are recorded, unless named with --only or --overwrite is given.
 * Orders are pinned to the worker version that started them, so a lifecycle's fixtures are
 * replayed only by its own code: a new lifecycle version (test/helpers/histories.ts
 * LIFECYCLE_VERSION) records its own set into its own folder.
 *
 * The webhook scenarios run a whole webhook stack (API, both workers, a receiver that fails the
 * first attempt of each event): the order's history with its announcements, and the order's
 * delivery workflow with a retry.
 *
 * The default time scale is 1, the spec's timings (PENDING 5 s, HANDLING until 20 s), so the
 * numbers are those of production polling; a run takes about a minute.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import {
  WorkflowUpdateStage,
  type Client,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import { ensureOrderSweepSchedule } from '../../src/orders/sweep.schedule';
import type { OrderProvider } from '../../src/orders/order.activities';
import type { ProviderClient } from '../../src/provider';
import type { FaultSpecInput } from '../../src/sandbox/faults';
import type { MobileTopupRequest } from '../../contract/schemas';
import { sandboxSpecialNumbers, sandboxTestTypes } from '../../src/provider/wire';
import {
  decideReviewUpdate,
  defaultOrderTimings,
  resolveReviewSignal,
  type DecisionOutcome,
  type OrderInput,
  type OrderRequest,
  type OrderTimings,
  type OrderView,
  type ReviewDecision,
} from '../../contract/order';
import {
  countingProvider,
  giftCardRequest,
  internetRequest,
  ADMIN_TOKEN,
  mobileRequest,
  newRef,
  LEAN_ORDER_EVENTS,
  PARTIAL_SPLIT_MEMO_EVENTS,
  startOrder,
  startTestSandbox,
  testProvider,
  waitForView,
  type TestSandbox,
} from '../helpers/orders';
import { startOrderTestWorkers, startOrderStack, type OrderStack } from '../helpers/stack';
import { historiesDir, historyToJson } from '../helpers/histories';
import { clientsWith, eventually } from '../helpers/webhooks';
import { startReceiver } from '../../src/webhooks/receiver';
import { endpointSecret } from '../../src/webhooks/secrets';
import { orderWorkflowId } from '../../contract/order';
import { webhookDeliveryWorkflowId, type WebhookDeliveryState } from '../../contract/webhooks';
import { accountWorkflowId } from '../../contract/account';
import { SandboxAdmin } from '../../src/sandbox/admin-client';

interface Scenario {
  request: (ref: string) => OrderRequest;
  expected: OrderView['status'];
  apiKey?: string;
  faults?: FaultSpecInput[];
  /** What happened at the provider before the order (e.g. its ref already used). */
  before?: (provider: ProviderClient, request: OrderRequest, sandbox: TestSandbox) => Promise<unknown>;
  /** The worker's provider, made from the sandbox's client (e.g. one that cannot connect at first). */
  provider?: (client: ProviderClient) => OrderProvider;
  /** Spec timings (× the time scale) overridden, before scaling. */
  timings?: Partial<OrderTimings>;
  /** What the sandbox is told before the order starts (its `ref` is the one sent to the provider). */
  arrange?: (sandbox: TestSandbox, ref: string) => Promise<void>;
  /** What an operator does once the order is in review. */
  operator?: (handle: WorkflowHandle, sandbox: TestSandbox, ref: string) => Promise<void>;
  /**
   * The order continues as new once its history reaches the events it had in review plus this
   * many (measured on a probe order first); the fixture is then the run that continued.
   */
  continueAsNewAfter?: number;
  /** The status the operator decides the order in (default NEEDS_REVIEW). */
  decidedIn?: OrderView['status'];
  /** What the order's first run is started with beyond the request (e.g. a run the reconciliation starts). */
  input?: (provider: ProviderClient, request: OrderRequest) => Promise<Partial<OrderInput>>;
  /** Also record the first run, under this name, when the fixture is a later run. */
  firstRunAs?: string;
  /** Also record the run before the latest, under this name. */
  previousRunAs?: string;
  /** Checks the recorded history shows what the scenario is for. */
  verify?: (history: History) => void;
  /**
   * Drives the order instead of `operator` (e.g. terminates it and has the sweep resume it) and
   * returns the handle of the run to record.
   */
  drive?: (order: {
    handle: WorkflowHandleWithFirstExecutionRunId;
    sandbox: TestSandbox;
    client: Client;
    taskQueue: string;
  }) => Promise<WorkflowHandle>;
}

type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;

const decide = (decision: 'FULFILLED' | 'REFUNDED' | 'RECHECK', note: string) => (handle: WorkflowHandle) =>
  handle.signal(resolveReviewSignal, { decision, operator: 'recorder', note });

/** A decision through the update, as the API sends it; its outcome must be `expected`. */
async function update(
  handle: WorkflowHandle,
  decision: ReviewDecision,
  expected: DecisionOutcome['outcome'],
): Promise<void> {
  const outcome = await handle.executeUpdate(decideReviewUpdate, { args: [decision] });
  if (outcome.outcome !== expected) throw new Error(`update: ${outcome.outcome}, expected ${expected}`);
}

/** A watch that outlasts nothing at the spec's timings: checked after 5 s, over within 20 s. */
const shortWatch = { reviewWatchMs: 20_000, reviewWatchFirstCheckMs: 5_000 } satisfies Partial<OrderTimings>;
/** No watch: the order is closed by the decision. */
const noWatch = { reviewWatchMs: 0 } satisfies Partial<OrderTimings>;
/** Stuck while the provider holds the top-up in HANDLING: the deadline falls at 10 s. */
const stuck = { deadlineMs: 10_000, reviewRecheckMs: 15_000 } satisfies Partial<OrderTimings>;
const holdInHandling = (sandbox: TestSandbox, ref: string) =>
  sandbox.changeTopup(ref, { status: 'HANDLING' });

/**
 * A normal order: the lean 14 events with the send's local-activity marker as its only marker, one
 * more for a partial order's split in the memo (test/helpers/orders.ts).
 */
function verifyNormal(history: History, budget = LEAN_ORDER_EVENTS): void {
  const events = history.events ?? [];
  const markers = events.flatMap((e) => e.markerRecordedEventAttributes?.markerName ?? []);
  const sends = markers.filter((name) => name === 'core_local_activity');
  if (events.length > budget || sends.length !== 1 || markers.length !== 1) {
    throw new Error(
      `expected a normal order's history: ${events.length} events, markers ${markers.join(', ')}`,
    );
  }
}

/** The lifecycle asks no `patched()`: a change ships as a new worker version instead. */
function verifyNoPatchMarker(name: string, history: History): void {
  if ((history.events ?? []).some((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch'))
    throw new Error(`${name}: a patch marker in the history`);
}

/** The final upsert carries what the provider debited (DebitAmount), and no memo update is made. */
function verifyDebitRecorded(history: History): void {
  const events = history.events ?? [];
  const debited = events.some(
    (e) => e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.DebitAmount,
  );
  if (!debited) throw new Error('expected DebitAmount in an upsert of the search attributes');
  if (events.some((e) => e.workflowPropertiesModifiedEventAttributes))
    throw new Error('expected no memo update for a normal order');
  verifyNormal(history);
}

/** A partial order's split in its memo (src/orders/lifecycle/debit.workflow.ts), with its debit. */
function verifyPartialSplitRecorded(history: History): void {
  const recorded = (history.events ?? []).some(
    (e) => e.workflowPropertiesModifiedEventAttributes?.upsertedMemo?.fields?.settlement !== undefined,
  );
  if (!recorded) throw new Error('expected the partial split in the settlement memo');
  verifyNormal(history, LEAN_ORDER_EVENTS + PARTIAL_SPLIT_MEMO_EVENTS);
}

/**
 * A top-up made 90 days before the order under its ref, with its body (the sandbox dates it
 * back), and the order's send then answered DUPLICATED_REF with that answer lost.
 */
async function oldTopupThenLostAnswer(
  provider: ProviderClient,
  request: OrderRequest,
  sandbox: TestSandbox,
): Promise<void> {
  const { planCode, msisdn, amount, ref } = request as ReturnType<typeof mobileRequest>;
  await sandbox.settings({ backdateSendsMs: 90 * 24 * 3_600_000 });
  try {
    await provider.sendMobileTopup({ plan_code: planCode, MSSIDN: msisdn, amount, ref });
  } finally {
    await sandbox.settings({ backdateSendsMs: 0 });
  }
  await sandbox.addFault({ kind: 'drop_after_commit', routes: ['mobile.send'], times: 1 });
}

/** A forced REFUNDED the provider contradicts (FULFILLED): DISPUTED, then decided FULFILLED. */
const forceRefundThenFulfilAfterDispute: NonNullable<Scenario['operator']> = async (handle, sandbox, ref) => {
  const note = 'provider support confirmed the reversal';
  await update(handle, { decision: 'REFUNDED', operator: 'recorder', note, force: true }, 'applied');
  await sandbox.changeTopup(ref, { status: 'FULFILLED' });
  await waitForView(handle, (v) => v.status === 'DISPUTED', 60_000);
  await update(
    handle,
    { decision: 'FULFILLED', operator: 'recorder', note: 'fulfilled after all' },
    'applied',
  );
};

const scenarios: Record<string, Scenario> = {
  // Replayed also with a heartbeat in the first task (replay.test.ts), as the gift card's.
  'mobile-fulfilled': {
    request: (ref) => mobileRequest(ref),
    expected: 'FULFILLED',
    verify: verifyDebitRecorded,
  },
  'internet-fulfilled': { request: internetRequest, expected: 'FULFILLED', verify: verifyNormal },
  'gift-card-fulfilled': {
    request: (ref) => giftCardRequest(ref),
    expected: 'FULFILLED',
    verify: verifyDebitRecorded,
  },
  // The debit and the split recorded as a gift card the provider filled in part settles.
  'gift-card-partial-debit-recorded': {
    request: (ref) => ({ ...giftCardRequest(ref, 4), typeId: sandboxTestTypes.partial }),
    expected: 'PARTIALLY_FULFILLED',
    verify: verifyPartialSplitRecorded,
  },
  'mobile-refunded': {
    request: (ref) => mobileRequest(ref, sandboxSpecialNumbers.refunded),
    expected: 'REFUNDED',
    verify: verifyNormal,
  },
  'mobile-refunded-plan-mismatch': {
    request: (ref) => mobileRequest(ref, sandboxSpecialNumbers.planMismatch),
    expected: 'REFUNDED',
    verify: verifyNormal,
  },
  // A send the provider refuses for good (a validation error, 400): FAILED. (A key the sandbox
  // refuses, 401/403, is the account's trouble, not the order's: the send waits as in an outage.)
  'mobile-failed-refused': {
    request: (ref) => ({ ...mobileRequest(ref), planCode: 'NO_SUCH_PLAN' }),
    expected: 'FAILED',
  },
  'mobile-send-lost-fulfilled': {
    request: (ref) => mobileRequest(ref),
    faults: [{ kind: 'drop_after_commit', routes: ['mobile.send'], times: 1 }],
    expected: 'FULFILLED',
  },
  // The review in a run of its own: the run that entered review and continued as new (the
  // continue-as-new), and the review's run, waiting for an operator who decides it (a long wait).
  'mobile-review-own-run-refunded': {
    request: (ref) => mobileRequest(ref, sandboxSpecialNumbers.unknownError),
    timings: noWatch,
    operator: (handle) =>
      update(
        handle,
        { decision: 'REFUNDED', operator: 'recorder', note: 'no credit, ticket 4412', force: true },
        'applied',
      ),
    expected: 'REFUNDED',
    firstRunAs: 'mobile-review-own-run-entered',
    verify: (history) => {
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      if ((started?.input?.payloads?.length ?? 0) !== 5 || !started?.continuedExecutionRunId)
        throw new Error('expected the review run: continued, with the notice and three decisions as input');
    },
  },
  'mobile-review-recheck-then-fulfilled': {
    request: (ref) => mobileRequest(ref, sandboxSpecialNumbers.unknownError),
    operator: async (handle) => {
      await decide('RECHECK', 'asked the provider')(handle);
      await waitForView(handle, (v) => v.timeline.some((e) => e.event.includes('still in review')));
      // Forced: the provider still says UNKNOWN_ERROR, which the check refuses to read as fulfilled.
      await update(
        handle,
        { decision: 'FULFILLED', operator: 'recorder', note: 'provider confirmed by phone', force: true },
        'applied',
      );
    },
    timings: noWatch,
    expected: 'FULFILLED',
  },
  'gift-card-review-refunded': {
    request: (ref) => giftCardRequest(ref),
    faults: [{ kind: 'drop_after_commit', routes: ['giftcards.placeOrder'], times: 1 }],
    operator: decide('REFUNDED', 'no cards issued; refunded'),
    expected: 'REFUNDED',
  },
  'gift-card-replaced-after-not-reached': {
    request: (ref) => giftCardRequest(ref),
    // The first placement (local) cannot connect: nothing reached the provider, it is placed again.
    provider: (client) => refusingFirst(client, 'placeGiftCardOrder'),
    expected: 'FULFILLED',
  },
  'mobile-late-commit-adopted': {
    request: (ref) => mobileRequest(ref),
    // Committed 3 s after the send, which the worker gave up on after 1-2 s: found after the settle window.
    faults: [{ kind: 'late_commit', commitDelayMs: 3_000, routes: ['mobile.send'], times: 1 }],
    timings: { settleMs: 5_000 },
    expected: 'FULFILLED',
  },
  // The documented optional num_trans missing from a FULFILLED internet answer: FULFILLED.
  'internet-fulfilled-without-num-trans': {
    request: internetRequest,
    arrange: (sandbox, ref) => sandbox.changeTopup(ref, { status: 'FULFILLED', without: ['num_trans'] }),
    expected: 'FULFILLED',
  },
  // QUEUED by the provider (internet cards scheduled for later delivery), re-checked at the QUEUED
  // pace, then FULFILLED: the queued long wait.
  'internet-queued-fulfilled': {
    request: internetRequest,
    arrange: async (sandbox, ref) => {
      await sandbox.changeTopup(ref, { status: 'QUEUED' });
      await sandbox.changeTopup(ref, { status: 'FULFILLED', afterMs: 12_000 });
    },
    timings: { queuedRecheckMs: 5_000, queuedDeadlineMs: 120_000 },
    verify: (history) => {
      const upserts = (history.events ?? []).flatMap(
        (e) =>
          e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.OrderStatus ?? [],
      );
      if (upserts.length < 3) throw new Error('expected QUEUED published between SUBMITTED and FULFILLED');
    },
    expected: 'FULFILLED',
  },
  'mobile-ref-reused-review-refunded': {
    request: (ref) => mobileRequest(ref),
    before: (provider, request) => {
      const { planCode, msisdn, amount, ref } = request as ReturnType<typeof mobileRequest>;
      return provider.sendMobileTopup({ plan_code: planCode, MSSIDN: msisdn, amount, ref });
    },
    // Forced: the provider shows the older order's top-up under the ref, which contradicts REFUNDED.
    operator: (handle) =>
      update(
        handle,
        {
          decision: 'REFUNDED',
          operator: 'recorder',
          note: 'the ref belonged to an older order; nothing sent for this one',
          force: true,
        },
        'applied',
      ),
    timings: noWatch,
    expected: 'REFUNDED',
  },
  // The ref was used 90 days before the order (another back office's order, past our retention)
  // with the order's own body; our send meets DUPLICATED_REF and that answer is lost, so the order
  // looks the ref up and finds the old top-up. Not adopted: review (the first run), decided
  // REFUNDED by force (the provider shows FULFILLED, which is not this order's).
  'mobile-reused-ref-old-topup-review-refunded': {
    request: (ref) => mobileRequest(ref),
    before: oldTopupThenLostAnswer,
    timings: noWatch,
    operator: (handle) =>
      update(
        handle,
        {
          decision: 'REFUNDED',
          operator: 'recorder',
          note: 'the top-up under the ref is 90 days old, another order’s; nothing sent for this one',
          force: true,
        },
        'applied',
      ),
    expected: 'REFUNDED',
    firstRunAs: 'mobile-reused-ref-old-topup-review-entered',
  },
  'mobile-stuck-resolved-by-recheck': {
    request: (ref) => mobileRequest(ref),
    // The deadline falls inside HANDLING; the review recheck finds the top-up FULFILLED.
    timings: { deadlineMs: 10_000, reviewRecheckMs: 15_000 },
    expected: 'FULFILLED',
  },

  'mobile-review-update-applied-watched': {
    request: (ref) => mobileRequest(ref, sandboxSpecialNumbers.unknownError),
    timings: shortWatch,
    operator: (handle) =>
      update(handle, { decision: 'FULFILLED', operator: 'recorder', note: 'confirmed by phone' }, 'applied'),
    expected: 'FULFILLED',
  },
  'mobile-review-invalid-decision': {
    request: (ref) => mobileRequest(ref, sandboxSpecialNumbers.unknownError),
    timings: noWatch,
    operator: async (handle) => {
      await handle.signal(resolveReviewSignal, { decision: 'MAYBE', operator: '' } as never);
      await handle
        .executeUpdate(decideReviewUpdate, { args: [{ decision: 'MAYBE' } as never] })
        .then(() => Promise.reject(new Error('the validator let an invalid update in')))
        .catch((err: unknown) => {
          if (!(err instanceof Error) || err.name !== 'WorkflowUpdateFailedError') throw err;
        });
      await waitForView(handle, (v) => v.timeline.some((e) => e.event.startsWith('Invalid review decision')));
      // Forced: the provider still answers UNKNOWN_ERROR, on which a refund waits for its word.
      await handle.signal(resolveReviewSignal, {
        decision: 'REFUNDED',
        operator: 'recorder',
        note: 'refunded by hand',
        force: true,
      });
    },
    expected: 'REFUNDED',
  },
  // REFUNDED on UNKNOWN_ERROR is refused until forced.
  'mobile-review-unknown-error-refund-refused-then-forced': {
    request: (ref) => mobileRequest(ref, sandboxSpecialNumbers.unknownError),
    timings: noWatch,
    operator: async (handle) => {
      const refunded = {
        decision: 'REFUNDED',
        operator: 'recorder',
        note: 'customer says no credit',
      } as const;
      await update(handle, refunded, 'refused');
      await update(
        handle,
        { ...refunded, note: 'support confirmed no credit, ticket 4413', force: true },
        'applied',
      );
    },
    expected: 'REFUNDED',
  },
  'mobile-review-refused-decision': {
    request: (ref) => mobileRequest(ref),
    arrange: holdInHandling,
    timings: { ...stuck, ...noWatch },
    operator: async (handle, sandbox, ref) => {
      const refunded = { decision: 'REFUNDED', operator: 'recorder', note: 'nothing arrived' } as const;
      await update(handle, refunded, 'refused');
      await handle.signal(resolveReviewSignal, refunded);
      await waitForView(handle, (v) => v.timeline.filter((e) => e.event.includes('refused')).length === 2);
      await sandbox.changeTopup(ref, { status: 'FULFILLED' });
    },
    expected: 'FULFILLED',
  },
  // The dispute's own run: started with ReviewSince, as the review queue lists it.
  'mobile-review-forced-disputed-resolved': {
    request: (ref) => mobileRequest(ref),
    arrange: holdInHandling,
    timings: { ...stuck, ...shortWatch },
    operator: forceRefundThenFulfilAfterDispute,
    verify: (history) => {
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      if (!started?.continuedExecutionRunId || !started.searchAttributes?.indexedFields?.ReviewSince) {
        throw new Error("expected the dispute's own run, started with ReviewSince");
      }
    },
    expected: 'FULFILLED',
  },
  // The nightly reconciliation found a closed FULFILLED order refunded: it starts a run that reopens
  // the order as DISPUTED (OrderInput.reconciled); an operator settles it REFUNDED, which the provider confirms.
  'mobile-reconciled-disputed-resolved': {
    request: (ref) => mobileRequest(ref),
    arrange: (sandbox, ref) => sandbox.changeTopup(ref, { status: 'REFUNDED', afterMs: 0 }),
    input: async (provider, request) => reconciledInput(provider, request as MobileTopupRequest),
    timings: noWatch,
    operator: (handle) =>
      update(handle, { decision: 'REFUNDED', operator: 'recorder', note: 'provider refunded' }, 'applied'),
    decidedIn: 'DISPUTED',
    firstRunAs: 'mobile-reconciled-disputed',
    verify: (history) => {
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      if (!started?.continuedExecutionRunId) throw new Error("expected the dispute's own run");
    },
    expected: 'REFUNDED',
  },
  'gift-card-review-order-id-fulfilled': {
    request: (ref) => giftCardRequest(ref),
    faults: [{ kind: 'drop_after_commit', routes: ['giftcards.placeOrder'], times: 1 }],
    timings: noWatch,
    operator: async (handle, sandbox) => {
      const [placed] = await sandbox.giftCardOrders();
      if (!placed) throw new Error('the sandbox placed no order');
      await sandbox.changeGiftCardOrder(placed.orderId, { status: 'FULFILLED' });
      const note = 'found in the provider portal';
      await update(
        handle,
        { decision: 'FULFILLED', operator: 'recorder', note, orderId: placed.orderId },
        'applied',
      );
    },
    expected: 'FULFILLED',
  },
  // REFUNDED forced while the gift-card order is HANDLING; the provider then fills it in part: the
  // watch (a long wait) reopens it DISPUTED (the previous run, recorded too) and an operator's
  // RECHECK settles it PARTIALLY_FULFILLED (the dispute's own run).
  'gift-card-dispute-partial-fill-rechecked': {
    request: (ref) => giftCardRequest(ref, 4),
    faults: [{ kind: 'drop_after_commit', routes: ['giftcards.placeOrder'], times: 1 }],
    timings: shortWatch,
    operator: async (handle, sandbox) => {
      const [placed] = await sandbox.giftCardOrders();
      if (!placed) throw new Error('the sandbox placed no order');
      await sandbox.changeGiftCardOrder(placed.orderId, { status: 'HANDLING' });
      const note = 'the provider portal shows it cancelled';
      const refunded = { decision: 'REFUNDED', operator: 'recorder', note, orderId: placed.orderId } as const;
      await update(handle, { ...refunded, force: true }, 'applied');
      await sandbox.changeGiftCardOrder(placed.orderId, { status: 'PARTIALLY_FILLED' });
      await waitForView(handle, (v) => v.status === 'DISPUTED', 60_000);
      await update(
        handle,
        { decision: 'RECHECK', operator: 'recorder', note: 'part was delivered' },
        'rechecked',
      );
    },
    previousRunAs: 'gift-card-watch-reopened-on-partial-fill',
    expected: 'PARTIALLY_FULFILLED',
  },
  // Terminated while HELD for the balance, resumed by the sweep (its Schedule, triggered here),
  // held again (a long wait) until the balance is topped up, then sent once.
  'mobile-held-terminated-resumed-fulfilled': {
    request: (ref) => mobileRequest(ref),
    arrange: async (sandbox) => void (await sandbox.settings({ balance: 0 })),
    // No account workflow here: the held order tries again on its backstop, this often.
    timings: { reviewRecheckMs: 3_000 },
    drive: async ({ handle, sandbox, client, taskQueue }) => {
      await waitForView(handle, (v) => v.status === 'HELD', 60_000);
      await handle.terminate('recorder: pressed Terminate while held');
      const scheduleId = `record-sweep-${randomBytes(4).toString('hex')}`;
      await ensureOrderSweepSchedule(client, { taskQueue, intervalMs: 3_600_000, scheduleId });
      try {
        const latest = client.workflow.getHandle(handle.workflowId);
        for (let tries = 0; (await latest.describe()).runId === handle.firstExecutionRunId; tries++) {
          if (tries >= 30) throw new Error('the sweep did not resume the order');
          await client.schedule.getHandle(scheduleId).trigger();
          await sleep(1_000);
        }
        await waitForView(latest, (v) => v.status === 'HELD' && v.timeline.length > 2, 60_000);
        await sandbox.settings({ balance: 1_000_000 });
        return latest;
      } finally {
        await client.schedule.getHandle(scheduleId).delete();
      }
    },
    expected: 'FULFILLED',
  },
  'mobile-review-continued-as-new-with-queued-decision': {
    request: (ref) => mobileRequest(ref, sandboxSpecialNumbers.unknownError),
    timings: noWatch,
    // Every check is slow, so a second decision arrives while the first one's check runs.
    faults: [{ kind: 'latency', latencyMs: 800, routes: ['mobile.check'] }],
    // Long once the first decision is done, while the second one waits in the queue.
    continueAsNewAfter: 6,
    operator: async (handle) => {
      const recheck = (note: string) =>
        handle.startUpdate(decideReviewUpdate, {
          args: [{ decision: 'RECHECK', operator: 'recorder', note }],
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        });
      const first = await recheck('first');
      const second = await recheck('second, queued behind the first');
      await Promise.all([first.result(), second.result()]);
      await update(
        handle,
        { decision: 'FULFILLED', operator: 'recorder', note: 'after the new run' },
        'applied',
      );
    },
    verify: (history) => {
      const events = history.events ?? [];
      const accepted = events.flatMap((e, i) =>
        e.workflowExecutionUpdateAcceptedEventAttributes ? [i] : [],
      );
      const continued = events.findIndex((e) => e.workflowExecutionContinuedAsNewEventAttributes);
      const scheduledAfterSecond = events.some(
        (e, i) => i > (accepted[1] ?? Infinity) && i < continued && e.activityTaskScheduledEventAttributes,
      );
      if (accepted.length !== 2 || continued < 0 || !scheduledAfterSecond) {
        throw new Error('expected two updates, the second worked off before the run continued as new');
      }
    },
    expected: 'FULFILLED',
  },
};

/**
 * What the reconciliation starts after a closed FULFILLED run (src/reconciliation/reconciliation.activities.ts): that
 * run's last view, and what the provider now says. The top-up is sent here, as the closed run sent it.
 */
async function reconciledInput(
  provider: ProviderClient,
  request: MobileTopupRequest,
): Promise<Partial<OrderInput>> {
  const sent = await provider.sendMobileTopup({
    plan_code: request.planCode,
    MSSIDN: request.msisdn,
    amount: request.amount,
    ref: request.ref,
  });
  const at = new Date().toISOString();
  return {
    continued: {
      view: {
        ref: request.ref,
        type: 'mobile_topup',
        status: 'FULFILLED',
        providerStatus: 'FULFILLED',
        request,
        providerReference: sent.topupId,
        result: { msisdn: request.msisdn, amount: request.amount },
        acceptedAt: at,
        updatedAt: at,
        completedAt: at,
        timeline: [
          { at, status: 'ACCEPTED', event: 'Order accepted' },
          { at, status: 'SUBMITTED', event: 'Sent to the provider' },
          { at, status: 'FULFILLED', event: 'The provider reports FULFILLED' },
        ],
      },
      deadlineAt: Date.now() + 60_000,
      nextCheckMs: 0,
      eventSequence: 3,
    },
    reconciled: {
      date: at.slice(0, 10),
      providerStatus: 'REFUNDED',
      evidence: `provider status REFUNDED; ledger: REFUND-FLEXY for ${sent.topupId}`,
    },
  };
}

/** A provider whose first call of `method` goes to a closed port: certainly never reached. */
function refusingFirst(client: ProviderClient, method: keyof OrderProvider): OrderProvider {
  const unreachable = testProvider('http://127.0.0.1:1');
  let refused = false;
  const first = async (...args: unknown[]) => {
    try {
      return await (unreachable.client[method] as (...a: unknown[]) => Promise<unknown>)(...args);
    } finally {
      await unreachable.close();
    }
  };
  return new Proxy(client, {
    get(target, prop) {
      if (prop === method && !refused) {
        refused = true;
        return first;
      }
      const value: unknown = Reflect.get(target, prop);
      // The client keeps its state in private fields: call its methods on the client itself.
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The run the workflow's latest run continued from. */
async function previousRunId(handle: WorkflowHandle): Promise<string> {
  const [started] = (await handle.fetchHistory()).events ?? [];
  const runId = started?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
  if (!runId) throw new Error(`${handle.workflowId}: its latest run did not continue from another`);
  return runId;
}

function scaled(timeScale: number, overrides: Partial<OrderTimings> = {}): OrderTimings {
  const timings = { ...defaultOrderTimings.mobile_topup, ...overrides };
  const scale = (ms: number) => Math.max(1, Math.round(ms * timeScale));
  return {
    firstCheckMs: scale(timings.firstCheckMs),
    handlingCheckMs: scale(timings.handlingCheckMs),
    maxIntervalMs: scale(timings.maxIntervalMs),
    pollIntervalMs: timings.pollIntervalMs && scale(timings.pollIntervalMs),
    pollPaceMs: scale(timings.pollPaceMs),
    pollHeartbeatTimeoutMs: timings.pollHeartbeatTimeoutMs,
    deadlineMs: scale(timings.deadlineMs),
    reviewRecheckMs: scale(timings.reviewRecheckMs),
    reviewWatchMs: timings.reviewWatchMs && scale(timings.reviewWatchMs),
    reviewWatchFirstCheckMs: scale(timings.reviewWatchFirstCheckMs),
    activityTimeoutMs: 10_000,
    settleMs: scale(timings.settleMs),
    maxHoldMs: scale(timings.maxHoldMs),
    queuedRecheckMs: scale(timings.queuedRecheckMs),
    queuedDeadlineMs: scale(timings.queuedDeadlineMs),
  };
}

/** Starts the scenario's order; one that continues as new gets its history limit from a probe order first. */
async function startScenario(
  env: Awaited<ReturnType<typeof startOrderTestWorkers>>,
  taskQueue: string,
  scenario: Scenario,
  timings: OrderTimings,
  { sandbox, provider }: { sandbox: TestSandbox; provider: ProviderClient },
): Promise<{ handle: WorkflowHandleWithFirstExecutionRunId; ref: string }> {
  const begin = async (label: string, historyEventLimit?: number) => {
    const ref = newRef(label);
    const request = scenario.request(ref);
    await scenario.arrange?.(sandbox, ref);
    await scenario.before?.(provider, request, sandbox);
    const handle = await startOrder(env.client, taskQueue, request, {
      ...(await scenario.input?.(provider, request)),
      timings,
      historyEventLimit,
    });
    return { handle, ref };
  };
  if (scenario.continueAsNewAfter === undefined) return begin('scenario');
  const probe = await begin('probe');
  await waitForView(probe.handle, (v) => v.status === 'NEEDS_REVIEW', 120_000);
  // The query may answer before the task that put it in review is recorded: wait for a stable length.
  let inReview = -1;
  for (let length = 0; length !== inReview; await sleep(500)) {
    inReview = length;
    length = (await probe.handle.describe()).historyLength;
  }
  await probe.handle.terminate('probe done');
  return begin('scenario', inReview + scenario.continueAsNewAfter);
}

const webhookScenarios = [
  'mobile-fulfilled-webhooks',
  'mobile-review-decided-webhooks',
  'webhook-delivery-retried',
  'mobile-fulfilled-webhooks-direct',
] as const;

/**
 * The webhook scenarios: a client with one endpoint whose receiver fails each event's first
 * attempt (handed off to the delivery workflow) and one that answers at once (delivered by the
 * announcement itself, recorded in its result). The fixtures recorded before direct delivery
 * (`mobile-fulfilled-webhooks`, `mobile-review-decided-webhooks`) had the first endpoint only.
 */
async function recordWebhookScenarios(
  timeScale: number,
  wanted: (name: string) => boolean,
): Promise<string[]> {
  if (!webhookScenarios.some(wanted)) return [];
  const signingKey = randomBytes(32);
  const seen = new Set<string>();
  const receiver = await startReceiver({
    secrets: [endpointSecret(signingKey, 'recorder', 'main', 1)],
    answer: (d) => {
      const first = !seen.has(d.id);
      seen.add(d.id);
      return { status: first ? 500 : 204 };
    },
  });
  const prompt = await startReceiver({ secrets: [endpointSecret(signingKey, 'recorder', 'prompt', 1)] });
  const stack = await startOrderStack({
    name: 'record-webhooks',
    sandbox: { timeScale },
    workers: { orders: {} },
    api: {
      // No watch: the decided order closes with its decision.
      timingsFor: () => scaled(timeScale, noWatch),
    },
    webhooks: {
      clients: clientsWith({
        recorder: {
          key: 'recorder-key',
          webhooks: [
            { id: 'main', url: receiver.url },
            { id: 'prompt', url: prompt.url },
          ],
        },
      }),
      signingKey,
      policy: { idleCloseMs: 2_000 },
    },
  });
  const rows: string[] = [];
  const write = async (name: string, workflowId: string) => {
    const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
    writeFileSync(join(historiesDir, `${name}.json`), historyToJson(history));
    rows.push(`| ${name} | ${history.events?.length ?? 0} events |`);
  };
  const submit = async (request: OrderRequest) => {
    const res = await stack.api.request('POST', '/v1/orders', { body: request, apiKey: 'recorder-key' });
    if (res.status !== 201) throw new Error(`submitting ${request.ref}: ${res.status} ${res.text}`);
    return orderWorkflowId(request.ref, 'recorder');
  };
  const closed = (workflowId: string) =>
    eventually(
      async () => (await stack.client.workflow.getHandle(workflowId).describe()).status.name,
      (status) => status === 'COMPLETED',
      `${workflowId} closed`,
      180_000,
    );
  try {
    const fulfilled = await submit(mobileRequest(newRef('wh-fulfilled')));
    const reviewRef = newRef('wh-review');
    const reviewed = await submit(mobileRequest(reviewRef, sandboxSpecialNumbers.unknownError));
    await eventually(
      async () => (await stack.client.workflow.getHandle(reviewed).query<OrderView>('status')).status,
      (status) => status === 'NEEDS_REVIEW',
      'in review',
      120_000,
    );
    const decided = await stack.api.request('POST', `/v1/orders/${reviewRef}/review`, {
      // Forced: the provider still answers UNKNOWN_ERROR, on which a refund waits for its word.
      body: { decision: 'REFUNDED', note: 'no credit seen; refunded', force: true },
      apiKey: 'recorder-key',
    });
    if (decided.status !== 200 && decided.status !== 202)
      throw new Error(`review: ${decided.status} ${decided.text}`);
    await Promise.all([closed(fulfilled), closed(reviewed), closed(webhookDeliveryWorkflowId(fulfilled))]);
    if (wanted('mobile-fulfilled-webhooks')) await write('mobile-fulfilled-webhooks', fulfilled);
    if (wanted('mobile-review-decided-webhooks')) await write('mobile-review-decided-webhooks', reviewed);
    if (wanted('webhook-delivery-retried'))
      await write('webhook-delivery-retried', webhookDeliveryWorkflowId(fulfilled));
    if (wanted('mobile-fulfilled-webhooks-direct'))
      await write('mobile-fulfilled-webhooks-direct', fulfilled);
  } finally {
    await stack.stop();
    await Promise.all([receiver.close(), prompt.close()]);
  }
  return rows;
}

/**
 * The provider account workflow's scenarios (src/provider-account/provider-account.workflow.ts): two orders held for
 * the balance let go in acceptance order as the sandbox's balance is topped up (enough for one, then
 * for both), then one held for its operator down, let go once it is up; recorded once the account
 * workflow has ended (idle). `mobile-held-let-go-by-account` is the first order's history (the held
 * long wait, its hold published in search attributes).
 */
const accountScenarios = ['account-held-listed', 'mobile-held-let-go-by-account'] as const;

async function recordAccountScenarios(
  timeScale: number,
  wanted: (name: string) => boolean,
): Promise<string[]> {
  const names = accountScenarios.filter(wanted);
  if (names.length === 0) return [];
  const checkMs = 1_000;
  const stack = await startOrderStack({
    name: 'record-account',
    sandbox: { timeScale },
    workers: { orders: { account: { checkMs } } },
    api: { timingsFor: () => scaled(timeScale, noWatch) },
    webhooks: {
      clients: clientsWith({ recorder: { key: 'recorder-key', webhooks: [] } }),
    },
  });
  const admin = new SandboxAdmin(stack.sandbox.url, ADMIN_TOKEN);
  const submit = async (label: string) => {
    const request = mobileRequest(newRef(label));
    const res = await stack.api.request('POST', '/v1/orders', { body: request, apiKey: 'recorder-key' });
    if (res.status !== 201) throw new Error(`submitting ${request.ref}: ${res.status} ${res.text}`);
    return stack.client.workflow.getHandle(orderWorkflowId(request.ref, 'recorder'));
  };
  const rows: string[] = [];
  try {
    await admin.settings({ balance: 0 });
    const first = await submit('acct-first');
    await waitForView(first, (v) => v.status === 'HELD', 60_000);
    const second = await submit('acct-second');
    await waitForView(second, (v) => v.status === 'HELD', 60_000);
    // Enough for the first (500 DZD) only, then for both.
    await admin.settings({ balance: 600 });
    await waitForView(first, (v) => v.status === 'FULFILLED', 60_000);
    await admin.settings({ balance: 1_000_000 });
    await waitForView(second, (v) => v.status === 'FULFILLED', 60_000);
    await admin.operators({ djezzy: 'down' });
    // The worker's gate reads /v3/ping at most this often.
    await sleep(2 * checkMs);
    const third = await submit('acct-operator');
    await waitForView(third, (v) => v.status === 'HELD', 60_000);
    await admin.operators({ djezzy: 'up' });
    await waitForView(third, (v) => v.status === 'FULFILLED', 60_000);
    const account = stack.client.workflow.getHandle(accountWorkflowId(stack.taskQueues.orders));
    await eventually(
      async () => (await account.describe()).status.name,
      (status) => status === 'COMPLETED',
      'the account workflow ended (idle)',
      180_000,
    );
    for (const name of names) {
      const history = await (name.startsWith('mobile-') ? first : account).fetchHistory();
      writeFileSync(join(historiesDir, `${name}.json`), historyToJson(history));
      rows.push(`| ${name} | ${history.events?.length ?? 0} events |`);
    }
  } finally {
    await stack.stop();
  }
  return rows;
}

/**
 * `webhook-delivery-deferred`: a delivery workflow one of whose attempts the worker deferred (the
 * endpoint at its cap of attempts in flight, WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT). Two orders of one client, first tries off, a cap of one and a receiver
 * that answers in 600 ms: their delivery workflows' first attempts meet at the endpoint. The
 * fixture is the one whose result shows a deferral.
 */
async function recordDeferredScenario(
  timeScale: number,
  wanted: (name: string) => boolean,
): Promise<string[]> {
  const name = 'webhook-delivery-deferred';
  if (!wanted(name)) return [];
  const signingKey = randomBytes(32);
  const receiver = await startReceiver({
    secrets: [endpointSecret(signingKey, 'recorder', 'main', 1)],
    answer: () => ({ status: 204, delayMs: 600 }),
  });
  const stack = await startOrderStack({
    name: 'record-deferred',
    sandbox: { timeScale },
    workers: { orders: {} },
    api: { timingsFor: () => scaled(timeScale, noWatch) },
    webhooks: {
      clients: clientsWith({
        recorder: { key: 'recorder-key', webhooks: [{ id: 'main', url: receiver.url }] },
      }),
      signingKey,
      policy: { idleCloseMs: 2_000 },
      direct: { maxInFlight: 0 },
      maxInFlightPerEndpoint: 1,
    },
  });
  try {
    const { ids, results } = await twoOrdersDeliveries(stack, 'wh-deferred');
    const at = results.findIndex((r) =>
      r.events.some((e) => e.deliveries.some((d) => (d.deferrals ?? 0) > 0)),
    );
    if (at < 0) throw new Error(`${name}: no attempt was deferred; record again`);
    const history = await stack.client.workflow.getHandle(ids[at]!).fetchHistory();
    writeFileSync(join(historiesDir, `${name}.json`), historyToJson(history));
    return [`| ${name} | ${history.events?.length ?? 0} events |`];
  } finally {
    await stack.stop();
    await receiver.close();
  }
}

/**
 * Two orders of the `recorder` client submitted at once, and their delivery workflows' results:
 * each starts with its order's first event (a signal-with-start from the order's first task).
 */
async function twoOrdersDeliveries(
  stack: OrderStack<'orders'>,
  refPrefix: string,
): Promise<{ ids: string[]; results: WebhookDeliveryState[] }> {
  const ids = await Promise.all(
    [newRef(refPrefix), newRef(refPrefix)].map(async (ref) => {
      const res = await stack.api.request('POST', '/v1/orders', {
        body: mobileRequest(ref),
        apiKey: 'recorder-key',
      });
      if (res.status !== 201) throw new Error(`submitting ${ref}: ${res.status} ${res.text}`);
      return webhookDeliveryWorkflowId(orderWorkflowId(ref, 'recorder'));
    }),
  );
  const results = await Promise.all(
    ids.map(async (id) => {
      const handle = stack.client.workflow.getHandle(id);
      await eventually(
        () =>
          handle.describe().then(
            (d) => d.status.name,
            () => 'NOT STARTED',
          ),
        (status) => status !== 'NOT STARTED',
        `${id} started`,
        60_000,
      );
      return (await handle.result()) as WebhookDeliveryState;
    }),
  );
  return { ids, results };
}

/**
 * `webhook-delivery-deferral-expired`: a delivery workflow whose event's retry window ended while
 * the worker deferred its attempts. Two orders of one client,
 * first tries off, a cap of one, a window of 3 s, and a receiver that holds the first delivery it
 * gets for 8 s: the other order's events wait their turn past their window and end `failed`. The
 * fixture is the one whose result shows a failed event that was deferred.
 */
async function recordDeferralExpiredScenario(
  timeScale: number,
  wanted: (name: string) => boolean,
): Promise<string[]> {
  const name = 'webhook-delivery-deferral-expired';
  if (!wanted(name)) return [];
  const signingKey = randomBytes(32);
  let first = true;
  const receiver = await startReceiver({
    secrets: [endpointSecret(signingKey, 'recorder', 'main', 1)],
    answer: () => {
      const delayMs = first ? 8_000 : 0;
      first = false;
      return { status: 204, delayMs };
    },
  });
  const stack = await startOrderStack({
    name: 'record-expired',
    sandbox: { timeScale },
    workers: { orders: {} },
    api: { timingsFor: () => scaled(timeScale, noWatch) },
    webhooks: {
      clients: clientsWith({
        recorder: { key: 'recorder-key', webhooks: [{ id: 'main', url: receiver.url }] },
      }),
      signingKey,
      policy: { attemptTimeoutMs: 30_000, retryMaxIntervalMs: 1_000, retryForMs: 3_000, idleCloseMs: 2_000 },
      senderTimeoutMs: 30_000,
      direct: { maxInFlight: 0 },
      maxInFlightPerEndpoint: 1,
    },
  });
  try {
    const { ids, results } = await twoOrdersDeliveries(stack, 'wh-expired');
    const at = results.findIndex((r) =>
      r.events.some((e) => e.deliveries.some((d) => d.state === 'failed' && (d.deferrals ?? 0) > 0)),
    );
    if (at < 0) throw new Error(`${name}: no deferred event ended failed; record again`);
    const history = await stack.client.workflow.getHandle(ids[at]!).fetchHistory();
    writeFileSync(join(historiesDir, `${name}.json`), historyToJson(history));
    return [`| ${name} | ${history.events?.length ?? 0} events |`];
  } finally {
    await stack.stop();
    await receiver.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'time-scale': { type: 'string', default: '1' },
      only: { type: 'string' },
      overwrite: { type: 'boolean', default: false },
    },
  });
  const timeScale = Number(values['time-scale']);
  const only = values.only?.split(',').map((name) => name.trim());
  const wanted = (name: string) =>
    only ? only.includes(name) : values.overwrite || !existsSync(join(historiesDir, `${name}.json`));
  mkdirSync(historiesDir, { recursive: true });
  const webhookRows = [
    ...(await recordWebhookScenarios(timeScale, wanted)),
    ...(await recordAccountScenarios(timeScale, wanted)),
    ...(await recordDeferredScenario(timeScale, wanted)),
    ...(await recordDeferralExpiredScenario(timeScale, wanted)),
  ];
  for (const row of webhookRows) console.log(row);
  const names = Object.keys(scenarios).filter(wanted);
  if (names.length === 0) {
    if (webhookRows.length === 0)
      console.log('every scenario has a fixture; name some with --only, or --overwrite them all');
    return;
  }
  const setups = await Promise.all(
    names.map(async (name) => {
      const scenario = scenarios[name]!;
      const sandbox = await startTestSandbox(timeScale);
      for (const fault of scenario.faults ?? []) await sandbox.addFault(fault);
      const provider = testProvider(sandbox.url, scenario.apiKey);
      const worker = scenario.provider?.(provider.client) ?? provider.client;
      return { name, scenario, sandbox, provider, counted: countingProvider(worker) };
    }),
  );
  const env = await startOrderTestWorkers(
    Object.fromEntries(setups.map((s) => [s.name, s.counted.provider])),
  );
  try {
    mkdirSync(historiesDir, { recursive: true });
    // allSettled: one failed scenario must not close the connection under the others.
    const settled = await Promise.allSettled(
      setups.map(async ({ name, scenario, counted, sandbox, provider }) => {
        const timings = scaled(timeScale, scenario.timings);
        const { handle, ref } = await startScenario(env, env.taskQueues[name]!, scenario, timings, {
          sandbox,
          provider: provider.client,
        });
        const firstRunId = handle.firstExecutionRunId;
        if (scenario.operator) {
          const waitsIn = scenario.decidedIn ?? 'NEEDS_REVIEW';
          await waitForView(handle, (v) => v.status === waitsIn, 120_000);
          await scenario.operator(handle, sandbox, ref);
        }
        const driven = await scenario.drive?.({
          handle,
          sandbox,
          client: env.client,
          taskQueue: env.taskQueues[name]!,
        });
        const view = await (driven ?? handle).result();
        if (view.status !== scenario.expected)
          throw new Error(`${name}: ${view.status}, expected ${scenario.expected}`);
        // A scenario that continues as new is recorded by the review's run: the one that did.
        const recorded =
          scenario.continueAsNewAfter === undefined
            ? (driven ?? handle)
            : env.client.workflow.getHandle(handle.workflowId, await previousRunId(handle));
        const history = await recorded.fetchHistory();
        scenario.verify?.(history);
        verifyNoPatchMarker(name, history);
        writeFileSync(join(historiesDir, `${name}.json`), historyToJson(history));
        if (scenario.firstRunAs) {
          const first = await env.client.workflow.getHandle(handle.workflowId, firstRunId).fetchHistory();
          writeFileSync(join(historiesDir, `${scenario.firstRunAs}.json`), historyToJson(first));
        }
        if (scenario.previousRunAs) {
          const previous = env.client.workflow.getHandle(handle.workflowId, await previousRunId(handle));
          const history = await previous.fetchHistory();
          writeFileSync(join(historiesDir, `${scenario.previousRunAs}.json`), historyToJson(history));
        }
        return { name, status: view.status, events: history.events?.length ?? 0, calls: counted.total() };
      }),
    );
    const failures = settled.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    if (failures.length > 0) throw new AggregateError(failures, 'some scenarios failed');
    const rows = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    console.log(`time scale ${timeScale}; histories written to ${historiesDir}\n`);
    console.log('| scenario | final status | history events | provider calls |');
    console.log('|---|---|---|---|');
    for (const r of rows) console.log(`| ${r.name} | ${r.status} | ${r.events} | ${r.calls} |`);
  } finally {
    await env.stop();
    await Promise.all(setups.map(async (s) => (await s.provider.close(), await s.sandbox.close())));
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
