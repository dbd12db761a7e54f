/**
 * How long a statement takes over N orders (default 20,000): a fresh dev server (SQLite
 * visibility), N order workflows started as the intake API starts them (search attributes and the
 * memo's figures and settlement; no worker, so nothing else loads the server), completed over 30
 * days and closed (terminated once seeded, as most orders end: only those in review stay open).
 *
 * Then GET /v1/statements over the whole range: listing every order (the old path, `stored:
 * false`), and with kept days — cold (no day kept yet: every day summed and kept), warm, and warm
 * while another caller floods visibility with whole-range listings — each checked to give the
 * same statement as listing every order; and the nightly precompute of three days, with nothing
 * to write and with every day to write.
 *
 *   npx tsx test/tools/bench-statement.ts [orders=20000] [--db=FILE] [--rounds=3] [--slices] [--backfill]
 *
 * `--db=FILE` keeps the seeded server file for the next run; `--slices` also times 2, 4 and 8
 * time slices of the old path, and a describe per order, as measured before days were kept;
 * `--backfill` makes the kept days out of date again, runs what a fresh deployment's backfill of
 * the `statement-days` Schedule runs (each night of the range, one after another) and times the
 * first statement after it.
 */
import { seedListedOrder } from '../helpers/orders';
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import pLimit from 'p-limit';
import { ClientRegistry } from '../../src/clients/registry';
import { StatementService, type Statement } from '../../src/statements/statement.service';
import { StatementDays } from '../../src/statements/statement-days';
import { startDevServer } from '../../src/temporal/dev-server';
import { testClientsFile } from '../helpers/api';
import {
  OrderClientAttribute,
  type OrderRequest,
  type OrderSettlement,
  type OrderStatus,
} from '../../contract/order';
import { benchOrderRequest } from '../../scripts/bench/order-mix';

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const ORDERS = Number(positional[0] ?? 20_000);
/** `--db=FILE`: the dev server's SQLite file, seeded on the first run and reused by the next. */
const dbFile = process.argv.find((a) => a.startsWith('--db='))?.slice('--db='.length);
const DAY = 86_400_000;
const ROUNDS = Number(process.argv.find((a) => a.startsWith('--rounds='))?.slice('--rounds='.length) ?? 3);

async function main(): Promise<void> {
  const server = await startDevServer({ uiPort: false, ...(dbFile && { dbFile }) });
  const connection = await Connection.connect({ address: server.address });
  try {
    // The dev server registers the search attributes itself (dev-server.ts).
    const client = new Client({ connection, namespace: server.namespace });
    const start = Date.UTC(2026, 9, 1);
    const statuses = [
      'FULFILLED',
      'FULFILLED',
      'FULFILLED',
      'REFUNDED',
      'FAILED',
      'NEEDS_REVIEW',
      'PARTIALLY_FULFILLED',
    ] as const;
    const limit = pLimit(32);
    const seeded = Date.now();
    const already = (await client.workflow.count(`${OrderClientAttribute.name} = 'acme'`)).count;
    const open = Math.ceil(ORDERS / statuses.length);
    if (already >= ORDERS) console.log(`reusing ${already} orders seeded in ${dbFile}`);
    else
      await Promise.all(
        Array.from({ length: ORDERS }, (_, i) =>
          limit(async () => {
            const ref = `BENCH-${i}-${randomUUID().slice(0, 6)}`;
            const request = benchOrderRequest(i, ref);
            const drawn = statuses[i % statuses.length]!;
            const status =
              drawn === 'PARTIALLY_FULFILLED' && request.type !== 'gift_card' ? 'FULFILLED' : drawn;
            const acceptedAt = start + Math.floor((i / ORDERS) * 30 * DAY);
            const handle = await seedListedOrder(client, {
              taskQueue: 'bench-statement-no-worker',
              owner: 'acme',
              request,
              status,
              acceptedAt: new Date(acceptedAt),
              ...(status === 'NEEDS_REVIEW' ? {} : { completedAt: new Date(acceptedAt + 60_000) }),
              figures: true,
              ...settlementOf(request, status),
            });
            if (status !== 'NEEDS_REVIEW') await handle.terminate('seeded closed');
          }),
        ),
      );
    console.log(`seeded ${ORDERS} orders in ${((Date.now() - seeded) / 1000).toFixed(1)} s`);
    const visible = Date.now() + 120_000;
    const running = `${OrderClientAttribute.name} = 'acme' AND ExecutionStatus = 'Running'`;
    while (
      (await client.workflow.count(`${OrderClientAttribute.name} = 'acme'`)).count < ORDERS ||
      (await client.workflow.count(running)).count > open
    ) {
      if (Date.now() > visible) throw new Error('orders not visible');
      await new Promise((r) => setTimeout(r, 500));
    }

    await whereTheTimeGoes(connection, client, server.namespace);

    const clients = new ClientRegistry(testClientsFile);
    const caller = { id: 'acme', name: 'acme', scopes: new Set(['orders:read']), keyId: 'k1' } as never;
    const range = { from: new Date(start), to: new Date(start + 31 * DAY - 1) };
    const listingAll = new StatementService(client, clients);
    const kept = new StatementService(client, clients, { taskQueue: 'bench-statement-days' });
    const timed = async (label: string, service: StatementService, baseline?: Statement) => {
      const t0 = performance.now();
      const statement = await service.statement(caller, range);
      const ms = performance.now() - t0;
      const same = baseline === undefined || isDeepStrictEqual(statement, baseline);
      console.log(
        `${label}: ${ordersIn(statement)} orders, ${statement.days.length} lines, ${(ms / 1000).toFixed(2)} s` +
          `${same ? '' : ' — FIGURES DIFFER from listing every order'}; load ${loadavg()
            .map((l) => l.toFixed(1))
            .join(' ')}`,
      );
      if (!same) process.exitCode = 1;
      return { statement, ms };
    };

    const days = new StatementDays(client, 'bench-statement-days');
    const dates = Array.from({ length: 31 }, (_, d) => new Date(start + d * DAY).toISOString().slice(0, 10));
    const keptBefore = (await days.stored(['acme'], dates)).size;
    if (keptBefore > 0) {
      // Kept by an earlier run on the same file: made out of date, so the cold statement sums every day again.
      console.log(`${keptBefore} days kept by an earlier run on ${dbFile}: made out of date first`);
      const kept = await days.stored(['acme'], dates);
      const stale = [...kept.values()].map((summary) => ({
        ...summary,
        orders: -1,
        computedAt: new Date().toISOString(),
      }));
      await days.store(stale);
      await new Promise((r) => setTimeout(r, 2_000));
    }
    const { statement: baseline } = await timed('listing every order (old path)', listingAll);
    await timed('kept days, cold (every day summed and kept)', kept, baseline);
    for (let round = 1; round <= ROUNDS; round++)
      await timed(`kept days, warm, round ${round}`, kept, baseline);

    if (process.argv.includes('--backfill')) {
      // A fresh deployment: setup backfills the `statement-days` Schedule, one run per night, one
      // after another; each run's activity is this call (the nights of the range, three days each).
      const summaries = await days.stored(['acme'], dates);
      const stale = [...summaries.values()].map((s) => ({
        ...s,
        orders: -1,
        computedAt: new Date().toISOString(),
      }));
      await days.store(stale);
      await new Promise((r) => setTimeout(r, 2_000));
      const t0 = performance.now();
      let written = 0;
      for (let night = start + DAY + 30 * 60_000; night <= start + 31 * DAY + 30 * 60_000; night += DAY)
        written += (await days.summarizeRecentDays(night, 3)).written;
      console.log(
        `backfill, 31 nights of three days one after another: ${written} written, ` +
          `${((performance.now() - t0) / 1000).toFixed(2)} s; load ${loadavg()[0]!.toFixed(1)}`,
      );
      await new Promise((r) => setTimeout(r, 2_000));
      await timed('kept days, first statement after the backfill', kept, baseline);
    }

    // Another caller lists the whole range over and over meanwhile: visibility is busy.
    let flooding = true;
    let floods = 0;
    const flood = (async () => {
      while (flooding) {
        await listingAll.statement(caller, range);
        floods++;
      }
    })();
    for (let round = 1; round <= ROUNDS; round++)
      await timed(`kept days, warm, flooded, round ${round}`, kept, baseline);
    flooding = false;
    await flood;
    console.log(`(${floods} whole-range listings by the flood meanwhile)`);

    // The nightly precompute, as the night after the range's 10th day: three days, one listing each.
    const night = start + 10 * DAY + 30 * 60_000;
    const nightly = async (label: string) => {
      const t0 = performance.now();
      const report = await days.summarizeRecentDays(night, 3);
      console.log(
        `nightly precompute, ${label}: ${report.dates.length} days, ${report.orders} orders, ` +
          `${report.written} written, ${report.unchanged} unchanged, ${((performance.now() - t0) / 1000).toFixed(2)} s; ` +
          `load ${loadavg()[0]!.toFixed(1)}`,
      );
    };
    await nightly('nothing changed');
    // Out of date on purpose (a count that no longer matches): every day is written again.
    const stale = await days.sum(night - 3 * DAY - 30 * 60_000, night - 30 * 60_000, 'acme');
    await days.store(
      stale.map((summary) => ({ ...summary, orders: -1, computedAt: new Date().toISOString() })),
    );
    await new Promise((r) => setTimeout(r, 2_000));
    await nightly('every day to write');

    if (process.argv.includes('--slices')) await slices(client, clients, caller, range, limit);
  } finally {
    await connection.close();
    await server.stop();
  }
}

/** The old path cut into time slices read at once, and a describe per order (as measured before days were kept). */
async function slices(
  client: Client,
  clients: ClientRegistry,
  caller: never,
  range: { from: Date; to: Date },
  limit: ReturnType<typeof pLimit>,
): Promise<void> {
  const baseline = await new StatementService(client, clients, { slices: 1 }).statement(caller, range);
  const variants = [1, 2, 4, 8];
  const times = new Map<number, number[]>(variants.map((k) => [k, []]));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const slices of variants) {
      const t0 = performance.now();
      const statement = await new StatementService(client, clients, { slices }).statement(caller, range);
      const ms = performance.now() - t0;
      times.get(slices)!.push(ms);
      const same = isDeepStrictEqual(statement, baseline);
      console.log(
        `round ${round}, ${slices} slice(s) at once: ${ordersIn(statement)} orders, ${statement.days.length} lines, ` +
          `${ms.toFixed(0)} ms (${(ms / times.get(1)![round - 1]!).toFixed(2)} × one listing)` +
          `${same ? '' : ' — FIGURES DIFFER from one listing'}; load ${loadavg()[0]!.toFixed(1)}`,
      );
    }
  }
  for (const slices of variants) {
    const sorted = [...times.get(slices)!].sort((a, b) => a - b);
    console.log(
      `${slices} slice(s): median ${(sorted[Math.floor(sorted.length / 2)]! / 1000).toFixed(1)} s, ` +
        `range ${(sorted[0]! / 1000).toFixed(1)}–${(sorted.at(-1)! / 1000).toFixed(1)} s`,
    );
  }
  // The other source: one history read per order (what an export-scan statement would add per order).
  const sample: string[] = [];
  for await (const execution of client.workflow.list({ query: `${OrderClientAttribute.name} = 'acme'` })) {
    sample.push(execution.workflowId);
    if (sample.length >= 500) break;
  }
  const t1 = performance.now();
  await Promise.all(sample.map((id) => limit(() => client.workflow.getHandle(id).describe())));
  const perOrder = (performance.now() - t1) / sample.length;
  console.log(
    `one describe per order (8-32 at once): ${perOrder.toFixed(2)} ms per order, ` +
      `${((perOrder * ORDERS) / 1000).toFixed(1)} s for ${ORDERS} orders`,
  );
}

const ordersIn = (statement: Statement) =>
  statement.days.reduce((sum, line) => sum + line.orders, 0) +
  statement.open.reduce((sum, line) => sum + line.orders, 0);

/**
 * One visibility listing of the orders taken apart: the server's pages alone (no decoding), the
 * same listing through the SDK (memo and search attributes decoded), and a count.
 */
async function whereTheTimeGoes(connection: Connection, client: Client, namespace: string): Promise<void> {
  const query = `${OrderClientAttribute.name} = 'acme'`;
  const pages: number[] = [];
  let nextPageToken: Uint8Array | undefined;
  let rows = 0;
  const t0 = performance.now();
  do {
    const t = performance.now();
    const page = await connection.workflowService.listWorkflowExecutions({
      namespace,
      query,
      pageSize: 1_000,
      ...(nextPageToken && { nextPageToken }),
    });
    pages.push(performance.now() - t);
    rows += page.executions?.length ?? 0;
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  const raw = performance.now() - t0;
  console.log(
    `raw listing: ${rows} rows in ${pages.length} pages, ${(raw / 1000).toFixed(1)} s; page ms ` +
      `first ${pages[0]!.toFixed(0)}, median ${[...pages].sort((a, b) => a - b)[Math.floor(pages.length / 2)]!.toFixed(0)}, ` +
      `last ${pages.at(-1)!.toFixed(0)}; load ${loadavg()[0]!.toFixed(1)}`,
  );
  const t1 = performance.now();
  let decoded = 0;
  for await (const execution of client.workflow.list({ query, pageSize: 1_000 })) {
    if (execution.memo) decoded++;
  }
  console.log(
    `SDK listing (memo decoded): ${decoded} rows, ${((performance.now() - t1) / 1000).toFixed(1)} s`,
  );
  const t2 = performance.now();
  const { count } = await client.workflow.count(query);
  console.log(`count: ${count} in ${(performance.now() - t2).toFixed(0)} ms`);
}

/** What the order would have recorded as it settled (src/orders/lifecycle/debit.workflow.ts), by a price of 1,000 DZD per card. */
function settlementOf(request: OrderRequest, status: OrderStatus): { settlement?: OrderSettlement } {
  if (!['FULFILLED', 'PARTIALLY_FULFILLED', 'REFUNDED'].includes(status)) return {};
  const refunded = status === 'REFUNDED';
  if (request.type === 'mobile_topup')
    return { settlement: { debit: { amount: refunded ? 0 : request.amount!, source: 'balance_amount' } } };
  if (request.type === 'internet_topup') return { settlement: {} };
  const delivered = refunded ? 0 : status === 'PARTIALLY_FULFILLED' ? 1 : request.quantity;
  const debit = { amount: 1000 * delivered, source: 'fulfilled_amount', pricePerCard: 1000 } as const;
  if (status !== 'PARTIALLY_FULFILLED') return { settlement: { debit } };
  const partial = {
    quantity: request.quantity,
    fulfilledQuantity: delivered,
    refundedQuantity: request.quantity - delivered,
    fulfilledAmount: 1000 * delivered,
    refundedAmount: 1000 * (request.quantity - delivered),
  };
  return { settlement: { debit, partial } };
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
