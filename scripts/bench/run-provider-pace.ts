/**
 * `npm run bench -- --part provider-pace`: how soon the service learns of a provider's outcome
 * when the provider follows its own documented timings (issue 32). The sandbox draws each order's
 * PENDING / HANDLING from the documented ranges (seeded); at time scale 1 the bench submits
 * `--pace-orders` orders of each type through a second API that starts orders with the polling of
 * before (POLL_INTERVAL_MS=0: first check at 5 s, 15 s after HANDLING, then doubling), then as
 * many through the stack's own API (the provider's pace), the same draws both times, on the same
 * worker. For each: provider settled → the service knows (the order's final status, completedAt)
 * and → its webhook delivered, p50 / p90 / max; provider checks and billable actions per order;
 * and provider HANDLING → `order.processing` delivered (the choice in docs/contributors.md "The
 * order lifecycle").
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { orderTypes, type OrderType } from '../../contract/schemas';
import type { OrderView } from '../../contract/order';
import { SandboxAdmin } from '../../src/sandbox/admin-client';
import type { OrderTimeline } from '../../src/sandbox/state';
import { historyFacts } from './histories';
import { benchOrder, refPrefix } from './orders';
import type { RunContext } from './run-normal';
import { fmt, summarize, type Summary } from './stats';
import { table } from './report';

/** Between two submissions: the orders overlap as a day's do, without a burst that starves the worker. */
const SUBMIT_SPACING_MS = 300;

export interface PaceFigures {
  orders: number;
  final: Record<string, number>;
  /** Seconds from the provider settling (its timeline) to the order's final status in the service. */
  known: Summary;
  /** … to the final event's delivery at the back office's receiver. */
  webhook: Summary;
  /** Seconds from the provider's HANDLING to `order.processing` at the receiver (top-ups' and cards' alike). */
  processing: Summary;
  checks: { mean: number; max: number };
  /** Orders that checked more often than the pace allows (one check per interval from the send). */
  overPace: number;
  actions: { mean: number; max: number };
  heartbeats: { mean: number; max: number };
  events: { max: number };
}

export interface PaceGroup {
  label: string;
  env: Record<string, string>;
  perType: Partial<Record<OrderType, PaceFigures>>;
}

export interface ProviderPaceReport {
  kind: 'provider-pace';
  seed: number;
  ordersPerType: number;
  intervalMs: number;
  groups: PaceGroup[];
}

interface Submitted {
  type: OrderType;
  /** Every other order of a type is the webhook client's: its events are timed, the others' cost counted. */
  webhooks: boolean;
  ref: string;
  workflowId: string;
  submittedAt: number;
}

export async function runProviderPace(ctx: RunContext): Promise<ProviderPaceReport> {
  const { stack, options, log } = ctx;
  if (!stack.sandbox || !stack.webhooks || !stack.baselineApiUrl) {
    throw new Error('--part provider-pace needs its own stack (sandbox, webhook receiver, a second API)');
  }
  const admin = new SandboxAdmin(stack.sandbox.url, stack.sandbox.adminToken, 30_000);
  const intervalMs = Number(stack.partEnv.POLL_INTERVAL_MS ?? 5_000);
  const groups: PaceGroup[] = [];
  for (const [label, apiUrl, env] of [
    ['schedule of before', stack.baselineApiUrl, { POLL_INTERVAL_MS: '0' }],
    [`provider's pace (${intervalMs / 1_000} s)`, stack.apiUrl, {}],
  ] as const) {
    // The same draws for both groups: the seed set again starts them from the first.
    await admin.settings({ timings: 'spec' });
    await admin.settings({ timings: 'documented', timingsSeed: options.paceSeed });
    const phase = `pace${groups.length}`;
    log(`provider pace: ${options.paceOrders} orders of each type, ${label}…`);
    const submitted = await submitAll(
      apiUrl,
      { plain: stack.apiKey, webhooks: stack.webhooks.apiKey },
      ctx.runId,
      phase,
      options.paceOrders,
    );
    const views = await Promise.all(
      submitted.map((s) => ctx.client.workflow.getHandle(s.workflowId).result() as Promise<OrderView>),
    );
    const timelines = new Map((await admin.timelines()).map((t) => [t.id, t]));
    groups.push({
      label,
      env,
      perType: await figures(ctx, submitted, views, timelines, intervalMs),
    });
  }
  return {
    kind: 'provider-pace',
    seed: options.paceSeed,
    ordersPerType: options.paceOrders,
    intervalMs,
    groups,
  };
}

async function submitAll(
  apiUrl: string,
  keys: { plain: string; webhooks: string },
  runId: string,
  phase: string,
  perType: number,
): Promise<Submitted[]> {
  const pool = new Pool(apiUrl, { connections: 4 });
  const out: Submitted[] = [];
  try {
    for (let i = 0; i < perType * orderTypes.length; i++) {
      const type = orderTypes[i % orderTypes.length]!;
      // An endpoint adds the announcements' markers (events and actions): a normal order's cost is
      // counted on the orders of a client without one.
      const webhooks = Math.floor(i / orderTypes.length) % 2 === 1;
      const headers = {
        authorization: `Bearer ${webhooks ? keys.webhooks : keys.plain}`,
        'content-type': 'application/json',
      };
      const ref = `${refPrefix(runId, phase)}${i}`;
      const submittedAt = Date.now();
      const response = await pool.request({
        method: 'POST',
        path: '/v1/orders',
        headers,
        body: JSON.stringify(benchOrder(type, ref, i)),
      });
      const body = (await response.body.json()) as { workflowId?: string };
      if (response.statusCode !== 201 || !body.workflowId) {
        throw new Error(`POST /v1/orders: HTTP ${response.statusCode} ${JSON.stringify(body)}`);
      }
      out.push({ type, webhooks, ref, workflowId: body.workflowId, submittedAt });
      await sleep(SUBMIT_SPACING_MS);
    }
  } finally {
    await pool.close();
  }
  return out;
}

async function figures(
  ctx: RunContext,
  submitted: readonly Submitted[],
  views: readonly OrderView[],
  timelines: ReadonlyMap<string, OrderTimeline>,
  intervalMs: number,
): Promise<Partial<Record<OrderType, PaceFigures>>> {
  const deliveries = ctx.stack.webhooks!.receiver.deliveries;
  const perType: Partial<Record<OrderType, PaceFigures>> = {};
  for (const type of orderTypes) {
    const known: number[] = [];
    const webhook: number[] = [];
    const processing: number[] = [];
    const checks: number[] = [];
    const actions: number[] = [];
    const heartbeats: number[] = [];
    const events: number[] = [];
    const final: Record<string, number> = {};
    let overPace = 0;
    for (const [i, s] of submitted.entries()) {
      if (s.type !== type) continue;
      const view = views[i]!;
      final[view.status] = (final[view.status] ?? 0) + 1;
      const line = view.providerReference ? timelines.get(view.providerReference) : undefined;
      if (!line || !view.completedAt) continue;
      const knownAt = Date.parse(view.completedAt);
      known.push((knownAt - line.settledAt) / 1_000);
      const mine = deliveries.filter((d) => d.message?.data.ref === s.ref);
      const finalEvent = mine.find((d) => d.message?.data.status === view.status);
      if (finalEvent) webhook.push((finalEvent.receivedAt - line.settledAt) / 1_000);
      const processingEvent = mine.find((d) => d.message?.type === 'order.processing');
      if (processingEvent) processing.push((processingEvent.receivedAt - line.handlingAt) / 1_000);
      const facts = await historyFacts(ctx.client, s.workflowId);
      checks.push(facts.checkAttempts);
      if (facts.checkAttempts > Math.floor((knownAt - line.createdAt) / intervalMs) + 1) overPace++;
      if (!s.webhooks) {
        actions.push(facts.actions.total);
        heartbeats.push(facts.actions.heartbeats);
        events.push(facts.events);
      }
    }
    const meanMax = (values: number[]) => ({
      mean: values.reduce((a, b) => a + b, 0) / Math.max(1, values.length),
      max: Math.max(...values),
    });
    perType[type] = {
      orders: known.length,
      final,
      known: summarize(known),
      webhook: summarize(webhook),
      processing: summarize(processing),
      checks: meanMax(checks),
      overPace,
      actions: meanMax(actions),
      heartbeats: meanMax(heartbeats),
      events: { max: Math.max(...events) },
    };
  }
  return perType;
}

export function formatProviderPace(report: ProviderPaceReport, header: string[]): string {
  const rows: (string | number)[][] = [
    [
      'type',
      'polling',
      'known p50',
      'p90',
      'max',
      'webhook p50',
      'p90',
      'max',
      'checks mean/max',
      'actions mean/max',
      'heartbeats',
      'events max',
      'final',
    ],
  ];
  for (const type of orderTypes) {
    for (const group of report.groups) {
      const f = group.perType[type];
      if (!f) continue;
      rows.push([
        type,
        group.label,
        fmt(f.known.p50),
        fmt(f.known.p90),
        fmt(f.known.max),
        fmt(f.webhook.p50),
        fmt(f.webhook.p90),
        fmt(f.webhook.max),
        `${fmt(f.checks.mean)} / ${f.checks.max}`,
        `${fmt(f.actions.mean, 2)} / ${f.actions.max}`,
        fmt(f.heartbeats.mean, 2),
        f.events.max,
        Object.entries(f.final)
          .map(([k, v]) => `${v} ${k}`)
          .join(', '),
      ]);
    }
    const [before, after] = report.groups.map((g) => g.perType[type]);
    if (before && after) {
      rows.push([
        '',
        'ratio (pace / before)',
        fmt(after.known.p50 / before.known.p50, 2),
        fmt(after.known.p90 / before.known.p90, 2),
        fmt(after.known.max / before.known.max, 2),
        fmt(after.webhook.p50 / before.webhook.p50, 2),
        fmt(after.webhook.p90 / before.webhook.p90, 2),
        fmt(after.webhook.max / before.webhook.max, 2),
        fmt(after.checks.mean / before.checks.mean, 2),
        fmt(after.actions.mean / before.actions.mean, 2),
        '',
        '',
        '',
      ]);
    }
  }
  const processingRows: (string | number)[][] = [['type', 'polling', 'p50', 'p90', 'max']];
  for (const type of orderTypes) {
    for (const group of report.groups) {
      const f = group.perType[type];
      if (f)
        processingRows.push([
          type,
          group.label,
          fmt(f.processing.p50),
          fmt(f.processing.p90),
          fmt(f.processing.max),
        ]);
    }
  }
  const after = report.groups.at(-1);
  const targets: string[] = [];
  for (const type of ['mobile_topup', 'gift_card'] as const) {
    const f = after?.perType[type];
    if (!f) continue;
    const ok = f.known.p90 <= 5 && f.actions.max <= 5 && f.overPace === 0;
    targets.push(
      `  ${ok ? 'PASS' : 'FAIL'}  ${type}: settled → known p90 ${fmt(f.known.p90)} s (≤ 5), actions max ${f.actions.max} (≤ 5), ${f.overPace} orders over the pace`,
    );
  }
  const internet = after?.perType.internet_topup;
  if (internet) {
    const ok = internet.known.p90 <= 5 && internet.overPace === 0;
    targets.push(
      `  ${ok ? 'PASS' : 'FAIL'}  internet_topup (HANDLING 3–45 s): settled → known p90 ${fmt(internet.known.p90)} s (≤ 5), ` +
        `actions mean ${fmt(internet.actions.mean, 2)} / max ${internet.actions.max} (a heartbeat past ~40 s), ${internet.overPace} orders over the pace`,
    );
  }
  return [
    ...header,
    '',
    `PROVIDER PACE  (sandbox at the provider's documented timings, seed ${report.seed}; ${report.ordersPerType} orders of each type per polling, ` +
      `submitted one every ${SUBMIT_SPACING_MS} ms; seconds)`,
    '  known: provider settled → the order final in the service; webhook: → its final event at the receiver',
    "  (half of each type's orders from a client with a webhook endpoint: their events are timed; actions, heartbeats",
    "  and events are the other half's, whose history has no announcement markers)",
    table(rows),
    '',
    'PROVIDER HANDLING → order.processing DELIVERED  (s; the event is announced when the polling returns)',
    table(processingRows),
    '',
    'TARGETS (provider pace)',
    ...targets,
  ].join('\n');
}
