/**
 * The noisy-neighbour run (`--noisy N`, docs/benchmarks.md "The other runs"): on one stack,
 * first the idle stack — client B submits one order every 2 s and client A one single order every
 * 5 s — then the same while A floods N orders through POST /v1/orders/batch (batches of 500, one
 * after the other). For B's orders and A's singles: acceptance → sent (the send activity completed)
 * and acceptance → final, from their histories; A's flood throughput; Temporal's CPU. bench.ts runs
 * it twice, on a server with fairness off and on.
 */
import { fetchHistories, waitClosed } from './histories';
import { apiSubmitter, batchSubmitter } from './load';
import { orderAt, workflowIdPrefix } from './orders';
import type { RunContext } from './run-normal';
import { summarize, type Summary } from './stats';

const B_EVERY_MS = 2_000;
const A_SINGLE_EVERY_MS = 5_000;
const FLOOD_BATCH = 500;
/** The idle phase: B's and A's trickle alone, this long. */
const IDLE_MS = 20_000;

export interface TrickleFigures {
  orders: number;
  sentMs: Summary;
  finalMs: Summary;
}

export interface NoisyPhase {
  b: TrickleFigures;
  aSingles: TrickleFigures;
}

export interface NoisyReport {
  kind: 'noisy';
  fairness: boolean;
  flood: number;
  idle: NoisyPhase;
  loaded: NoisyPhase;
  /** A's flood: accepted in, and all closed in (from the first batch sent). */
  floodAcceptedS: number;
  floodClosedS: number;
  floodOrdersPerS: number;
  floodFailed: number;
  /** Temporal's CPU seconds during the loaded phase (submission to the last close). */
  temporalCpuS: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Submits one order every `everyMs` until `until()` says stop; the refs submitted. */
export async function trickle(
  submit: (i: number) => Promise<string>,
  everyMs: number,
  until: () => boolean,
): Promise<number> {
  let i = 0;
  const inFlight: Promise<unknown>[] = [];
  while (!until()) {
    inFlight.push(submit(i++));
    await sleep(everyMs);
  }
  await Promise.all(inFlight);
  return i;
}

export async function figures(ctx: RunContext, prefix: string, count: number): Promise<TrickleFigures> {
  const ids = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
  const histories = await fetchHistories(ctx.client, ids, ctx.options.historyConcurrency);
  const sent = histories.flatMap((h) =>
    h.startMs !== undefined && h.sendCompletedMs !== undefined ? [h.sendCompletedMs - h.startMs] : [],
  );
  const final = histories.flatMap((h) =>
    h.startMs !== undefined && h.closeMs !== undefined ? [h.closeMs - h.startMs] : [],
  );
  return { orders: count, sentMs: summarize(sent), finalMs: summarize(final) };
}

export async function runNoisy(ctx: RunContext, fairness: boolean): Promise<NoisyReport> {
  const { options, stack, runId, log } = ctx;
  const another = stack.clients?.another;
  if (!another) throw new Error('--noisy needs the stack the bench starts (its second client is B)');
  const flood = options.noisy ?? 3_000;
  const tag = fairness ? 'on' : 'off';
  const a = apiSubmitter(stack.apiUrl, stack.apiKey, 4);
  const b = apiSubmitter(stack.apiUrl, another.apiKey, 4);
  const batches = batchSubmitter(stack.apiUrl, stack.apiKey, 1);
  const order = (phase: string) => (i: number) => orderAt(runId, phase, options.mix, i);
  const submitting = (
    submit: (o: ReturnType<ReturnType<typeof order>>) => Promise<string>,
    phase: string,
  ) => {
    const make = order(phase);
    return async (i: number) => {
      const outcome = await submit(make(i));
      if (outcome !== 'ok') log(`${phase} #${i}: ${outcome}`);
      return outcome;
    };
  };
  const phaseIds = (phase: string, owner?: string) => workflowIdPrefix(runId, phase, owner);

  try {
    // -- idle --
    log(`noisy (fairness ${tag}): idle stack, B every 2 s and A every 5 s for ${IDLE_MS / 1000} s`);
    const idleEnd = Date.now() + IDLE_MS;
    const [idleB, idleA] = await Promise.all([
      trickle(submitting(b.submit, `${tag}-idle-b`), B_EVERY_MS, () => Date.now() >= idleEnd),
      trickle(submitting(a.submit, `${tag}-idle-a`), A_SINGLE_EVERY_MS, () => Date.now() >= idleEnd),
    ]);
    const waitIdle = { timeoutS: options.waitTimeoutS, assertAlive: stack.assertAlive };
    await waitClosed(ctx.client, phaseIds(`${tag}-idle-b`, another.id), idleB, waitIdle);
    await waitClosed(ctx.client, phaseIds(`${tag}-idle-a`), idleA, waitIdle);

    // -- A floods; B and A's singles go on --
    log(`noisy (fairness ${tag}): A floods ${flood} orders in batches of ${FLOOD_BATCH}`);
    const mark = await ctx.monitor.phase();
    const t0 = Date.now();
    let floodAccepted = false;
    let floodAcceptedS = NaN;
    let floodFailed = 0;
    const makeFlood = order(`${tag}-flood`);
    const floodRun = (async () => {
      for (let start = 0; start < flood; start += FLOOD_BATCH) {
        const batch = Array.from({ length: Math.min(FLOOD_BATCH, flood - start) }, (_, i) =>
          makeFlood(start + i),
        );
        const outcomes = await batches.submit(batch);
        floodFailed += outcomes.filter((o) => o !== 'ok').length;
      }
      floodAccepted = true;
      floodAcceptedS = (Date.now() - t0) / 1000;
    })();
    // The trickle lasts as long as the flood is being accepted, and at least 20 s.
    const trickleUntil = () => floodAccepted && Date.now() - t0 >= 20_000;
    const [loadedB, loadedA] = await Promise.all([
      trickle(submitting(b.submit, `${tag}-loaded-b`), B_EVERY_MS, trickleUntil),
      trickle(submitting(a.submit, `${tag}-loaded-a`), A_SINGLE_EVERY_MS, trickleUntil),
      floodRun,
    ]);
    const wait = { timeoutS: options.waitTimeoutS, assertAlive: stack.assertAlive, intervalMs: 500 };
    await waitClosed(ctx.client, phaseIds(`${tag}-flood`), flood - floodFailed, wait);
    const floodClosedS = (Date.now() - t0) / 1000;
    await waitClosed(ctx.client, phaseIds(`${tag}-loaded-b`, another.id), loadedB, wait);
    await waitClosed(ctx.client, phaseIds(`${tag}-loaded-a`), loadedA, wait);
    const usage = await mark.stop();

    return {
      kind: 'noisy',
      fairness,
      flood,
      idle: {
        b: await figures(ctx, phaseIds(`${tag}-idle-b`, another.id), idleB),
        aSingles: await figures(ctx, phaseIds(`${tag}-idle-a`), idleA),
      },
      loaded: {
        b: await figures(ctx, phaseIds(`${tag}-loaded-b`, another.id), loadedB),
        aSingles: await figures(ctx, phaseIds(`${tag}-loaded-a`), loadedA),
      },
      floodAcceptedS,
      floodClosedS,
      floodOrdersPerS: (flood - floodFailed) / floodClosedS,
      floodFailed,
      temporalCpuS: usage.temporal?.cpuSeconds ?? NaN,
    };
  } finally {
    await Promise.allSettled([a.close(), b.close(), batches.close()]);
  }
}

const s = (ms: number) => (ms / 1000).toFixed(2);
const row = (label: string, f: TrickleFigures, idle: TrickleFigures) =>
  `${label.padEnd(30)} ${String(f.orders).padStart(3)}  sent p50/p99/max ${s(f.sentMs.p50)}/${s(f.sentMs.p99)}/${s(f.sentMs.max)} s` +
  `  final p50/p99/max ${s(f.finalMs.p50)}/${s(f.finalMs.p99)}/${s(f.finalMs.max)} s` +
  `  (final max ${(f.finalMs.max / idle.finalMs.max).toFixed(2)}× idle)`;

export function formatNoisy(reports: readonly NoisyReport[], header: string[]): string {
  const lines = [...header, ''];
  for (const r of reports) {
    lines.push(
      `fairness ${r.fairness ? 'ON' : 'OFF'} — A floods ${r.flood} orders (batches of ${FLOOD_BATCH})`,
    );
    lines.push(row('  B, idle stack', r.idle.b, r.idle.b));
    lines.push(row('  B, during the flood', r.loaded.b, r.idle.b));
    lines.push(row("  A's singles, idle stack", r.idle.aSingles, r.idle.aSingles));
    lines.push(row("  A's singles, during the flood", r.loaded.aSingles, r.idle.aSingles));
    lines.push(
      `  A's flood: accepted in ${r.floodAcceptedS.toFixed(1)} s, all closed in ${r.floodClosedS.toFixed(1)} s ` +
        `(${r.floodOrdersPerS.toFixed(1)} orders/s${r.floodFailed ? `, ${r.floodFailed} not accepted` : ''}); ` +
        `Temporal CPU ${r.temporalCpuS.toFixed(1)} s`,
    );
    lines.push('');
  }
  const [off, on] = [reports.find((r) => !r.fairness), reports.find((r) => r.fairness)];
  if (off && on)
    lines.push(
      `A's flood throughput, fairness on / off: ${(on.floodOrdersPerS / off.floodOrdersPerS).toFixed(2)}×`,
    );
  return lines.join('\n');
}
