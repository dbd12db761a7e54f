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
import { Client, Connection } from '@temporalio/client';
import pLimit from 'p-limit';
import { ClientRegistry } from '../src/clients/registry';
import { StatementService } from '../src/api/statements';
import { startDevServer } from '../src/temporal/dev-server';
import { testClientsFile } from '../src/api/testing';
import { OrderClientAttribute, type OrderRequest } from '../contract/order';

const ORDERS = Number(process.argv[2] ?? 20_000);
const DAY = 86_400_000;

async function main(): Promise<void> {
  const server = await startDevServer({ uiPort: false });
  const connection = await Connection.connect({ address: server.address });
  try {
    // The dev server registers the search attributes itself (dev-server.ts).
    const client = new Client({ connection, namespace: server.namespace });
    const start = Date.UTC(2026, 9, 1);
    const statuses = ['FULFILLED', 'FULFILLED', 'FULFILLED', 'REFUNDED', 'FAILED', 'NEEDS_REVIEW'] as const;
    const limit = pLimit(32);
    const seeded = Date.now();
    await Promise.all(
      Array.from({ length: ORDERS }, (_, i) =>
        limit(async () => {
          const ref = `BENCH-${i}-${randomUUID().slice(0, 6)}`;
          const request: OrderRequest =
            i % 3 === 0
              ? {
                  type: 'mobile_topup',
                  ref,
                  planCode: 'PREPAID_DJEZZY',
                  msisdn: '0551234567',
                  amount: 100 + (i % 50),
                }
              : i % 3 === 1
                ? { type: 'internet_topup', ref, lineType: 'ADSL', number: '021123456', value: 1000 }
                : {
                    type: 'gift_card',
                    ref,
                    productId: 'GOOGLE_PLAY',
                    typeId: 'GOOGLE_PLAY_1000',
                    quantity: 1 + (i % 3),
                  };
          const status = statuses[i % statuses.length]!;
          const acceptedAt = start + Math.floor((i / ORDERS) * 30 * DAY);
          await seedListedOrder(client, {
            taskQueue: 'bench-statement-no-worker',
            owner: 'acme',
            request,
            status,
            acceptedAt: new Date(acceptedAt),
            ...(status === 'NEEDS_REVIEW' ? {} : { completedAt: new Date(acceptedAt + 60_000) }),
            figures: true,
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

    const statements = new StatementService(client, new ClientRegistry(testClientsFile));
    const caller = { id: 'acme', name: 'acme', scopes: new Set(['orders:read']), keyId: 'k1' } as never;
    for (let round = 1; round <= 3; round++) {
      const t0 = performance.now();
      const statement = await statements.statement(caller, {
        from: new Date(start),
        to: new Date(start + 31 * DAY),
      });
      const ms = performance.now() - t0;
      const orders =
        statement.days.reduce((sum, line) => sum + line.orders, 0) +
        statement.open.reduce((sum, line) => sum + line.orders, 0);
      console.log(
        `statement round ${round}: ${orders} orders, ${statement.days.length} lines, ${ms.toFixed(0)} ms`,
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

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
