/**
 * The chaos run's verdict: what happened to every order, checked against the intake API's answers,
 * the order views, the sandbox's send counters and Temporal. A "problem" fails the run; outcomes
 * that faults legitimately cause (a top-up in review, a gift card in review) are only counted.
 */
import { LEGACY_CLIENT_ID } from '../../src/clients/model';
import { providerRefFor } from '../../src/orders/provider-ref';
import type { PlacedGiftCardOrder, SendReport } from '../../src/sandbox/state';
import { checkGiftCards, type GiftCardTruth } from './gift-card-truth';
import type { OrderType } from '../../contract/schemas';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { sandboxRefundMessages } from '../../src/sandbox/simulation';
import type { OrderView } from '../../contract/order';
import type { IntakeStats } from './intake';
import type { ProviderRecords } from './provider-records';
import type { Expectation, Special } from './orders';
import { isSettled, type OrderRecord } from './submit';

export interface Verdict {
  submissions: {
    orders: number;
    controlOrders: number;
    accepted: number;
    /** Accepted with 201; the rest answered 200 because a retried attempt had already started them. */
    created: number;
    notAccepted: number;
    sameBody: { sent: number; ok: number };
    conflicting: { sent: number; ok: number };
    concurrentPairs: { sent: number; ok: number };
    retried: Record<string, number>;
    internalErrors: number;
  };
  byStatus: Record<string, number>;
  byType: Record<string, Record<string, number>>;
  specials: Record<string, { expected: string; ok: number; total: number }>;
  control: { total: number; asExpected: number };
  /** Legitimate outcomes of faults: counted, not failed. */
  underFaults: {
    topupsInReview: number;
    giftCardsInReview: number;
    failedNothingSent: number;
    /** Sent while the provider reported its operator down (the gate's reading lagged): the provider refunded it. */
    refundedOperatorDown: number;
    /** Why those orders went to review (the view's review.reason). */
    reviewReasons: Record<string, number>;
  };
  sandbox: {
    refsSent: number;
    sendAttempts: number;
    acceptedTwice: number;
    giftCardPlacements: number;
    giftCardOrders: number;
    giftCardsFulfilled: number;
    giftCardsInReview: number;
  };
  /**
   * Orders that were HELD during the run (their view's hold and timeline), by why: the balance
   * ran out, /v3/ping reported their operator down. An order held for both counts in both.
   */
  held: { orders: number; balance: number; operator: number };
  /**
   * The money check, against the provider's own records: sends it fulfilled, and how many of
   * those we report FAILED or REFUNDED (each one a customer credited whom the back office refunds).
   */
  money: { providerFulfilled: number; reportedFailedOrRefunded: number };
  /** Gift cards against the sandbox's truth (gift-card-truth.ts). */
  giftCards: Omit<GiftCardTruth, 'problems'>;
  workflows: number;
  /** Accepted orders that have no workflow, or never became final nor went to review. */
  lost: number;
  sentTwice: number;
  problems: string[];
}

const specialLabel: Record<Special, string> = {
  refunded: 'REFUNDED with refundMessage',
  planMismatch: 'REFUNDED with suggestedOffers',
  unknownError: 'NEEDS_REVIEW (UNKNOWN_ERROR)',
};

/** Does the view show the scripted outcome, including what the design says it carries? */
function specialOutcomeHolds(special: Special, view: OrderView): boolean {
  switch (special) {
    case 'refunded':
      return view.status === 'REFUNDED' && typeof view.result?.refundMessage === 'string';
    case 'planMismatch':
      return view.status === 'REFUNDED' && (view.result?.suggestedOffers?.length ?? 0) > 0;
    case 'unknownError':
      return view.status === 'NEEDS_REVIEW' && /UNKNOWN_ERROR/.test(view.review?.reason ?? '');
  }
}

/** A FULFILLED view must deliver what was ordered. */
function deliveryProblem(view: OrderView): string | undefined {
  const { request, result } = view;
  switch (request.type) {
    case 'mobile_topup':
      return result?.msisdn === request.msisdn && result.amount === request.amount
        ? undefined
        : 'wrong number or amount';
    case 'internet_topup':
      // num_trans is optional (documented): the card code is the delivery.
      return result?.cardCode ? undefined : 'no card code';
    case 'gift_card':
      return result?.cards?.length === request.quantity
        ? undefined
        : `${result?.cards?.length ?? 0} cards for ${request.quantity}`;
  }
}

function meetsExpectation(expected: Expectation, view: OrderView): boolean {
  if (expected.special) return specialOutcomeHolds(expected.special, view);
  return view.status === 'FULFILLED' && deliveryProblem(view) === undefined;
}

/** Why the order was ever HELD: its view's last hold, and every HELD entry of its timeline. */
export function holdReasons(view: OrderView): Set<'balance' | 'operator'> {
  const reasons = new Set<'balance' | 'operator'>();
  if (view.hold) reasons.add(view.hold.reason);
  for (const entry of view.timeline) {
    if (entry.status !== 'HELD') continue;
    if (/operator .* down/.test(entry.event)) reasons.add('operator');
    else if (/balance/.test(entry.event)) reasons.add('balance');
  }
  return reasons;
}

/** Provider statuses under which it delivered something (all of it, or part of a gift-card order). */
const deliveredStatuses = new Set(['FULFILLED', 'PARTIALLY_FILLED']);

function bump(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

export async function verify(input: {
  records: OrderRecord[];
  sends: SendReport;
  /** What the provider's list routes say became of every send (provider-records.ts). */
  provider: ProviderRecords;
  workflowCount: number;
  intakeStats: IntakeStats;
  /** Every gift-card placement the sandbox committed, with the workflow ID that placed it. */
  placements: PlacedGiftCardOrder[];
  /** Why an order's history shows it was hit by trouble (a failed or timed-out task), or undefined. */
  troubleOf: (ref: string) => Promise<string | undefined>;
}): Promise<Verdict> {
  const { records, sends, provider, workflowCount, intakeStats, troubleOf, placements } = input;
  const problems: string[] = [];
  const accepted = records.filter((r) => r.accepted);
  const byStatus: Record<string, number> = {};
  const byType: Record<string, Record<string, number>> = {};
  const specials: Verdict['specials'] = Object.fromEntries(
    Object.entries(sandboxSpecialNumbers).map(([key, msisdn]) => [
      msisdn,
      { expected: specialLabel[key as Special], ok: 0, total: 0 },
    ]),
  );
  const underFaults: Verdict['underFaults'] = {
    topupsInReview: 0,
    giftCardsInReview: 0,
    failedNothingSent: 0,
    refundedOperatorDown: 0,
    reviewReasons: {},
  };
  const held = { orders: 0, balance: 0, operator: 0 };
  let lost = 0;
  let controlOk = 0;
  const sameBody = { sent: 0, ok: 0 };
  const conflicting = { sent: 0, ok: 0 };
  const concurrentPairs = { sent: 0, ok: 0 };

  for (const record of records) {
    const { request, expected, control } = record.planned;
    const name = `${request.ref} (${request.type}${expected.special ? ` ${sandboxSpecialNumbers[expected.special]}` : ''})`;
    for (const problem of record.answerProblems) problems.push(`${name}: ${problem}`);
    if (!record.accepted) {
      problems.push(
        `${name}: not accepted (${record.error ?? `answers ${record.race?.join(', ') ?? record.status}`})`,
      );
      continue;
    }
    if (record.repeat) {
      sameBody.sent++;
      if (record.repeat.status === 200 && record.repeat.sameOrder) sameBody.ok++;
      else
        problems.push(
          `${name}: the same body again answered ${record.repeat.status}, expected 200 and the same order`,
        );
    }
    if (record.conflict) {
      conflicting.sent++;
      if (record.conflict.status === 409 && record.conflict.type === '/problems/ref-conflict')
        conflicting.ok++;
      else
        problems.push(
          `${name}: a different body under its ref answered ${record.conflict.status} ${record.conflict.type ?? ''}, expected 409 ref-conflict`,
        );
    }
    if (record.race) {
      concurrentPairs.sent++;
      // Both may answer 200 when a retried attempt started it; never two 201s.
      if (record.race.filter((s) => s === 201).length <= 1) concurrentPairs.ok++;
      else problems.push(`${name}: two simultaneous submissions answered ${record.race.join(' and ')}`);
    }

    const view = record.view;
    if (!view || !isSettled(record)) {
      lost++;
      problems.push(
        `${name}: LOST — ${view ? `still ${view.status}` : `no order view (last read: HTTP ${record.readStatus ?? 'none'})`}`,
      );
      continue;
    }
    bump(byStatus, view.status);
    bump((byType[request.type] ??= {}), view.status);
    const reasons = holdReasons(view);
    if (reasons.size > 0) held.orders++;
    for (const reason of reasons) held[reason]++;
    // Every hold of the run is seconds long and the longest hold a minute (stack.ts): this order
    // was never let go.
    if (view.failure?.code === 'NOT_SENT')
      problems.push(`${name}: FAILED NOT_SENT — held (${[...reasons].join(', ')}) and never let go`);
    // An empty account or an operator down holds an order; it is never the order's fault.
    if (view.status === 'FAILED' && /INSUFFICIENT_BALANCE|OPERATOR/.test(view.failure?.code ?? ''))
      problems.push(
        `${name}: FAILED ${view.failure?.code} — the account's trouble must hold it, not fail it`,
      );
    if (
      view.ref !== request.ref ||
      view.type !== request.type ||
      JSON.stringify(view.request) !== JSON.stringify(request)
    ) {
      problems.push(`${name}: the order view does not hold the submitted request`);
    }
    if (expected.special) {
      const tally = specials[sandboxSpecialNumbers[expected.special]]!;
      tally.total++;
      if (specialOutcomeHolds(expected.special, view)) tally.ok++;
      else problems.push(`${name}: expected ${specialLabel[expected.special]}, got ${view.status}`);
    }
    if (control) {
      if (meetsExpectation(expected, view)) controlOk++;
      else if (!expected.special)
        problems.push(`${name}: a control order (no faults) ended ${view.status}, expected FULFILLED`);
      continue;
    }
    if (expected.special || meetsExpectation(expected, view)) continue;

    // A normal order that was hit by faults: review is legitimate, if its history shows why.
    if (view.status === 'FULFILLED') {
      problems.push(`${name}: FULFILLED but ${deliveryProblem(view)}`);
      continue;
    }
    const trouble = await troubleOf(request.ref);
    if (view.status === 'NEEDS_REVIEW' && trouble) {
      if (request.type === 'gift_card') underFaults.giftCardsInReview++;
      else underFaults.topupsInReview++;
      bump(underFaults.reviewReasons, view.review?.reason ?? '(no reason given)');
    } else if (view.status === 'FAILED' && trouble) {
      underFaults.failedNothingSent++;
    } else if (
      view.status === 'REFUNDED' &&
      view.result?.refundMessage === sandboxRefundMessages.operatorDown
    ) {
      // The sandbox refunds a send to an operator /v3/ping reports down (docs/contributors.md
      // "Provider sandbox"): one the gate let through on a reading older than the phase.
      underFaults.refundedOperatorDown++;
    } else {
      problems.push(
        `${name}: expected FULFILLED, got ${view.status} ${trouble ? `(${trouble})` : 'with no fault in its history'}`,
      );
    }
  }

  // ---- the provider's side: nothing sent twice, money moved exactly when the order says so ----
  // The provider knows each top-up by the ref derived from (client, ref); the chaos API runs on
  // API_KEYS, whose one client is `default`.
  const topups = new Map(
    accepted
      .filter((r) => r.planned.request.type !== 'gift_card')
      .map((r) => [providerRefFor(LEGACY_CLIENT_ID, r.planned.request.ref), r]),
  );
  let sentTwice = 0;
  let sendAttempts = 0;
  for (const [providerRef, counts] of Object.entries(sends.refs)) {
    sendAttempts += counts.attempts;
    const record = topups.get(providerRef);
    const ref = record?.planned.request.ref ?? providerRef;
    if (counts.accepted > 1) {
      sentTwice++;
      problems.push(`${ref}: SENT TWICE — the provider accepted ${counts.accepted} sends`);
    }
    const family = record?.planned.request.type === 'mobile_topup' ? 'mobile' : 'internet';
    if (!record) problems.push(`${ref}: sent to the provider, but no accepted top-up has this ref`);
    else if (counts.family !== family)
      problems.push(`${ref}: sent as ${counts.family}, ordered as ${family}`);
  }
  for (const [providerRef, record] of topups) {
    const ref = record.planned.request.ref;
    const status = record.view?.status;
    const sent = sends.refs[providerRef]?.accepted ?? 0;
    const mustHaveSent =
      status === 'FULFILLED' || status === 'REFUNDED' || record.planned.expected.special === 'unknownError';
    if (mustHaveSent && sent !== 1)
      problems.push(`${ref}: ${status}, but the provider accepted ${sent} sends`);
    if (status === 'FAILED' && sent !== 0)
      problems.push(`${ref}: FAILED, but the provider accepted a send (money moved)`);
  }
  const giftCards = accepted.filter((r) => r.planned.request.type === 'gift_card');

  // ---- the money check: nothing the provider delivered may be reported FAILED or REFUNDED ----
  const money = { providerFulfilled: 0, reportedFailedOrRefunded: 0 };
  const moneyLost = (ref: string, status: string, what: string) => {
    money.reportedFailedOrRefunded++;
    problems.push(`${ref}: MONEY — reported ${status}, but the provider's records show ${what}`);
  };
  const failedOrRefunded = (status: string | undefined) => status === 'FAILED' || status === 'REFUNDED';
  for (const row of provider.topups) {
    if (row.status !== 'FULFILLED') continue;
    money.providerFulfilled++;
    const record = topups.get(row.ref);
    const status = record?.view?.status;
    if (record && failedOrRefunded(status))
      moneyLost(record.planned.request.ref, status!, `the ${row.family} top-up FULFILLED`);
  }
  const giftCardByOrderId = new Map(
    giftCards.flatMap((r) => (r.view?.providerReference ? [[r.view.providerReference, r] as const] : [])),
  );
  for (const row of provider.giftCardOrders) {
    if (!deliveredStatuses.has(row.status)) continue;
    money.providerFulfilled++;
    const record = giftCardByOrderId.get(row.orderId);
    const status = record?.view?.status;
    if (record && failedOrRefunded(status))
      moneyLost(record.planned.request.ref, status!, `gift-card order ${row.orderId} ${row.status}`);
  }

  const giftCardsFulfilled = giftCards.filter((r) => r.view?.status === 'FULFILLED').length;
  const giftCardsInReview = giftCards.filter((r) => r.view?.status === 'NEEDS_REVIEW').length;
  const placed = sends.giftCardOrders.placed;
  // Each fulfilled card order was placed; each other placement must have left its order in review.
  if (placed > giftCards.length)
    problems.push(`gift cards: ${placed} placements for ${giftCards.length} orders`);
  if (placed < giftCardsFulfilled || placed > giftCardsFulfilled + giftCardsInReview) {
    problems.push(
      `gift cards: ${placed} placements, but ${giftCardsFulfilled} fulfilled and ${giftCardsInReview} in review`,
    );
  }
  if (workflowCount !== accepted.length) {
    problems.push(`Temporal holds ${workflowCount} order workflows for ${accepted.length} accepted orders`);
  }
  if (intakeStats.internalErrors > 0)
    problems.push(`the intake API answered 500 ${intakeStats.internalErrors} times`);

  const { problems: giftCardProblems, ...giftCardTruth } = checkGiftCards(records, placements);
  problems.push(...giftCardProblems);
  const controls = accepted.filter((r) => r.planned.control);
  return {
    giftCards: giftCardTruth,
    submissions: {
      orders: records.length,
      controlOrders: records.filter((r) => r.planned.control).length,
      accepted: accepted.length,
      created: accepted.filter((r) => r.status === 201).length,
      notAccepted: records.length - accepted.length,
      sameBody,
      conflicting,
      concurrentPairs,
      retried: intakeStats.retried,
      internalErrors: intakeStats.internalErrors,
    },
    byStatus,
    byType: byType as Record<OrderType, Record<string, number>>,
    specials,
    control: { total: controls.length, asExpected: controlOk },
    underFaults,
    sandbox: {
      refsSent: Object.keys(sends.refs).length,
      sendAttempts,
      acceptedTwice: sentTwice,
      giftCardPlacements: placed,
      giftCardOrders: giftCards.length,
      giftCardsFulfilled,
      giftCardsInReview,
    },
    held,
    money,
    workflows: workflowCount,
    lost,
    sentTwice: sentTwice + giftCardTruth.placedTwice,
    problems,
  };
}
