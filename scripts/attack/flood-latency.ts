/**
 * `npx tsx scripts/attack/flood-latency.ts --url http://127.0.0.1:3310 --flooder <key> --victim <key>`:
 * issue 34's "another client's order waited during the flood", measured from outside.
 *
 * First the victim's single order and a 5-order batch on the idle stack (time until every one is
 * FULFILLED); then the flooder submits batches of `--batch` mobile top-ups from `--loops` parallel
 * loops, as fast as its limits let it (a 429 waits its Retry-After), and reads its orders list
 * meanwhile; after `--warmup` seconds the victim submits the same single order and batch again.
 * Prints both timings (with the victim's refs), the flood's counts and the victim's read latency.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:3000' },
    flooder: { type: 'string' },
    victim: { type: 'string' },
    loops: { type: 'string', default: '8' },
    batch: { type: 'string', default: '100' },
    warmup: { type: 'string', default: '20' },
    'flood-s': { type: 'string', default: '90' },
    'skip-idle': { type: 'boolean', default: false },
  },
});
const base = values.url;
const run = randomUUID().slice(0, 6);

async function call(key: string, method: string, path: string, body?: unknown) {
  const started = Date.now();
  try {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    return {
      status: res.status,
      text,
      ms: Date.now() - started,
      retry: Number(res.headers.get('retry-after') ?? 1),
    };
  } catch (err) {
    return { status: 0, text: (err as Error).message, ms: Date.now() - started, retry: 1 };
  }
}

const mobile = (ref: string) => ({
  type: 'mobile_topup',
  ref,
  planCode: 'PREPAID_DJEZZY',
  msisdn: '0551234567',
  amount: 500,
});

async function finalAfter(key: string, refs: string[], started: number): Promise<number> {
  const pending = new Set(refs);
  while (pending.size > 0 && Date.now() - started < 600_000) {
    for (const ref of [...pending]) {
      const res = await call(key, 'GET', `/v1/orders/${ref}`);
      if (res.status === 200 && (JSON.parse(res.text) as { status: string }).status === 'FULFILLED')
        pending.delete(ref);
    }
    if (pending.size > 0) await sleep(1_000);
  }
  return pending.size === 0 ? (Date.now() - started) / 1000 : Number.NaN;
}

/** The victim's single order and a 5-order batch: seconds until each is FULFILLED. */
async function victimOrders(key: string, label: string) {
  const single = `V-${run}-${label}-single`;
  const startedSingle = Date.now();
  const s = await call(key, 'POST', '/v1/orders', mobile(single));
  if (s.status !== 201) throw new Error(`victim single: ${s.status} ${s.text}`);
  const batchRefs = Array.from({ length: 5 }, (_, i) => `V-${run}-${label}-b${i}`);
  const startedBatch = Date.now();
  const b = await call(key, 'POST', '/v1/orders/batch', { orders: batchRefs.map(mobile) });
  if (b.status >= 300) throw new Error(`victim batch: ${b.status} ${b.text}`);
  // Items are answered one by one: only the accepted ones are waited for, the rest are counted.
  const items =
    (JSON.parse(b.text) as { results?: Array<{ status: number; body?: { detail?: string } }> }).results ?? [];
  const batchItems: Record<string, number> = {};
  for (const item of items) {
    const what = item.status < 300 ? String(item.status) : `${item.status} ${item.body?.detail ?? ''}`;
    batchItems[what] = (batchItems[what] ?? 0) + 1;
  }
  const accepted = batchRefs.filter((_, i) => items[i] !== undefined && items[i].status < 300);
  const [singleS, batchS] = await Promise.all([
    finalAfter(key, [single], startedSingle),
    finalAfter(key, accepted, startedBatch),
  ]);
  // The refs: their workflow histories show where the time went (temporal workflow show).
  return { singleS, batchS, batchItems, submitMs: s.ms, batchSubmitMs: b.ms, refs: [single, ...batchRefs] };
}

async function main() {
  const flooder = values.flooder!;
  const victim = values.victim!;
  const idle = values['skip-idle'] ? undefined : await victimOrders(victim, 'idle');
  if (idle) console.log(`idle: ${JSON.stringify(idle)}`);

  const counts = { batches: 0, accepted: 0, refused429: 0, other: new Map<string, number>(), reads: 0 };
  let stop = false;
  const floodUntil = Date.now() + Number(values['flood-s']) * 1_000;
  const loops = Array.from({ length: Number(values.loops) }, async (_, loop) => {
    let n = 0;
    while (!stop && Date.now() < floodUntil) {
      const refs = Array.from({ length: Number(values.batch) }, () => `F-${run}-${loop}-${n++}`);
      const res = await call(flooder, 'POST', '/v1/orders/batch', { orders: refs.map(mobile) });
      counts.batches++;
      if (res.status === 429) {
        counts.refused429++;
        await sleep(Math.min(5, res.retry) * 1_000);
      } else if (res.status < 300) {
        counts.accepted += Number(values.batch);
        await call(flooder, 'GET', '/v1/orders?pageSize=50');
        counts.reads++;
      } else counts.other.set(String(res.status), (counts.other.get(String(res.status)) ?? 0) + 1);
    }
  });
  await sleep(Number(values.warmup) * 1_000);
  const readMs: number[] = [];
  const readStatuses = new Map<string, number>();
  let reading = true;
  const reader = (async () => {
    while (reading) {
      const r = await call(victim, 'GET', '/v1/orders?pageSize=5');
      readStatuses.set(String(r.status), (readStatuses.get(String(r.status)) ?? 0) + 1);
      if (r.status === 200) readMs.push(r.ms);
      await sleep(500);
    }
  })();
  const underFlood = await victimOrders(victim, 'flood');
  reading = false;
  stop = true;
  await Promise.all([...loops, reader]);
  readMs.sort((a, b) => a - b);
  console.log(
    JSON.stringify(
      {
        idle,
        underFlood,
        flood: { ...counts, other: Object.fromEntries(counts.other) },
        victimReadsMs: {
          statuses: Object.fromEntries(readStatuses),
          p50: readMs[Math.floor(readMs.length / 2)],
          max: readMs.at(-1),
        },
      },
      null,
      2,
    ),
  );
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
