/**
 * `npm run bench -- --part readers` (issue 32, part 4: reads that scale): back offices reading
 * while operators work. On a stack with `--readers-orders` orders of two clients (a tenth of the
 * mobile top-ups in NEEDS_REVIEW), 20 readers — 10 per client, or two operators for the review
 * queue — read one route as fast as they are answered for `--readers-seconds`, route after route:
 *
 * - list: `GET /v1/orders?pageSize=50`;
 * - statements: `GET /v1/statements` for today (UTC);
 * - export: `GET /v1/orders/export` for today, NDJSON, each body read whole;
 * - review queue: `GET /v1/orders?status=NEEDS_REVIEW&pageSize=50` by the two operators.
 *
 * For each: requests per second, latency p50 / p99, 5xx and other failures. Meanwhile, and alone
 * before the storms, two probes time what else lives on visibility's budget: the operators' review
 * queue as Temporal UI asks it (a list of 20 and a count of `OrderStatus="NEEDS_REVIEW"`, every
 * 500 ms) and the provider account's round listing (src/provider-account/account.activities.ts `listHeld`, the same
 * code, every second), each through a Temporal client of its own with the SDK's default retries
 * (a rate-limited call is retried, so it shows as latency). From the dev server's own metrics:
 * visibility calls per second and those refused for the namespace's rate limit.
 *
 * Each variant runs on a stack of its own (bench.ts): `before` is main's code path (no read cache,
 * the dev server's visibility limit as the CLI sets it), `after` this one's; `limits` and `cache`
 * each change only one of the two.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import pLimit from 'p-limit';
import { Pool } from 'undici';
import { listHeld } from '../../src/provider-account/account.activities';
import { OrderStatusAttribute } from '../../contract/order';
import type { OrderRequest } from '../../contract/schemas';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { benchOrder, refPrefix } from './orders';
import type { RunContext } from './run-normal';
import { fmt, nowMs, summarize, type Summary } from './stats';
import { table } from './report';

export const READER_ROUTES = ['list', 'statements', 'export', 'review queue'] as const;
export type ReaderRoute = (typeof READER_ROUTES)[number];

export interface ReadersVariant {
  name: string;
  /** What the variant is, in a few words, for the report. */
  describes: string;
  serverConfig: Record<string, string | number | boolean>;
  apiEnv: Record<string, string>;
}

/** The dev server's visibility limit as the CLI sets it (100 per frontend), none of ours. */
const CLI_VISIBILITY_LIMITS = {
  'frontend.namespaceRPS.visibility': 100,
  'frontend.globalNamespaceRPS.visibility': 0,
  'frontend.namespaceBurstRatio.visibility': 1,
};

export const READERS_VARIANTS: Record<string, ReadersVariant> = {
  before: {
    name: 'before',
    describes: "main's code path: no read cache, the dev server's visibility limit as the CLI sets it",
    serverConfig: CLI_VISIBILITY_LIMITS,
    apiEnv: { API_READ_CACHE_MS: '0' },
  },
  limits: {
    name: 'limits',
    describes: 'the sized visibility limits only, no read cache',
    serverConfig: {},
    apiEnv: { API_READ_CACHE_MS: '0' },
  },
  cache: {
    name: 'cache',
    describes: "the read cache only, the CLI's visibility limit",
    serverConfig: CLI_VISIBILITY_LIMITS,
    apiEnv: {},
  },
  after: {
    name: 'after',
    describes: 'the read cache (API_READ_CACHE_MS default) and the sized visibility limits',
    serverConfig: {},
    apiEnv: {},
  },
};

export interface ProbeFigures {
  probes: number;
  failed: number;
  latencyMs: Summary;
}

export interface VisibilityFigures {
  /** Visibility calls the server answered (or refused) per second. */
  callsPerSecond: number;
  /** Of those, refused for the namespace's rate limit, per second. */
  refusedPerSecond: number;
}

export interface StormFigures {
  route: ReaderRoute;
  readers: number;
  requests: number;
  perSecond: number;
  latencyMs: Summary;
  status5xx: number;
  /** Other answers than 200 (429, 4xx) and transport errors, by kind. */
  otherFailures: Record<string, number>;
  /** Rows per answer (orders listed, statement lines, export rows), from the first answer. */
  rowsPerAnswer: number;
  operatorQuery: ProbeFigures;
  accountRound: ProbeFigures;
  visibility?: VisibilityFigures;
}

export interface ReadersReport {
  kind: 'readers';
  variant: ReadersVariant;
  orders: number;
  inReview: number;
  seconds: number;
  serverConfig: Record<string, string | number | boolean>;
  idle: { operatorQuery: ProbeFigures; accountRound: ProbeFigures; visibility?: VisibilityFigures };
  storms: StormFigures[];
}

const READERS = 20;
const OPERATOR_PROBE_MS = 500;
const ACCOUNT_PROBE_MS = 1_000;
/** Temporal's visibility APIs (service/frontend/configs/quotas.go VisibilityAPIToPriority, the ones we call). */
const VISIBILITY_OPERATIONS = [
  'ListWorkflowExecutions',
  'CountWorkflowExecutions',
  'ScanWorkflowExecutions',
  'ListOpenWorkflowExecutions',
  'ListClosedWorkflowExecutions',
  'ListSchedules',
  'ListWorkerDeployments',
];

export async function runReaders(ctx: RunContext, variant: ReadersVariant): Promise<ReadersReport> {
  const { stack, options, log, client } = ctx;
  const another = stack.clients?.another;
  const operators = stack.clients?.operators;
  if (!another || !operators || !stack.taskQueue) {
    throw new Error('--part readers needs its own stack (two clients and two operators)');
  }
  const orders = options.readersOrders;
  const seconds = options.readersSeconds;

  // -- seed: half the orders each client's, a tenth of the mobile top-ups to review --
  log(`readers (${variant.name}): seeding ${orders} orders of two clients…`);
  const keys = [stack.apiKey, another.apiKey];
  const pools = keys.map(() => new Pool(stack.apiUrl, { connections: 4 }));
  let inReview = 0;
  const requests: { key: number; order: OrderRequest }[] = [];
  for (let i = 0; i < orders; i++) {
    const type = options.mix[i % options.mix.length]!;
    const order = benchOrder(type, `${refPrefix(ctx.runId, 'readers')}${i}`, i);
    if (order.type === 'mobile_topup' && Math.floor(i / options.mix.length) % 10 === 0) {
      order.msisdn = sandboxSpecialNumbers.unknownError;
      inReview++;
    }
    requests.push({ key: i % 2, order });
  }
  const eight = pLimit(8);
  await Promise.all(
    requests.map(({ key, order }) =>
      eight(async () => {
        const response = await pools[key]!.request({
          method: 'POST',
          path: '/v1/orders',
          headers: { authorization: `Bearer ${keys[key]}`, 'content-type': 'application/json' },
          body: JSON.stringify(order),
        });
        await response.body.dump();
        if (response.statusCode !== 201)
          throw new Error(`seeding: POST /v1/orders answered ${response.statusCode}`);
      }),
    ),
  );
  await Promise.all(pools.map((pool) => pool.close()));
  // Settled: every order final or in review, as visibility shows it (what the reads see).
  const queue = `TaskQueue = '${stack.taskQueue}'`;
  const deadline = Date.now() + options.waitTimeoutS * 1_000;
  for (;;) {
    const { count: open } = await client.workflow.count(
      `${queue} AND ExecutionStatus = 'Running' AND ${OrderStatusAttribute.name} != 'NEEDS_REVIEW'`,
    );
    const { count: review } = await client.workflow.count(
      `${queue} AND ExecutionStatus = 'Running' AND ${OrderStatusAttribute.name} = 'NEEDS_REVIEW'`,
    );
    if (open === 0 && review === inReview) break;
    if (Date.now() > deadline) throw new Error(`readers: ${open} orders still open, ${review} in review`);
    await sleep(500);
  }
  await sleep(2_000);

  // -- the probes' own clients: an operator's Temporal UI and a worker's account round --
  const probeConnection = await Connection.connect(stack.connectionOptions);
  const probeClient = new Client({ connection: probeConnection, namespace: stack.namespace });
  const taskQueue = stack.taskQueue;
  const operatorQuery = async () => {
    const query = `${OrderStatusAttribute.name} = 'NEEDS_REVIEW'`;
    await Promise.all([
      probeClient.workflowService.listWorkflowExecutions({ namespace: stack.namespace, query, pageSize: 20 }),
      probeClient.workflowService.countWorkflowExecutions({ namespace: stack.namespace, query }),
    ]);
  };
  const accountRound = () => listHeld(probeClient, taskQueue, () => undefined);

  try {
    log(`readers (${variant.name}): the probes alone for ${Math.min(seconds, 10)} s…`);
    const idleScrape = await scrape(stack.temporalMetricsUrl);
    const idleStart = nowMs();
    const [idleOperator, idleAccount] = await Promise.all([
      probeLoop(operatorQuery, OPERATOR_PROBE_MS, idleStart + Math.min(seconds, 10) * 1_000),
      probeLoop(accountRound, ACCOUNT_PROBE_MS, idleStart + Math.min(seconds, 10) * 1_000),
    ]);
    const idleVisibility = rates(
      idleScrape,
      await scrape(stack.temporalMetricsUrl),
      (nowMs() - idleStart) / 1_000,
    );

    const today = new Date();
    today.setUTCHours(0, 0, 0, 0);
    const range = `from=${today.toISOString()}&to=${new Date(today.getTime() + 86_400_000 - 1).toISOString()}`;
    const storms: StormFigures[] = [];
    for (const route of READER_ROUTES) {
      const path = {
        list: '/v1/orders?pageSize=50',
        statements: `/v1/statements?${range}`,
        export: `/v1/orders/export?${range}`,
        'review queue': `/v1/orders?status=NEEDS_REVIEW&pageSize=50`,
      }[route];
      const readerKeys = route === 'review queue' ? operators.map((o) => o.apiKey) : keys;
      log(`readers (${variant.name}): ${READERS} readers on ${route} for ${seconds} s…`);
      const before = await scrape(stack.temporalMetricsUrl);
      const start = nowMs();
      const end = start + seconds * 1_000;
      const [storm, operator, account] = await Promise.all([
        storm20(stack.apiUrl, readerKeys, path, route, end),
        probeLoop(operatorQuery, OPERATOR_PROBE_MS, end),
        probeLoop(accountRound, ACCOUNT_PROBE_MS, end),
      ]);
      const visibility = rates(before, await scrape(stack.temporalMetricsUrl), (nowMs() - start) / 1_000);
      storms.push({
        route,
        ...storm,
        operatorQuery: operator,
        accountRound: account,
        ...(visibility && { visibility }),
      });
      stack.assertAlive();
    }
    return {
      kind: 'readers',
      variant,
      orders,
      inReview,
      seconds,
      serverConfig: options.serverConfig,
      idle: {
        operatorQuery: idleOperator,
        accountRound: idleAccount,
        ...(idleVisibility && { visibility: idleVisibility }),
      },
      storms,
    };
  } finally {
    await probeConnection.close();
  }
}

/** Half the readers with each key, each reading `path` again as soon as answered, until `end`. */
async function storm20(
  apiUrl: string,
  keys: string[],
  path: string,
  route: ReaderRoute,
  end: number,
): Promise<Omit<StormFigures, 'route' | 'operatorQuery' | 'accountRound' | 'visibility'>> {
  const pool = new Pool(apiUrl, { connections: READERS, headersTimeout: 60_000, bodyTimeout: 60_000 });
  const latencies: number[] = [];
  const otherFailures: Record<string, number> = {};
  let status5xx = 0;
  let rowsPerAnswer = NaN;
  const start = nowMs();
  const accept = route === 'export' ? 'application/x-ndjson' : 'application/json';
  const reader = async (r: number) => {
    const headers = { authorization: `Bearer ${keys[r % keys.length]}`, accept };
    while (nowMs() < end) {
      const t0 = nowMs();
      try {
        const response = await pool.request({ method: 'GET', path, headers });
        const text = await response.body.text();
        const ms = nowMs() - t0;
        if (response.statusCode === 200) {
          latencies.push(ms);
          if (Number.isNaN(rowsPerAnswer)) rowsPerAnswer = rowsOf(route, text);
        } else if (response.statusCode >= 500) status5xx++;
        else
          otherFailures[`HTTP ${response.statusCode}`] =
            (otherFailures[`HTTP ${response.statusCode}`] ?? 0) + 1;
      } catch (err) {
        const kind = err instanceof Error ? err.name : 'error';
        otherFailures[kind] = (otherFailures[kind] ?? 0) + 1;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: READERS }, (_, r) => reader(r)));
  } finally {
    await pool.close();
  }
  const durationS = (nowMs() - start) / 1_000;
  const failures = status5xx + Object.values(otherFailures).reduce((a, b) => a + b, 0);
  return {
    readers: READERS,
    requests: latencies.length + failures,
    perSecond: latencies.length / durationS,
    latencyMs: summarize(latencies),
    status5xx,
    otherFailures,
    rowsPerAnswer,
  };
}

function rowsOf(route: ReaderRoute, text: string): number {
  if (route === 'export') return text.split('\n').filter(Boolean).length;
  const body = JSON.parse(text) as { orders?: unknown[]; days?: unknown[]; open?: unknown[] };
  return route === 'statements'
    ? (body.days?.length ?? 0) + (body.open?.length ?? 0)
    : (body.orders?.length ?? 0);
}

/** `probe` every `everyMs` until `end` (one at a time: a slow one delays the next), timed. */
async function probeLoop(probe: () => Promise<unknown>, everyMs: number, end: number): Promise<ProbeFigures> {
  const latencies: number[] = [];
  let failed = 0;
  while (nowMs() < end) {
    const t0 = nowMs();
    try {
      await probe();
      latencies.push(nowMs() - t0);
    } catch {
      failed++;
    }
    const wait = t0 + everyMs - nowMs();
    if (wait > 0) await sleep(Math.min(wait, Math.max(0, end - nowMs())));
  }
  return { probes: latencies.length + failed, failed, latencyMs: summarize(latencies) };
}

interface Scrape {
  requests: number;
  refused: number;
}

/** The server's visibility calls and rate-limit refusals so far (its Prometheus counters). */
async function scrape(url: string | undefined): Promise<Scrape | undefined> {
  if (!url) return undefined;
  try {
    const text = await (await fetch(url)).text();
    let requests = 0;
    let refused = 0;
    for (const line of text.split('\n')) {
      const match = /^(service_requests|service_errors_resource_exhausted)\{([^}]*)\} ([0-9.e+]+)$/.exec(
        line,
      );
      if (!match) continue;
      const operation = /operation="([^"]+)"/.exec(match[2]!)?.[1];
      if (
        !operation ||
        !VISIBILITY_OPERATIONS.includes(operation) ||
        !/service_name="frontend"/.test(match[2]!)
      )
        continue;
      if (match[1] === 'service_requests') requests += Number(match[3]);
      else refused += Number(match[3]);
    }
    return { requests, refused };
  } catch {
    return undefined;
  }
}

function rates(a: Scrape | undefined, b: Scrape | undefined, seconds: number): VisibilityFigures | undefined {
  if (!a || !b) return undefined;
  return {
    callsPerSecond: (b.requests - a.requests) / seconds,
    refusedPerSecond: (b.refused - a.refused) / seconds,
  };
}

const ms = (value: number) => fmt(value, 0);
const probe = (p: ProbeFigures) =>
  `${ms(p.latencyMs.p50)} / ${ms(p.latencyMs.p99)} / ${ms(p.latencyMs.max)}${p.failed ? ` (${p.failed} failed)` : ''}`;

/** The figures as the terminal shows them: one table per variant, then the targets. */
export function formatReaders(reports: ReadersReport[], header: string[]): string {
  const lines = [...header];
  for (const report of reports) {
    lines.push(
      '',
      `${report.variant.name}: ${report.variant.describes}`,
      `  ${report.orders} orders of two clients (${report.inReview} in review), ${READERS} readers per route for ${report.seconds} s` +
        (Object.keys(report.serverConfig).length
          ? `; dev server: ${Object.entries(report.serverConfig)
              .map(([k, v]) => `${k}=${String(v)}`)
              .join(', ')}`
          : '; dev server: the project’s visibility limits'),
    );
    const rows = report.storms.map((s) => [
      s.route,
      fmt(s.perSecond, 0),
      ms(s.latencyMs.p50),
      ms(s.latencyMs.p99),
      String(s.status5xx),
      Object.entries(s.otherFailures)
        .map(([k, v]) => `${k} ×${v}`)
        .join(', ') || '0',
      fmt(s.rowsPerAnswer, 0),
      s.visibility
        ? `${fmt(s.visibility.callsPerSecond, 0)} / ${fmt(s.visibility.refusedPerSecond, 0)}`
        : 'n/a',
      probe(s.operatorQuery),
      probe(s.accountRound),
    ]);
    rows.push([
      '(no readers)',
      '',
      '',
      '',
      '',
      '',
      '',
      report.idle.visibility
        ? `${fmt(report.idle.visibility.callsPerSecond, 0)} / ${fmt(report.idle.visibility.refusedPerSecond, 0)}`
        : 'n/a',
      probe(report.idle.operatorQuery),
      probe(report.idle.accountRound),
    ]);
    lines.push(
      table([
        [
          'route',
          'req/s',
          'p50 ms',
          'p99 ms',
          '5xx',
          'other failures',
          'rows',
          'visibility calls/s / refused/s',
          'operator query ms p50/p99/max',
          'account listing ms p50/p99/max',
        ],
        ...rows,
      ]),
    );
    const failed = report.storms
      .filter((s) => s.perSecond < 100 || s.latencyMs.p99 > 500 || s.status5xx > 0)
      .map((s) => s.route);
    lines.push(
      `  targets (≥ 100 req/s, p99 ≤ 500 ms, no 5xx): ${failed.length === 0 ? 'PASS' : `FAIL (${failed.join(', ')})`}`,
    );
  }
  return lines.join('\n');
}
