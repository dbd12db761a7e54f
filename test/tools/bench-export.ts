/**
 * How long GET /v1/orders/export takes over N orders (default 20,000), and how much memory the
 * API holds while it streams: a fresh dev server, N completed orders (stand-in workflows that end
 * at once with a FULFILLED view: scripts/bench/export-workflows.ts) accepted over 30 days, the real
 * API in this process, the export read as NDJSON over HTTP. Memory (RSS and heap) is sampled every
 * 50 ms during an export of the first tenth of the range and of the whole range: constant memory
 * means the two peaks match, whatever the range.
 *
 *   node --expose-gc --import tsx test/tools/bench-export.ts [orders=20000]   (GC between exports)
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import pLimit from 'p-limit';
import { startDevServer } from '../../src/temporal/dev-server';
import { startTestApi, testClients } from '../helpers/api';
import { idleProvider } from '../helpers/stack';
import { seedListedOrder } from '../helpers/orders';
import { OrderClientAttribute } from '../../contract/order';
import { benchOrderRequest } from '../../scripts/bench/order-mix';

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const ORDERS = Number(positional[0] ?? 20_000);
/**
 * `--address=HOST:PORT`: export what another run of this bench seeded on its server (still
 * seeding, or kept), without seeding; `--days=N`: the whole range's length (default 30).
 */
const address = process.argv.find((a) => a.startsWith('--address='))?.slice('--address='.length);
const DAYS = Number(process.argv.find((a) => a.startsWith('--days='))?.slice('--days='.length) ?? 30);
const DAY = 86_400_000;
const TASK_QUEUE = 'bench-export';

async function main(): Promise<void> {
  const server = address
    ? { address, namespace: 'default', stop: async () => {} }
    : await startDevServer({ uiPort: false });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace });
  const native = await NativeConnection.connect({ address: server.address });
  const worker = address
    ? undefined
    : await Worker.create({
        connection: native,
        namespace: server.namespace,
        taskQueue: TASK_QUEUE,
        workflowsPath: resolve(__dirname, 'bench', 'export-workflows.ts'),
      });
  const running = worker?.run();
  const api = await startTestApi({ client, taskQueue: TASK_QUEUE, provider: idleProvider });
  try {
    const start = Date.UTC(2026, 9, 1);
    const limit = pLimit(32);
    const seeded = Date.now();
    if (!address)
      await Promise.all(
        Array.from({ length: ORDERS }, (_, i) =>
          limit(async () => {
            const ref = `EXPORT-${i}-${randomUUID().slice(0, 6)}`;
            const request = benchOrderRequest(i, ref);
            const acceptedAt = new Date(start + Math.floor((i / ORDERS) * 30 * DAY));
            await seedListedOrder(client, {
              taskQueue: TASK_QUEUE,
              owner: 'acme',
              request,
              status: 'FULFILLED',
              acceptedAt,
              completedAt: new Date(acceptedAt.getTime() + 60_000),
              figures: true,
              input: { request, acceptedAt: acceptedAt.toISOString(), clientId: 'acme' },
            });
          }),
        ),
      );
    const done = `${OrderClientAttribute.name} = 'acme' AND ExecutionStatus = 'Completed'`;
    const deadline = Date.now() + 1_800_000;
    while (!address && (await client.workflow.count(done)).count < ORDERS) {
      if (Date.now() > deadline) throw new Error('orders not completed');
      await new Promise((r) => setTimeout(r, 1_000));
    }
    if (address) console.log(`${(await client.workflow.count(done)).count} completed orders on ${address}`);
    else console.log(`seeded ${ORDERS} completed orders in ${((Date.now() - seeded) / 1000).toFixed(1)} s`);

    for (const [label, to] of [
      ['a tenth of the range', start + (DAYS / 10) * DAY - 1],
      [`all ${DAYS} days`, start + DAYS * DAY],
      ['a tenth of the range', start + (DAYS / 10) * DAY - 1],
      [`all ${DAYS} days`, start + DAYS * DAY],
    ] as const) {
      global.gc?.();
      const before = process.memoryUsage();
      let peakRss = before.rss;
      let peakHeap = before.heapUsed;
      const sampler = setInterval(() => {
        const now = process.memoryUsage();
        peakRss = Math.max(peakRss, now.rss);
        peakHeap = Math.max(peakHeap, now.heapUsed);
      }, 50);
      const t0 = performance.now();
      const res = await fetch(
        `${api.url}/v1/orders/export?from=${new Date(start).toISOString()}&to=${new Date(to).toISOString()}`,
        { headers: { authorization: `Bearer ${testClients.acme.key}`, accept: 'application/x-ndjson' } },
      );
      if (!res.ok || !res.body) throw new Error(`export: ${res.status} ${await res.text()}`);
      let rows = 0;
      let bytes = 0;
      let firstRowMs: number | undefined;
      const decoder = new TextDecoder();
      for await (const chunk of res.body) {
        bytes += chunk.length;
        const lines = decoder.decode(chunk, { stream: true }).split('\n').length - 1;
        if (lines > 0 && firstRowMs === undefined) firstRowMs = performance.now() - t0;
        rows += lines;
      }
      const ms = performance.now() - t0;
      clearInterval(sampler);
      // What the export left behind, not garbage yet to be collected (needs node --expose-gc).
      global.gc?.();
      const retained = process.memoryUsage().heapUsed;
      const mb = (n: number) => (n / 1024 / 1024).toFixed(0);
      console.log(
        `export ${label}: ${rows} rows, ${(bytes / 1024 / 1024).toFixed(1)} MiB in ${(ms / 1000).toFixed(1)} s ` +
          `(${((rows / ms) * 1000).toFixed(0)} rows/s, first row after ${firstRowMs?.toFixed(0)} ms); ` +
          `RSS ${mb(before.rss)} → peak ${mb(peakRss)} MiB, heap ${mb(before.heapUsed)} → peak ${mb(peakHeap)} MiB` +
          `${global.gc ? `, ${mb(retained)} MiB after a GC` : ''}; ` +
          `load ${loadavg()[0]!.toFixed(1)}`,
      );
    }
  } finally {
    await api.close();
    worker?.shutdown();
    await running;
    await native.close();
    await connection.close();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
