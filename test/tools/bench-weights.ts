/**
 * `npm run bench:weights`: what a fairness weight buys (docs/deployers.md "Fair under load"). On a
 * dev server with fairness on, the sandbox and one constrained order worker (two workflow tasks at
 * a time, so orders queue), two clients of weights 3 and 1 (the clients file, applied to the task
 * queue as the workers apply it) each submit a batch of N orders at the same moment, through the
 * client library. Printed, and written to bench-results/weights.json: the share of the sends each
 * got while both still had orders waiting, and each client's acceptance → sent latency p50/p99
 * (from the order's timeline: its ACCEPTED and SUBMITTED entries).
 *
 * `--orders N` per client (default 150), `--weights 3:1`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { testClientsFile } from '../helpers/api';
import { hashApiKey } from '../../src/clients/keys';
import type { ClientsFile } from '../../src/clients/model';
import { ClientRegistry } from '../../src/clients/registry';
import { applyFairnessWeights } from '../../src/clients/fairness-weights';
import { mobileRequest } from '../helpers/orders';
import { startOrderStack } from '../helpers/stack';
import { TopupClient } from '../../clients/typescript/src';
import { percentile } from '../../scripts/bench/stats';

const arg = (name: string, fallback: string) => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? (process.argv[at + 1] ?? fallback) : fallback;
};

async function main(): Promise<void> {
  const perClient = Number(arg('orders', '150'));
  const [heavyWeight, lightWeight] = arg('weights', '3:1').split(':').map(Number) as [number, number];
  const keys = { heavy: `bench-key-heavy-${randomUUID()}`, light: `bench-key-light-${randomUUID()}` };
  const clients: ClientsFile = {
    ...testClientsFile,
    clients: [
      ...testClientsFile.clients,
      ...(
        [
          ['heavy', heavyWeight],
          ['light', lightWeight],
        ] as const
      ).map(([id, weight]) => ({
        id,
        name: id,
        scopes: ['orders:write' as const, 'orders:read' as const],
        keys: [{ id: 'k1', hash: hashApiKey(keys[id]) }],
        fairnessWeight: weight,
      })),
    ],
  };
  const stack = await startOrderStack({
    name: 'bench-weights',
    // The sandbox's real pace would make the run minutes long; the sends are what is measured.
    sandbox: { timeScale: 0.01 },
    workers: {
      orders: {
        tuning: {
          maxConcurrentWorkflowTaskExecutions: 2,
          maxConcurrentActivityTaskExecutions: 2,
          maxCachedWorkflows: 50,
        },
      },
    },
    api: { clients: new ClientRegistry(clients) },
  });
  try {
    const taskQueue = stack.taskQueues.orders;
    await applyFairnessWeights(stack.connection, {
      namespace: stack.temporal.namespace,
      queues: { orders: taskQueue, webhooks: `${taskQueue}-webhooks` },
      file: clients,
    });
    const api = (id: keyof typeof keys) =>
      new TopupClient({ baseUrl: stack.api.url, apiKey: keys[id], deadlineMs: 120_000 });
    const run = randomUUID().slice(0, 6);
    const refs = (id: string) => Array.from({ length: perClient }, (_, i) => `W${run}-${id}-${i}`);
    const started = Date.now();
    // Both floods at the same moment, one batch each.
    await Promise.all(
      (['heavy', 'light'] as const).map((id) =>
        api(id).submitBatch(refs(id).map((ref) => mobileRequest(ref))),
      ),
    );
    const sends: { client: string; sentAt: number; latencyMs: number }[] = [];
    for (const id of ['heavy', 'light'] as const) {
      for (const ref of refs(id)) {
        const deadline = Date.now() + 300_000;
        for (;;) {
          const order = await api(id).getOrder(ref);
          const accepted = order.timeline.find((e) => e.status === 'ACCEPTED');
          const sent = order.timeline.find((e) => e.status === 'SUBMITTED');
          if (accepted && sent) {
            const sentAt = Date.parse(sent.at);
            sends.push({ client: id, sentAt, latencyMs: sentAt - Date.parse(accepted.at) });
            break;
          }
          if (Date.now() > deadline) throw new Error(`${ref}: not sent within 5 minutes`);
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    }
    sends.sort((a, b) => a.sentAt - b.sentAt);
    // While both had orders waiting: up to the first client's last send.
    const lastOf = (id: string) => Math.max(...sends.filter((s) => s.client === id).map((s) => s.sentAt));
    const contended = sends.filter((s) => s.sentAt <= Math.min(lastOf('heavy'), lastOf('light')));
    const firstHalf = sends.slice(0, Math.floor(sends.length / 2));
    const figures = Object.fromEntries(
      (['heavy', 'light'] as const).map((id) => {
        const latencies = sends
          .filter((s) => s.client === id)
          .map((s) => s.latencyMs)
          .sort((a, b) => a - b);
        return [
          id,
          {
            weight: id === 'heavy' ? heavyWeight : lightWeight,
            orders: latencies.length,
            shareWhileBothWaited: contended.filter((s) => s.client === id).length / contended.length,
            // The first half of all sends: both clients certainly had orders waiting throughout.
            shareOfFirstHalf: firstHalf.filter((s) => s.client === id).length / firstHalf.length,
            sentP50Ms: percentile(latencies, 50),
            sentP99Ms: percentile(latencies, 99),
          },
        ];
      }),
    );
    const report = {
      perClient,
      contendedSends: contended.length,
      tookS: (Date.now() - started) / 1_000,
      worker: 'two workflow task slots, two activity slots',
      clients: figures,
    };
    const dir = join(__dirname, '..', 'bench-results');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'weights.json'), `${JSON.stringify(report, null, 2)}\n`);
    console.log(JSON.stringify(report, null, 2));
    console.log(
      `weights ${heavyWeight}:${lightWeight}, ${perClient} orders each: while both waited, heavy got ` +
        `${(figures.heavy!.shareWhileBothWaited * 100).toFixed(0)} % of the sends, light ` +
        `${(figures.light!.shareWhileBothWaited * 100).toFixed(0)} % (first half of the sends: heavy ` +
        `${(figures.heavy!.shareOfFirstHalf * 100).toFixed(0)} %); sent p50/p99 heavy ` +
        `${figures.heavy!.sentP50Ms}/${figures.heavy!.sentP99Ms} ms, light ${figures.light!.sentP50Ms}/${figures.light!.sentP99Ms} ms`,
    );
  } finally {
    await stack.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
