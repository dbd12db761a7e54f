/**
 * How long a statement takes over N orders (default 20,000): a fresh dev server (SQLite
 * visibility), N order workflows started as the intake API starts them (search attributes and the
 * memo's figures; no worker, so nothing else loads the server) and completed over 30 days, then
 * GET /v1/statements over the whole range, timed three times. Also how long reading each order's
 * figures would take the other way (a history read per order), on a sample, for the comparison.
 *
 *   npx tsx scripts/bench-statement.ts [orders=20000]
 */
import { seedListedOrder } from '../test/helpers/orders';
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { Client, Connection } from '@temporalio/client';
import pLimit from 'p-limit';
import { ClientRegistry } from '../src/clients/registry';
import { StatementService } from '../src/api/statements';
import { startDevServer } from '../src/temporal/dev-server';
import { testClientsFile } from '../src/api/testing';
import {
  OrderClientAttribute,
  type OrderRequest,
  type OrderSettlement,
  type OrderStatus,
} from '../contract/order';
import { benchOrderRequest } from './bench/order-mix';

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
            await seedListedOrder(client, {
              taskQueue: 'bench-statement-no-worker',
              owner: 'acme',
              request,
              status,
              acceptedAt: new Date(acceptedAt),
              ...(status === 'NEEDS_REVIEW' ? {} : { completedAt: new Date(acceptedAt + 60_000) }),
              figures: true,
              ...settlementOf(request, status),
            });
          }),
        ),
      );
    console.log(`seeded ${ORDERS} orders in ${((Date.now() - seeded) / 1000).toFixed(1)} s`);
    const visible = Date.now() + 120_000;
    while ((await client.workflow.count(`${OrderClientAttribute.name} = 'acme'`)).count < ORDERS) {
      if (Date.now() > visible) throw new Error('orders not visible');
      await new Promise((r) => setTimeout(r, 500));
    }

    await whereTheTimeGoes(connection, client, server.namespace);

    const clients = new ClientRegistry(testClientsFile);
    const caller = { id: 'acme', name: 'acme', scopes: new Set(['orders:read']), keyId: 'k1' } as never;
    const range = { from: new Date(start), to: new Date(start + 31 * DAY) };
    const baseline = await new StatementService(client, clients, { slices: 1 }).statement(caller, range);
    // Interleaved, so each variant meets the same load: the ratio is to the one listing of the same round.
    const variants = [1, 2, 4, 8];
    const times = new Map<number, number[]>(variants.map((k) => [k, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const slices of variants) {
        const t0 = performance.now();
        const statement = await new StatementService(client, clients, { slices }).statement(caller, range);
        const ms = performance.now() - t0;
        times.get(slices)!.push(ms);
        const same = JSON.stringify(statement) === JSON.stringify(baseline);
        const orders =
          statement.days.reduce((sum, line) => sum + line.orders, 0) +
          statement.open.reduce((sum, line) => sum + line.orders, 0);
        console.log(
          `round ${round}, ${slices} slice(s) at once: ${orders} orders, ${statement.days.length} lines, ` +
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
  } finally {
    await connection.close();
    await server.stop();
  }
}

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

/** What the order would have recorded as it settled (workflows/order/debit.ts), by a price of 1,000 DZD per card. */
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
