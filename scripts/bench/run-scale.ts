/**
 * The scale run: N orders at the spec's full timings (PENDING 5 s, HANDLING 15 s, polling 5 s /
 * 15 s), submitted as fast as the API (or, with --scale-submit direct, OrderService in-process)
 * takes them, so as many as possible are in flight at once waiting on their timers. Measures the
 * worker's RSS, the Temporal server's CPU, how many orders were in flight at once, and how long
 * after the provider had finished the last order every order was final.
 */
import type { OrderType } from '../../contract/schemas';
import { LEGACY_CLIENT_ID } from '../../src/clients/model';
import { providerRefFor } from '../../src/orders/provider-ref';
import { orderWorkflowId } from '../../contract/order';
import { fetchHistories, listWorkflows, timeBreakdown, waitClosed, type WaitResult } from './histories';
import { sandboxSends } from './sandbox-admin';
import { apiSubmitter, closedLoop, directSubmitter, type LoadResult } from './load';
import { orderAt, workflowIdPrefix } from './orders';
import type { PhaseUsage } from './proc';
import { endToEnd, perType, type EndToEnd, type PerTypeReport, type RunContext } from './run-normal';
import { summarize, type Summary } from './stats';

/** The sandbox's PENDING + HANDLING time at scale 1: the provider has finished an order this long after its send. */
const PROVIDER_DONE_AFTER_MS = 20_000;

export interface ScalePoint {
  /** Seconds since the first submission. */
  t: number;
  inFlight: number;
  workerRssMb?: number;
  /** CPU cores used since the previous point. */
  temporalCores?: number;
  workerCores?: number;
  apiCores?: number;
}

export interface ScaleReport {
  kind: 'scale';
  orders: number;
  concurrency: number;
  timeScale: number;
  submitVia: 'api' | 'direct';
  intake: Omit<LoadResult, 'calls'>;
  wait: WaitResult;
  e2e: EndToEnd;
  inFlight: {
    peak: number;
    /** Seconds after the first submission. */
    peakAtS: number;
    /** Seconds from the first to the last successful submission. */
    submitSpanS: number;
  };
  provider: {
    /** Seconds after the first submission: the provider's last FULFILLED (last send + 20 s × scale). */
    lastFulfilledAtS: number;
    /** Seconds after the first submission: the last order final. */
    lastFinalAtS: number;
    /** The headline: every order final this long after the provider had finished the last one. */
    allFinalAfterProviderS: number;
    /** Per order: final minus the provider's FULFILLED time (ms). */
    lagMs: Summary;
  };
  perType: PerTypeReport[];
  /** Gift-card orders submitted (warm-up included) and placements the sandbox received: a lost placement shows here. */
  giftCards?: { submitted: number; placedAtSandbox: number };
  /** Where an order's time went, ms per order. */
  time: Record<string, Summary>;
  usage: { submitting: Record<string, PhaseUsage>; total: Record<string, PhaseUsage> };
  /** Average CPU cores of each process over the whole phase. */
  averageCores: Record<string, number>;
  series: ScalePoint[];
  /**
   * Client `another`: one mobile top-up every SECOND_CLIENT_EVERY_MS from the first submission
   * until the scale run's orders are closed: what another client's orders see meanwhile.
   */
  secondClient?: {
    orders: number;
    sentMs: Summary;
    finalMs: Summary;
    /** Each order: accepted at t s (from the first scale submission), sent and final after, s. */
    overTime: { t: number; sentS?: number; finalS?: number }[];
  };
}

/** The second client's pace during the scale run: the noisy run's B. */
const SECOND_CLIENT_EVERY_MS = 2_000;

export async function runScale(ctx: RunContext): Promise<ScaleReport> {
  const { options, stack, client, monitor, runId, log } = ctx;
  const n = options.scale!;
  const { mix, concurrency, timeScale } = options;
  const phaseName = 'scale';
  const prefix = workflowIdPrefix(runId, phaseName);

  let submit: (index: number) => Promise<string>;
  let close = async () => {};
  if (options.scaleSubmit === 'direct') {
    const direct = directSubmitter(client, stack);
    submit = (i) => direct(orderAt(runId, phaseName, mix, i));
  } else {
    const api = apiSubmitter(stack.apiUrl, stack.apiKey, concurrency);
    submit = (i) => api.submit(orderAt(runId, phaseName, mix, i));
    close = () => api.close();
  }

  try {
    let warmGiftCards = 0;
    if (options.warmup > 0) {
      log(`warm-up: ${options.warmup} orders (not waited for)…`);
      const warm = await closedLoop(options.warmup, concurrency, (i) => submit(n + i));
      warmGiftCards = warm.calls.filter(
        (c) => c.outcome === 'ok' && mix[(n + c.index) % mix.length] === 'gift_card',
      ).length;
    }
    log(`scale: submitting ${n} orders via ${options.scaleSubmit} at concurrency ${concurrency}…`);
    monitor.recordSeries(true);
    const second = secondClient(ctx);
    const total = await monitor.phase();
    const submitting = await monitor.phase();
    const { calls, ...intake } = await closedLoop(n, concurrency, submit);
    const submittingUsage = await submitting.stop();
    log(
      `  ${intake.ok} submitted in ${intake.durationS.toFixed(1)} s (${intake.perSecond.toFixed(1)}/s)` +
        (Object.keys(intake.failures).length ? `, failures: ${JSON.stringify(intake.failures)}` : ''),
    );
    const expected = intake.ok + (options.warmup > 0 ? options.warmup : 0);
    const wait = await waitClosed(client, prefix, expected, {
      timeoutS: options.waitTimeoutS,
      intervalMs: 2_000,
      assertAlive: () => stack.assertAlive(),
      progress: (closed) => log(`  ${closed}/${expected} closed…`),
    });
    const totalUsage = await total.stop();
    monitor.recordSeries(false);
    const secondOrders = await second?.stop();
    log(
      `  ${wait.closed} closed${wait.inReview ? `, ${wait.inReview} in NEEDS_REVIEW` : ''}` +
        `${wait.timedOut ? ' (TIMED OUT waiting)' : ''} after ${wait.waitedS.toFixed(1)} s more`,
    );

    const orderId = (i: number) => orderWorkflowId(orderAt(runId, phaseName, mix, i).ref);
    const workflows = (await listWorkflows(client, prefix)).filter((w) => {
      const index = Number(w.workflowId.slice(prefix.length));
      return index < n;
    });
    const e2e = endToEnd(calls, orderId, workflows);

    log(`reading ${workflows.length} histories…`);
    const histories = await fetchHistories(
      client,
      workflows.map((w) => w.workflowId),
      options.historyConcurrency,
      (done) => log(`  ${done}/${workflows.length}`),
    );
    const sends = await sandboxSends(stack.sandbox);

    const okCalls = calls.filter((c) => c.outcome === 'ok');
    const t0 = Math.min(...okCalls.map((c) => c.startMs));
    const lastSubmit = Math.max(...okCalls.map((c) => c.endMs));
    const starts = workflows.map((w) => w.startMs).sort((a, b) => a - b);
    const closes = workflows
      .flatMap((w) => (w.closeMs === undefined ? [] : [w.closeMs]))
      .sort((a, b) => a - b);
    const inFlightAt = (t: number) => countAtOrBefore(starts, t) - countAtOrBefore(closes, t);
    let peak = 0;
    let peakAt = t0;
    for (const t of starts) {
      const value = inFlightAt(t);
      if (value > peak) [peak, peakAt] = [value, t];
    }

    const doneAfter = PROVIDER_DONE_AFTER_MS * timeScale;
    const lags: number[] = [];
    let lastFulfilled = -Infinity;
    for (const h of histories) {
      if (h.sendCompletedMs === undefined) continue;
      const fulfilledAt = h.sendCompletedMs + doneAfter;
      lastFulfilled = Math.max(lastFulfilled, fulfilledAt);
      if (h.closeMs !== undefined) lags.push(h.closeMs - fulfilledAt);
    }
    const lastFinal = closes[closes.length - 1] ?? NaN;

    const typeOf = new Map<string, OrderType>();
    const refOf = new Map<string, string>();
    for (let i = 0; i < n; i++) {
      const order = orderAt(runId, phaseName, mix, i);
      typeOf.set(orderWorkflowId(order.ref), order.type);
      // The provider counts sends by the ref derived from (client, ref); the bench's key is the default client, `default`.
      refOf.set(orderWorkflowId(order.ref), providerRefFor(LEGACY_CLIENT_ID, order.ref));
    }

    const series = downsample(monitor.series, t0, 5_000, inFlightAt);
    const spanS = (lastFinal - t0) / 1000;
    const averageCores = Object.fromEntries(
      Object.entries(totalUsage).map(([name, u]) => [name, spanS > 0 ? u.cpuSeconds / spanS : NaN]),
    );

    return {
      kind: 'scale',
      orders: n,
      concurrency,
      timeScale,
      submitVia: options.scaleSubmit,
      intake,
      wait,
      e2e,
      inFlight: { peak, peakAtS: (peakAt - t0) / 1000, submitSpanS: (lastSubmit - t0) / 1000 },
      provider: {
        lastFulfilledAtS: (lastFulfilled - t0) / 1000,
        lastFinalAtS: (lastFinal - t0) / 1000,
        allFinalAfterProviderS: (lastFinal - lastFulfilled) / 1000,
        lagMs: summarize(lags),
      },
      perType: perType(histories, typeOf, refOf, undefined, sends),
      ...(sends
        ? {
            giftCards: {
              submitted:
                okCalls.filter((c) => mix[c.index % mix.length] === 'gift_card').length + warmGiftCards,
              placedAtSandbox: sends.giftCardOrders.placed,
            },
          }
        : {}),
      time: timeBreakdown(histories),
      usage: { submitting: submittingUsage, total: totalUsage },
      averageCores,
      series,
      ...(second && secondOrders !== undefined
        ? { secondClient: await second.figures(secondOrders, t0) }
        : {}),
    };
  } finally {
    await close();
  }
}

/** Client B (`another`) submitting one order every SECOND_CLIENT_EVERY_MS until stop(); undefined without it. */
function secondClient(ctx: RunContext) {
  const { stack, client, options, runId, log } = ctx;
  const another = stack.clients?.another;
  if (!another) return undefined;
  const api = apiSubmitter(stack.apiUrl, another.apiKey, 2);
  const order = (i: number) => orderAt(runId, 'scaleb', ['mobile_topup'], i);
  let stopping = false;
  const run = (async () => {
    const inFlight: Promise<string>[] = [];
    for (let i = 0; !stopping; i++) {
      inFlight.push(api.submit(order(i)));
      await new Promise((r) => setTimeout(r, SECOND_CLIENT_EVERY_MS));
    }
    return (await Promise.all(inFlight)).length;
  })();
  return {
    /** Stops submitting; the number submitted, once the last is answered. */
    async stop(): Promise<number> {
      stopping = true;
      try {
        return await run;
      } finally {
        await api.close();
      }
    },
    async figures(count: number, t0: number): Promise<NonNullable<ScaleReport['secondClient']>> {
      await waitClosed(client, workflowIdPrefix(runId, 'scaleb', another.id), count, {
        timeoutS: options.waitTimeoutS,
        assertAlive: () => stack.assertAlive(),
      });
      log(`reading the second client's ${count} histories…`);
      const ids = Array.from({ length: count }, (_, i) => orderWorkflowId(order(i).ref, another.id));
      const histories = await fetchHistories(client, ids, options.historyConcurrency);
      const after = (at: number | undefined, start: number | undefined) =>
        at !== undefined && start !== undefined ? (at - start) / 1000 : undefined;
      const overTime = histories.flatMap((h) =>
        h.startMs === undefined
          ? []
          : [
              {
                t: (h.startMs - t0) / 1000,
                sentS: after(h.sendCompletedMs, h.startMs),
                finalS: after(h.closeMs, h.startMs),
              },
            ],
      );
      overTime.sort((a, b) => a.t - b.t);
      const ms = (values: (number | undefined)[]) =>
        summarize(values.flatMap((v) => (v === undefined ? [] : [v * 1000])));
      return {
        orders: count,
        sentMs: ms(overTime.map((o) => o.sentS)),
        finalMs: ms(overTime.map((o) => o.finalS)),
        overTime,
      };
    },
  };
}

/** How many of the ascending `sorted` are <= t. */
function countAtOrBefore(sorted: readonly number[], t: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function downsample(
  samples: { at: number; rssMb: Record<string, number>; cpuSeconds: Record<string, number> }[],
  t0: number,
  stepMs: number,
  inFlightAt: (t: number) => number,
): ScalePoint[] {
  const points: ScalePoint[] = [];
  let previous: (typeof samples)[number] | undefined;
  for (const sample of samples) {
    if (previous && sample.at - previous.at < stepMs) continue;
    const cores = (name: string) =>
      previous && sample.cpuSeconds[name] !== undefined && previous.cpuSeconds[name] !== undefined
        ? (sample.cpuSeconds[name] - previous.cpuSeconds[name]) / ((sample.at - previous.at) / 1000)
        : undefined;
    points.push({
      t: Math.round((sample.at - t0) / 100) / 10,
      inFlight: inFlightAt(sample.at),
      workerRssMb: sample.rssMb.worker,
      temporalCores: cores('temporal'),
      workerCores: cores('worker'),
      apiCores: cores('api'),
    });
    previous = sample;
  }
  return points;
}
