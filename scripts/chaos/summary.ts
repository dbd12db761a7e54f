/** The chaos run's printed summary: plain text, one fact a line, the verdict last. */
import type { ChaosSummary } from './run';

const statuses = ['FULFILLED', 'REFUNDED', 'FAILED', 'NEEDS_REVIEW'] as const;
const types = ['mobile_topup', 'internet_topup', 'gift_card'] as const;
const MAX_PROBLEMS_SHOWN = 40;

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const percent = (n: number, of: number) => `${of === 0 ? 0 : ((100 * n) / of).toFixed(1)} %`;
const counts = (record: Record<string, number>) =>
  Object.entries(record)
    .map(([key, n]) => `${key} ${n}`)
    .join(', ') || 'none';

function table(s: ChaosSummary): string[] {
  const row = (label: string, cells: (string | number)[]) =>
    `    ${label.padEnd(16)}${cells.map((c) => String(c).padStart(14)).join('')}`;
  const lines = [row('', [...statuses, 'total'])];
  for (const type of types) {
    const byStatus = s.byType[type] ?? {};
    const total = Object.values(byStatus).reduce((a, b) => a + b, 0);
    lines.push(row(type, [...statuses.map((st) => byStatus[st] ?? 0), total]));
  }
  const total = Object.values(s.byStatus).reduce((a, b) => a + b, 0);
  lines.push(row('all', [...statuses.map((st) => s.byStatus[st] ?? 0), total]));
  return lines;
}

export function formatSummary(s: ChaosSummary): string {
  const { submissions: sub, sandbox, chaos, underFaults } = s;
  const o = s.options;
  const lines = [
    '',
    '=== chaos summary ===',
    `seed ${s.seed}; ${o.orders} orders, concurrency ${o.concurrency}, ${o.workers} workers (${o.builtWorkers} compiled), ${o.apis} API instance(s), time scale ${o.timeScale}, payload encryption ${o.encrypt ? 'on' : 'off'}`,
    `duration ${seconds(s.durationMs)} (chaos phase ${seconds(s.chaosPhaseMs)}, settling ${seconds(s.settleMs)})`,
    '',
    `orders submitted ${sub.orders} (${sub.orders - sub.controlOrders} during chaos, ${sub.controlOrders} control after it)`,
    `  accepted ${sub.accepted} (201: ${sub.created}, 200 because a retried attempt had started it: ${sub.accepted - sub.created}); not accepted ${sub.notAccepted}`,
    `  same body again → 200, same order: ${sub.sameBody.ok}/${sub.sameBody.sent}`,
    `  different body, same ref → 409: ${sub.conflicting.ok}/${sub.conflicting.sent}`,
    `  two identical submissions at once → one order: ${sub.concurrentPairs.ok}/${sub.concurrentPairs.sent}`,
    `  API answers retried by the client: ${counts(sub.retried)}; HTTP 500: ${sub.internalErrors}`,
    '',
    'final status by type:',
    ...table(s),
    '',
    'special numbers:',
    ...Object.entries(s.specials).map(([msisdn, t]) => `  ${msisdn} → ${t.expected}: ${t.ok}/${t.total}`),
    `control orders (after the chaos, no faults) as expected: ${s.control.asExpected}/${s.control.total}`,
    'legitimate outcomes of faults (counted, not failed):',
    `  top-ups in NEEDS_REVIEW: ${underFaults.topupsInReview}; gift cards in NEEDS_REVIEW (uncertain placement): ${underFaults.giftCardsInReview}; FAILED with nothing sent: ${underFaults.failedNothingSent}; REFUNDED by the provider for an operator down: ${underFaults.refundedOperatorDown}`,
    ...Object.entries(underFaults.reviewReasons).map(([reason, n]) => `    ${n} × ${reason}`),
    `gift cards in NEEDS_REVIEW: ${s.giftCards.inReview.total} of ${sandbox.giftCardOrders} (${percent(s.giftCards.inReview.total, sandbox.giftCardOrders)}): for a reason the provider's records could settle ${s.giftCards.inReview.recordDecidable} (${percent(s.giftCards.inReview.recordDecidable, sandbox.giftCardOrders)}), ambiguous in the records ${s.giftCards.inReview.ambiguous}, not in the list ${s.giftCards.inReview.notFound} (placed in truth ${s.giftCards.inReview.notFoundPlaced}), other ${s.giftCards.inReview.other}`,
    ...Object.entries(s.giftCards.inReview.notFoundCauses).map(
      ([cause, n]) => `    not in the list, ${n.orders} (placed ${n.placed}) × ${cause}`,
    ),
    `gift cards settled from the provider's records: ${s.giftCards.settledFromRecords}, wrongly settled (the sandbox's truth): ${s.giftCards.wronglySettled}; placed twice: ${s.giftCards.placedTwice}`,
    `orders HELD during the run: ${s.held.orders} (for the balance ${s.held.balance}, for an operator down ${s.held.operator}); most held at once on /readyz: balance ${chaos.heldSeen.balance}, operator ${chaos.heldSeen.operator}`,
    `money check: ${s.money.providerFulfilled} sends the provider fulfilled, reported FAILED or REFUNDED: ${s.money.reportedFailedOrRefunded}`,
    '',
    `provider sandbox (uniqueRefs off: every send received is committed): ${sandbox.refsSent} refs sent, ${sandbox.sendAttempts} send attempts, refs accepted twice: ${sandbox.acceptedTwice}`,
    `  gift-card placements ${sandbox.giftCardPlacements} for ${sandbox.giftCardOrders} gift-card orders (${sandbox.giftCardsFulfilled} fulfilled, ${sandbox.giftCardsInReview} in review)`,
    `Temporal: ${s.workflows} order workflows for ${sub.accepted} accepted orders`,
    '',
    `chaos: ${chaos.workersKilled} workers SIGKILLed in ${chaos.killRounds} rounds, ${chaos.workerStarts} worker starts, ${chaos.unexpectedWorkerExits} exited on their own`,
    `  Temporal restarts ${chaos.temporalRestarts} (down ${chaos.temporalDowntimeMs.map(seconds).join(', ') || '-'})`,
    `  sandbox SIGKILLed and restarted on its state file ${chaos.sandboxRestarts} (down ${chaos.sandboxDowntimeMs.map(seconds).join(', ') || '-'}); API SIGKILLed and restarted ${chaos.apiRestarts} (down ${chaos.apiDowntimeMs.map(seconds).join(', ') || '-'})`,
    `  fault phases: ${counts(chaos.faultPhases)}`,
    `  requests hit by faults: ${counts(chaos.faultsInjected)}`,
    '',
    `lost: ${s.lost}; sent twice: ${s.sentTwice}; fulfilled but reported FAILED/REFUNDED: ${s.money.reportedFailedOrRefunded}; problems: ${s.problems.length}`,
    ...s.problems.slice(0, MAX_PROBLEMS_SHOWN).map((p) => `  - ${p}`),
    ...(s.problems.length > MAX_PROBLEMS_SHOWN
      ? [`  … and ${s.problems.length - MAX_PROBLEMS_SHOWN} more`]
      : []),
    ...(s.runDir ? [`run directory (database, logs): ${s.runDir}`] : []),
    s.problems.length === 0 ? 'RESULT: PASS' : 'RESULT: FAIL',
  ];
  return lines.join('\n');
}
