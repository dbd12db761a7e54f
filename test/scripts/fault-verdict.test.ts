/**
 * The cluster tier's fault-run verdict on made-up orders (the run itself needs the tier's
 * PostgreSQL cluster: `npm run test:cluster -- --faults-only`): each order counts for the fault it
 * was in flight for, latency is split at the fault's end, and each broken promise — an order lost,
 * sent twice, wrongly failed, a 500, a 503 without Retry-After — fails the run.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  countAnswer,
  emptyAnswers,
  faultFigures,
  faultProblems,
  formatFaultTable,
  LEAD_MS,
  percentile,
  windowOf,
  type FaultWindow,
  type OrderFacts,
} from '../../scripts/cluster/fault-verdict';

const windows: FaultWindow[] = [
  { name: 'frontend', what: 'kill', startedAt: 100_000, endedAt: 110_000, nextAt: 130_000, notes: [] },
  { name: 'postgres-stop', what: 'stop', startedAt: 130_000, endedAt: 190_000, nextAt: 230_000, notes: [] },
];

const order = (submittedAt: number, took: number, extra: Partial<OrderFacts> = {}): OrderFacts => ({
  ref: `o-${submittedAt}`,
  submittedAt,
  settledAt: submittedAt + took,
  lost: false,
  sentTwice: false,
  wronglyFailed: false,
  inReviewByFault: false,
  ...extra,
});

describe('fault verdict', () => {
  it('counts an order for the fault it was in flight for', () => {
    assert.equal(windowOf(windows, 50_000), undefined, 'baseline');
    assert.equal(windowOf(windows, 100_000 - LEAD_MS + 1)?.name, 'frontend', 'in flight when it began');
    assert.equal(windowOf(windows, 125_000)?.name, 'postgres-stop', 'in flight when the next began');
    assert.equal(windowOf(windows, 229_000), undefined, 'after the last window');
  });

  it('splits latency at the end of the outage, and says when the caught orders settled', () => {
    const orders = [
      order(95_000, 20_000), // caught (in flight), settles at 115 000
      order(105_000, 30_000, { inReviewByFault: true }), // during, settles at 135 000
      order(115_000, 4_000), // after
      order(140_000, 55_000), // during postgres-stop
      order(200_000, 5_000, { lost: true, settledAt: undefined }),
    ];
    const [frontend, stop] = faultFigures(windows, orders, new Map());
    assert.equal(frontend!.orders, 3);
    assert.equal(frontend!.inReview, 1);
    assert.equal(frontend!.p99DuringMs, 30_000);
    assert.equal(frontend!.p99AfterMs, 4_000);
    assert.equal(frontend!.recoveredAfterMs, 25_000);
    assert.equal(stop!.orders, 2);
    assert.equal(stop!.lost, 1);
    assert.equal(stop!.outageMs, 60_000);
    assert.equal(stop!.recoveredAfterMs, 5_000);
    assert.deepEqual(faultProblems([frontend!]), []);
    assert.deepEqual(faultProblems([stop!]), ['postgres-stop: 1 orders lost']);
    assert.match(formatFaultTable([frontend!, stop!], 3_000), /postgres-stop +60\.0 s +2 +1/);
  });

  it('fails on a 500, and on a 503 without Retry-After, but not on a 503 with one', () => {
    const during = emptyAnswers();
    countAnswer(during, { status: 503, retryAfter: '5' });
    countAnswer(during, { status: 201, retryAfter: null });
    countAnswer(during, new Error('ECONNREFUSED'));
    const [clean] = faultFigures(windows, [], new Map([['frontend', { during, after: emptyAnswers() }]]));
    assert.deepEqual(faultProblems([clean!]), []);
    assert.equal(during.unanswered, 1);
    countAnswer(during, { status: 503, retryAfter: null });
    countAnswer(during, { status: 500, retryAfter: null });
    assert.deepEqual(faultProblems([clean!]), [
      'frontend: the API answered 500 1 times during it',
      'frontend: 1 503/429 answers without Retry-After during it',
    ]);
  });

  it('fails on an order sent twice or wrongly failed', () => {
    const figures = faultFigures(
      windows,
      [order(101_000, 1_000, { sentTwice: true }), order(102_000, 1_000, { wronglyFailed: true })],
      new Map(),
    );
    assert.deepEqual(faultProblems(figures), [
      'frontend: 1 orders sent twice',
      'frontend: 1 orders the provider fulfilled reported FAILED/REFUNDED',
    ]);
  });

  it('p99 of a few values is the largest', () => {
    assert.equal(percentile([1, 2, 3], 99), 3);
    assert.equal(percentile([], 99), undefined);
  });
});
