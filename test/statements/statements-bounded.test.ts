/**
 * A statement's work is bounded (issue 36, finding 1), on a real Temporal dev server, a real
 * worker on the orders' task queue, the sandbox over HTTP and the intake API:
 *
 * - the attack as reported, at a small scale: one-year statements of a back office with only
 *   `orders:read` and no orders, for years long gone, each abandoned by the caller after 0.3 s —
 *   no kept day is written for them, and meanwhile another client's batch order (priority 4, the
 *   lowest of an order) reaches its final status within 1.5× of the time it took on the idle stack;
 * - a client that does not exist: 404 naming `client`, nothing written;
 * - a statement writes at most API_STATEMENT_DAYS_PER_REQUEST kept days, none for a day before the
 *   client's first order, and still answers every day's figures;
 * - the caller hanging up, or the request's deadline passing, stops the writing.
 *
 * Kept days written through this file's API are counted by their workflow IDs
 * (`statement-day:<client>:…`), whose clients exist only in this file, and by a client interceptor
 * on the API's Temporal client that sees every start.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { Problem } from '../../src/http/errors';
import { StatementService, type Statement } from '../../src/statements/statement.service';
import { apiTestConfig, testClients, testClientsFile, type TestApi } from '../helpers/api';
import { hashApiKey } from '../../src/clients/keys';
import type { ClientEntry } from '../../src/clients/model';
import { ClientRegistry, type Caller } from '../../src/clients/registry';
import { orderWorkflowId, type OrderView } from '../../contract/order';
import { STATEMENT_DAY_WORKFLOW } from '../../contract/statement';
import { mobileRequest, scaledTimings, seedListedOrder } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const DAY = 86_400_000;
/** The sandbox and the order timings at a quarter of the spec's: a normal top-up is final in about 5 s. */
const SCALE = 0.25;
/** Kept days one statement writes at most, in this file's main API. */
const CAP = 5;
/** Statements of one round of the attack: one a year, from 1981. */
const ROUND = 12;
/** How long the attacker waits for each statement before hanging up. */
const ABANDON_MS = 300;

const run = randomUUID().slice(0, 8);
const keyOf = (id: string) => `test-key-${id}`;
const clientEntry = (id: string, scopes: ClientEntry['scopes']): ClientEntry => ({
  id,
  name: `Test client ${id}`,
  scopes,
  keys: [{ id: 'k1', hash: hashApiKey(keyOf(id)) }],
});
/** Back offices of this file only: their kept days' IDs are theirs alone. */
const clients = {
  /** The attacker of the load test: only orders:read, no order ever. */
  flooder: `flood_${run}`,
  /** The attacker of the bound on one round. */
  prober: `probe_${run}`,
  /** Closed orders on a dozen days: the cap. */
  books: `books_${run}`,
  /** Closed orders on many days: a statement its caller hangs up on while it writes. */
  quitter: `quit_${run}`,
  /** The same: a statement whose deadline passes while it writes. */
  late: `late_${run}`,
} as const;
const registry = new ClientRegistry({
  ...testClientsFile,
  clients: [
    ...testClientsFile.clients,
    ...Object.values(clients).map((id) => clientEntry(id, ['orders:read'])),
  ],
});
const callerOf = (id: string): Caller => ({ ...registry.client(id)!, keyId: 'k1' });

const iso = (ms: number) => new Date(ms).toISOString();
const dateOf = (ms: number) => iso(ms).slice(0, 10);
const yearRange = (year: number) => `from=${year}-01-01T00:00:00.000Z&to=${year}-12-31T23:59:59.999Z`;

describe('statements make bounded work', { timeout: 600_000 }, () => {
  let stack: OrderStack<'main'>;
  let api: TestApi;
  /** Starts of kept days' workflows seen by the API's client, by client. */
  const summaryStarts = new Map<string, number>();
  /** Called at each start of a kept day's workflow, with its client, before it is sent; it may hold it. */
  let onSummaryStart: ((client: string) => Promise<void> | void) | undefined;
  /** Those starts not answered yet: on a loaded server one can take seconds. */
  let startsInFlight = 0;
  const probe: WorkflowClientInterceptor = {
    async startWithDetails(input, next) {
      if (input.workflowType !== STATEMENT_DAY_WORKFLOW) return next(input);
      const owner = input.options.workflowId.split(':')[1] ?? '';
      summaryStarts.set(owner, (summaryStarts.get(owner) ?? 0) + 1);
      startsInFlight++;
      try {
        await onSummaryStart?.(owner);
        return await next(input);
      } finally {
        startsInFlight--;
      }
    },
  };
  const startsOf = (client: string) => summaryStarts.get(client) ?? 0;
  /** Kept days of `client` in visibility. */
  const keptCount = async (client: string) =>
    (
      await stack.client.workflow.count(
        `WorkflowType = '${STATEMENT_DAY_WORKFLOW}' AND WorkflowId STARTS_WITH 'statement-day:${client}:'`,
      )
    ).count;
  /**
   * How many kept days of `client` were started, once none was in flight and no more started for
   * `quietMs` (the first look after `graceMs`: what a statement writes starts within a second or
   * two of the request).
   */
  const settled = async (client: string, { quietMs = 2_000, graceMs = 0 } = {}) => {
    await sleep(graceMs);
    // At most two minutes: without the bound the old code wrote for minutes.
    const deadline = Date.now() + 120_000;
    for (let before = -1; (before !== startsOf(client) || startsInFlight > 0) && Date.now() < deadline;) {
      before = startsOf(client);
      await sleep(quietMs);
    }
    return startsOf(client);
  };
  /**
   * Until the worker has run every kept day started on the orders' queue (bounded): a test after
   * one whose statements wrote many starts on an idle stack.
   */
  const drained = async () => {
    const deadline = Date.now() + 120_000;
    const query =
      `WorkflowType = '${STATEMENT_DAY_WORKFLOW}' AND ExecutionStatus = 'Running' AND ` +
      `TaskQueue = '${stack.taskQueues.main}'`;
    while ((await stack.client.workflow.count(query)).count > 0 && Date.now() < deadline) await sleep(1_000);
  };

  const seeded: { ref: string; owner: string }[] = [];
  /** One closed FULFILLED top-up of `owner` completed at noon of each day. */
  const seedDays = async (owner: string, days: readonly number[]) => {
    await Promise.all(
      days.map(async (day, i) => {
        const ref = `BOUND-${run}-${owner}-${i}`;
        const handle = await seedListedOrder(stack.client, {
          taskQueue: `statements-bounded-seeds-${run}`,
          owner,
          request: mobileRequest(ref),
          status: 'FULFILLED',
          acceptedAt: new Date(day + 11 * 3_600_000),
          completedAt: new Date(day + 12 * 3_600_000),
          figures: true,
          settlement: { debit: { amount: 490, source: 'balance_amount' } },
        });
        seeded.push({ ref, owner });
        await handle.terminate('seeded closed');
      }),
    );
    const deadline = Date.now() + 60_000;
    while (
      (await stack.client.workflow.count(`OrderClient = '${owner}' AND ExecutionStatus = 'Terminated'`))
        .count < days.length
    ) {
      assert.ok(Date.now() < deadline, `${owner}'s ${days.length} orders visible`);
      await sleep(300);
    }
  };

  before(async () => {
    stack = await startOrderStack({
      name: 'statements-bounded',
      sandbox: { timeScale: SCALE },
      workers: { main: {} },
      clientInterceptors: { workflow: [probe] },
      api: {
        clients: registry,
        config: apiTestConfig({ API_STATEMENT_DAYS_PER_REQUEST: String(CAP) }),
        timingsFor: () =>
          scaledTimings({
            firstCheckMs: 5_000 * SCALE,
            handlingCheckMs: 15_000 * SCALE,
            maxIntervalMs: 60_000 * SCALE,
            settleMs: 60_000 * SCALE,
            deadlineMs: 300_000,
            activityTimeoutMs: 30_000,
          }),
      },
    });
    api = stack.api;
  });

  after(async () => {
    onSummaryStart = undefined;
    await Promise.allSettled(
      seeded.map(({ ref, owner }) =>
        stack.client.workflow.getHandle(orderWorkflowId(ref, owner)).terminate('test done'),
      ),
    );
    await stack?.stop();
  });

  /** One statement the caller hangs up on after ABANDON_MS: its status, or `abandoned`. */
  const abandoned = async (client: string, query: string): Promise<number | 'abandoned'> => {
    try {
      const res = await fetch(`${api.url}/v1/statements?${query}`, {
        headers: { authorization: `Bearer ${keyOf(client)}` },
        signal: AbortSignal.timeout(ABANDON_MS),
      });
      await res.arrayBuffer();
      return res.status;
    } catch (err) {
      if ((err as Error).name === 'TimeoutError') return 'abandoned';
      throw err;
    }
  };
  /** One round of the attack: a statement of each year from 1981, at once, each abandoned after 0.3 s. */
  const attackRound = (client: string) =>
    Promise.all(Array.from({ length: ROUND }, (_, i) => abandoned(client, yearRange(1981 + i))));
  const tally = (outcomes: readonly (number | 'abandoned')[]) => {
    const counts: Record<string, number> = {};
    for (const outcome of outcomes) counts[outcome] = (counts[outcome] ?? 0) + 1;
    return counts;
  };

  /**
   * A batch of `n` mobile top-ups of acme (batch items: priority 4, behind everything else an
   * order does): seconds from the first try to submit it to the slowest one's final status. A
   * submission answered 503 (Temporal overwhelmed) is tried again, the time counted.
   */
  const batchFinal = async (label: string, n: number, timeoutMs: number): Promise<number> => {
    const refs = Array.from({ length: n }, (_, i) => `BOUND-${run}-${label}-${i}`);
    const submitted = Date.now();
    const deadline = submitted + timeoutMs;
    const late = (what: string) =>
      `acme's batch: ${what} ${Math.round((Date.now() - submitted) / 1_000)} s after it was first sent`;
    for (;;) {
      const res = await api.request<{ results: { status: number }[] }>('POST', '/v1/orders/batch', {
        body: { orders: refs.map((ref) => mobileRequest(ref)) },
        apiKey: testClients.acme.key,
      });
      if (res.status === 200 && res.body.results.every((r) => r.status === 201 || r.status === 200)) break;
      assert.ok(res.status === 200 || res.status === 503, res.text);
      assert.ok(Date.now() < deadline, late(`not accepted (${res.status} ${res.text.slice(0, 200)})`));
      await sleep(500);
    }
    let slowest = 0;
    for (const ref of refs) {
      for (;;) {
        const view = await api.request<OrderView>('GET', `/v1/orders/${ref}`, {
          apiKey: testClients.acme.key,
        });
        assert.ok(view.status === 200 || view.status === 503, view.text);
        if (view.status === 200 && view.body.completedAt) {
          assert.equal(view.body.status, 'FULFILLED');
          slowest = Math.max(slowest, Date.parse(view.body.completedAt) - submitted);
          break;
        }
        assert.ok(Date.now() < deadline, late(`${ref} not final (${view.body.status ?? view.status})`));
        await sleep(200);
      }
    }
    return slowest / 1_000;
  };

  it('one round of the attack as reported (one-year statements of 1981–1992 by a back office with only orders:read and no orders, each abandoned after 0.3 s): no kept day written', async () => {
    try {
      const outcomes = await attackRound(clients.prober);
      const written = await settled(clients.prober, { graceMs: 5_000 });
      const visible = await keptCount(clients.prober);
      console.log(
        `one round: ${JSON.stringify(tally(outcomes))}; kept days started ${written}, in visibility ${visible}`,
      );
      assert.equal(
        written,
        0,
        `${written} kept days written for ${ROUND} statements of a client without orders`,
      );
      assert.equal(visible, 0);
    } finally {
      await drained();
    }
  });

  it('under the attack, another client’s batch order reaches its final status within 1.5× its time on the idle stack; no kept day is written for the attacker', async () => {
    const idle = await batchFinal('idle', 2, 60_000);
    const allowed = 1.5 * idle;
    // A round every second while acme's orders are open, and no longer than a little past the bound.
    const attackUntil = Date.now() + (allowed + 5) * 1_000;
    let attacking = true;
    const outcomes: (number | 'abandoned')[] = [];
    const attack = (async () => {
      while (attacking && Date.now() < attackUntil) {
        const [round] = await Promise.all([attackRound(clients.flooder), sleep(1_000)]);
        outcomes.push(...round);
      }
    })();
    let loaded: number;
    try {
      // The first round is under way before the orders are sent.
      await sleep(ABANDON_MS);
      loaded = await batchFinal('attacked', 2, 180_000);
    } catch (err) {
      throw new Error(
        `${(err as Error).message}; idle ${idle.toFixed(2)} s, ${outcomes.length} attack statements ` +
          `${JSON.stringify(tally(outcomes))}, kept days started for the attacker ${startsOf(clients.flooder)}`,
        { cause: err },
      );
    } finally {
      attacking = false;
      await attack;
    }
    try {
      const written = await settled(clients.flooder);
      const figures =
        `idle ${idle.toFixed(2)} s; under the attack ${loaded.toFixed(2)} s (${(loaded / idle).toFixed(2)}× idle); ` +
        `${outcomes.length} attack statements ${JSON.stringify(tally(outcomes))}; ` +
        `kept days written for the attacker: ${written}`;
      console.log(figures);
      assert.ok(loaded <= allowed, `more than 1.5× idle: ${figures}`);
      assert.equal(written, 0, `no kept day for a client without orders: ${figures}`);
    } finally {
      await drained();
    }
  });

  it('a client that does not exist: 404 naming `client` for an auditor, as for a back office naming it; nothing written for it', async () => {
    const nobody = `nobody_${run}`;
    const auditor = await api.request<Problem>('GET', `/v1/statements?${yearRange(1990)}&client=${nobody}`, {
      apiKey: testClients.auditor.key,
    });
    assert.equal(auditor.status, 404, auditor.text);
    assert.equal(auditor.body.type, '/problems/client-not-found');
    assert.deepEqual(
      auditor.body.errors?.map((e) => e.field),
      ['client'],
    );
    // A back office without audit:read naming any other client gets the same answer.
    const owner = await api.request<Problem>('GET', `/v1/statements?${yearRange(1990)}&client=${nobody}`, {
      apiKey: testClients.shop.key,
    });
    assert.equal(owner.status, 404, owner.text);
    assert.equal(owner.body.type, '/problems/client-not-found');
    assert.equal(await settled(nobody, { quietMs: 1_000 }), 0);
    assert.equal(await keptCount(nobody), 0);
  });

  it(`a statement writes at most ${CAP} kept days, none before the client's first order, and answers every day; the next ones write the rest`, async () => {
    // A dozen days with one order each, the first on the range's 20th day, every third day after.
    const start = Date.UTC(1995, 0, 1) + Math.floor(Math.random() * 200) * DAY;
    const orderDays = Array.from({ length: 12 }, (_, i) => start + (19 + 3 * i) * DAY);
    await seedDays(clients.books, orderDays);
    const range = `from=${iso(start)}&to=${iso(start + 60 * DAY - 1)}`;

    const first = await api.request<Statement>('GET', `/v1/statements?${range}`, {
      apiKey: keyOf(clients.books),
    });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(
      first.body.days.map((d) => [d.date, d.orders, d.debited]),
      orderDays.map((d) => [dateOf(d), 1, 490]),
      'every day of the range, kept or not',
    );
    const written = await settled(clients.books, { quietMs: 1_000 });
    assert.equal(written, CAP, `kept days written by one statement: ${written}`);

    // The next statements, on a service that trusts what was just written (no later-runs margin:
    // the orders were seeded seconds ago), write the days after it, still none before the first order.
    const service = new StatementService(stack.client, registry, {
      taskQueue: stack.taskQueues.main,
      laterRunsMarginMs: 0,
      maxStoredDays: CAP,
    });
    const query = { from: new Date(start), to: new Date(start + 60 * DAY - 1) };
    let statement: Statement | undefined;
    for (let round = 0; round < 9; round++) {
      // Visibility shows the days just written a moment later; until then they count as missing.
      const deadline = Date.now() + 20_000;
      while ((await keptCount(clients.books)) < startsOf(clients.books)) {
        assert.ok(Date.now() < deadline, 'the kept days visible');
        await sleep(200);
      }
      statement = await service.statement(callerOf(clients.books), query);
      await settled(clients.books, { quietMs: 500 });
    }
    assert.deepEqual(statement!.days, first.body.days, 'the same figures, kept or listed');
    // The days from the first order to the range's last: 60 − 19.
    const kept = await keptCount(clients.books);
    assert.equal(kept, 60 - 19, 'every day from the first order on is kept, none before');
    assert.equal(startsOf(clients.books), kept, 'each day written once');
  });

  describe('the caller gone, the work stops', () => {
    /** One order a day for DAYS days from `start`, for each of the two clients. */
    const DAYS = 150;
    const start = Date.UTC(1996, 0, 1) + Math.floor(Math.random() * 200) * DAY;
    const range = `from=${iso(start)}&to=${iso(start + DAYS * DAY - 1)}`;
    let wide: TestApi;
    let short: TestApi;

    before(async () => {
      const days = Array.from({ length: DAYS }, (_, i) => start + i * DAY);
      await Promise.all([seedDays(clients.quitter, days), seedDays(clients.late, days)]);
      // No cap to speak of, so only the caller's leaving can stop the writing.
      wide = await stack.startApi({
        clients: registry,
        config: apiTestConfig({ API_STATEMENT_DAYS_PER_REQUEST: '366' }),
      });
      short = await stack.startApi({
        clients: registry,
        config: apiTestConfig({ API_STATEMENT_DAYS_PER_REQUEST: '366', API_REQUEST_TIMEOUT_MS: '2000' }),
      });
    });
    after(() => {
      onSummaryStart = undefined;
    });

    it(`the caller hangs up as the first kept day is written: the rest of the ${DAYS} are not`, async () => {
      const hangUp = new AbortController();
      onSummaryStart = (client) => {
        if (client === clients.quitter) hangUp.abort();
      };
      const res = fetch(`${wide.url}/v1/statements?${range}`, {
        headers: { authorization: `Bearer ${keyOf(clients.quitter)}` },
        signal: hangUp.signal,
      });
      await assert.rejects(res, { name: 'AbortError' });
      onSummaryStart = undefined;
      const written = await settled(clients.quitter);
      console.log(`hung up: ${written} of ${DAYS} kept days written`);
      assert.ok(written < DAYS / 2, `${written} of ${DAYS} kept days written after the caller left`);
    });

    it(`the request’s deadline passes (503) as the first kept day is written: the rest of the ${DAYS} are not`, async () => {
      // Each start waits until the API has answered 503, as a slow Temporal would make it.
      let answered!: () => void;
      const answer = new Promise<void>((resolve) => (answered = resolve));
      let held = 0;
      onSummaryStart = async (client) => {
        if (client !== clients.late) return;
        held++;
        await answer;
      };
      const res = await short.request<Problem>('GET', `/v1/statements?${range}`, {
        apiKey: keyOf(clients.late),
      });
      answered();
      onSummaryStart = undefined;
      assert.equal(res.status, 503, res.text);
      const written = await settled(clients.late, { graceMs: 3_000 });
      console.log(`deadline: ${written} of ${DAYS} kept days written (${held} held at the deadline)`);
      assert.ok(written < DAYS / 2, `${written} of ${DAYS} kept days written after the deadline`);
    });
  });
});
