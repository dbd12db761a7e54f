/**
 * The webhook fairness phase (issue 22): client B (`hooks`, a prompt endpoint in the bench) submits
 * a few orders on the idle stack; then again while client A (`slowhooks`, whose endpoint takes
 * SLOW_ENDPOINT_MS to answer each delivery) submits many. B's deliveries, from each status change
 * to its arrival, loaded against idle: issue 22's target is ≤ 2×. Run after the other phases: A's
 * deliveries go on retrying in the background.
 */
import type { WebhookMessage } from '../../src/webhooks/message';
import { closedLoop, apiSubmitter } from './load';
import { orderAt, refPrefix, workflowIdPrefix } from './orders';
import type { RunContext } from './run-normal';
import { SLOW_ENDPOINT_MS } from './stack';
import { ratio, summarize, type Summary } from './stats';
import { waitClosed } from './histories';

export interface WebhookFairnessReport {
  /** A's orders (slow endpoint) and B's, per part. */
  slowOrders: number;
  promptOrders: number;
  slowEndpointMs: number;
  /** B's deliveries: status change → first arrival of each event, ms (order.processing left out: PROVIDER_TIMED). */
  idle: Summary;
  loaded: Summary;
  /**
   * For attribution: B's deliveries beside as many orders of a client without an endpoint (the
   * same load on the cores, no slow endpoint). Loaded ≈ control: what slows B is the orders' CPU.
   */
  control?: Summary;
  ratio: { p50: number; p99: number; max: number };
  /** Deliveries A's endpoint had received by the time B's last event arrived. */
  slowReceived: number;
  /** CPU seconds of our parts (and of the machine's other users) during each of B's parts: what the load cost. */
  cpuSeconds: Partial<Record<'idle' | 'loaded' | 'control', Record<string, number>>>;
  /**
   * What A's endpoint cost Temporal, counted rather than timed (CPU on a shared machine is noisy):
   * its delivery workflows and their history events, `afterS` seconds after A's first order, read
   * when B's loaded part ended and again at the end of the control part.
   */
  slowDeliveryWork?: { afterS: number; workflows: number; events: number }[];
}

const PROMPT_ORDERS = 20;
/**
 * A's orders: enough that its endpoint has a backlog of deliveries all through B's part, few
 * enough that what is measured is its endpoint, not a flood of orders (the noisy run's subject).
 */
const SLOW_ORDERS = 60;
const FINAL_TYPES = new Set(['order.fulfilled', 'order.refunded', 'order.failed']);
/**
 * Its timestamp is when the provider began handling the order, which the workflow learns at its
 * next check: its latency is mostly the polling schedule (later under load), not the delivery.
 */
const PROVIDER_TIMED = 'order.processing';

export async function runWebhookFairness(ctx: RunContext): Promise<WebhookFairnessReport | undefined> {
  const { options, stack, client, monitor, runId, log } = ctx;
  const hooks = stack.webhooks;
  if (!hooks) return undefined;
  const cpuSeconds: WebhookFairnessReport['cpuSeconds'] = {};
  const prompt = apiSubmitter(stack.apiUrl, hooks.apiKey, 4);
  const slow = apiSubmitter(stack.apiUrl, hooks.slow.apiKey, 4);
  const slowOrders = Math.min(SLOW_ORDERS, options.orders);
  try {
    /** B's orders of a part, submitted four at a time; their events' latencies once every final one arrived. */
    const promptPart = async (phase: string, part: keyof typeof cpuSeconds): Promise<number[]> => {
      const usage = await monitor.phase();
      await closedLoop(PROMPT_ORDERS, 4, (i) => prompt.submit(orderAt(runId, phase, options.mix, i)));
      const prefix = refPrefix(runId, phase);
      const mine = () =>
        hooks.receiver.deliveries.filter((d): d is typeof d & { message: WebhookMessage } =>
          Boolean(d.message?.data.ref.startsWith(prefix)),
        );
      const finals = () =>
        new Set(
          mine()
            .filter((d) => FINAL_TYPES.has(d.message.type))
            .map((d) => d.message.data.ref),
        ).size;
      const t0 = Date.now();
      while (finals() < PROMPT_ORDERS && Date.now() - t0 < 180_000)
        await new Promise((r) => setTimeout(r, 250));
      cpuSeconds[part] = Object.fromEntries(
        Object.entries(await usage.stop()).map(([name, u]) => [name, Math.round(u.cpuSeconds * 100) / 100]),
      );
      const first = new Map<string, number>();
      for (const d of mine()) {
        if (d.message.type === PROVIDER_TIMED || first.has(d.id)) continue;
        first.set(d.id, d.receivedAt - Date.parse(d.message.timestamp));
      }
      return [...first.values()];
    };

    log(`webhook fairness: ${PROMPT_ORDERS} orders of a prompt endpoint's client on the idle stack…`);
    const idle = summarize(await promptPart('fairidle', 'idle'));
    log(
      `webhook fairness: the same while another client submits ${slowOrders} orders to an endpoint taking ${SLOW_ENDPOINT_MS / 1000} s…`,
    );
    const slowStartedAt = Date.now();
    const flood = closedLoop(slowOrders, 4, (i) => slow.submit(orderAt(runId, 'fairslow', options.mix, i)));
    await new Promise((r) => setTimeout(r, 1_000));
    const loaded = summarize(await promptPart('fairloaded', 'loaded'));
    const slowDeliveries = `webhooks:${workflowIdPrefix(runId, 'fairslow', hooks.slow.clientId)}`;
    const slowDeliveryWork = [await deliveryWork(client, slowDeliveries, slowStartedAt)];
    const slowReceived = hooks.slow.receiver.deliveries.length;
    const floodResult = await flood;
    await waitClosed(client, workflowIdPrefix(runId, 'fairslow', hooks.slow.clientId), floodResult.ok, {
      timeoutS: options.waitTimeoutS,
      assertAlive: () => stack.assertAlive(),
    });
    let control: Summary | undefined;
    const another = stack.clients?.another;
    if (another) {
      log(
        `webhook fairness: the same beside ${slowOrders} orders of a client without an endpoint (control)…`,
      );
      const plain = apiSubmitter(stack.apiUrl, another.apiKey, 4);
      try {
        const orders = closedLoop(slowOrders, 4, (i) =>
          plain.submit(orderAt(runId, 'fairplain', options.mix, i)),
        );
        await new Promise((r) => setTimeout(r, 1_000));
        control = summarize(await promptPart('faircontrol', 'control'));
        const submitted = await orders;
        await waitClosed(client, workflowIdPrefix(runId, 'fairplain', another.id), submitted.ok, {
          timeoutS: options.waitTimeoutS,
          assertAlive: () => stack.assertAlive(),
        });
      } finally {
        await plain.close();
      }
      slowDeliveryWork.push(await deliveryWork(client, slowDeliveries, slowStartedAt));
    }
    const report: WebhookFairnessReport = {
      slowOrders,
      promptOrders: PROMPT_ORDERS,
      slowEndpointMs: SLOW_ENDPOINT_MS,
      idle,
      loaded,
      ratio: {
        p50: ratio(loaded.p50, idle.p50),
        p99: ratio(loaded.p99, idle.p99),
        max: ratio(loaded.max, idle.max),
      },
      slowReceived,
      cpuSeconds,
      slowDeliveryWork,
      ...(control ? { control } : {}),
    };
    log(`  prompt client's deliveries p99 ${idle.p99} ms idle, ${loaded.p99} ms beside the slow endpoint`);
    return report;
  } finally {
    await Promise.all([prompt.close(), slow.close()]);
  }
}

/** The delivery workflows whose IDs start with `prefix` (every run) and their history events so far. */
async function deliveryWork(
  client: RunContext['client'],
  prefix: string,
  since: number,
): Promise<{ afterS: number; workflows: number; events: number }> {
  const afterS = Math.round((Date.now() - since) / 1000);
  let workflows = 0;
  let events = 0;
  for await (const info of client.workflow.list({ query: `WorkflowId STARTS_WITH "${prefix}"` })) {
    workflows++;
    // Visibility's count lags for a running workflow: describe says where its history is now.
    const described = await client.workflow.getHandle(info.workflowId, info.runId).describe();
    events += described.historyLength;
  }
  return { afterS, workflows, events };
}

/**
 * `--part webhook-fairness`: the part alone, on a stack of its own, after a warm-up of the prompt
 * client's orders (JIT, connections, caches), so that a change to delivery is quick to measure.
 */
export async function runWebhookFairnessPart(ctx: RunContext): Promise<WebhookFairnessReport | undefined> {
  const { options, stack, client, runId, log } = ctx;
  const hooks = stack.webhooks;
  if (!hooks) throw new Error('--part webhook-fairness needs the bench’s own stack (its receivers)');
  if (options.warmup > 0) {
    log(`warm-up: ${options.warmup} orders of the prompt endpoint's client…`);
    const prompt = apiSubmitter(stack.apiUrl, hooks.apiKey, 4);
    try {
      const warm = await closedLoop(options.warmup, 4, (i) =>
        prompt.submit(orderAt(runId, 'fairwarm', options.mix, i)),
      );
      await waitClosed(client, workflowIdPrefix(runId, 'fairwarm', hooks.clientId), warm.ok, {
        timeoutS: options.waitTimeoutS,
        assertAlive: () => stack.assertAlive(),
      });
    } finally {
      await prompt.close();
    }
  }
  return runWebhookFairness(ctx);
}
