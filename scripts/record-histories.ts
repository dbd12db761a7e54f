/**
 * `tsx scripts/record-histories.ts [--time-scale 1] [--only name,name]`: runs one order per outcome
 * against the sandbox (each with its own sandbox, provider client and worker, all at once), writes
 * each workflow history to test/fixtures/histories/<scenario>.json for the replay test, and prints
 * how many history events and provider calls each outcome took. `--only` records just the named
 * scenarios, so fixtures of older code stay as they were recorded.
 *
 * The webhook scenarios run a whole webhook stack (API, both workers, a receiver that fails the
 * first attempt of each event): the order's history with its announcements, and the order's
 * delivery workflow with a retry.
 *
 * The default time scale is 1, the spec's timings (PENDING 5 s, HANDLING until 20 s), so the
 * numbers are those of production polling; a run takes about half a minute.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { WorkflowHandle } from '@temporalio/client';
import type { FaultSpecInput } from '../src/sandbox/faults';
import { sandboxSpecialNumbers } from '../src/provider/wire';
import {
  defaultOrderTimings,
  resolveReviewSignal,
  type OrderRequest,
  type OrderTimings,
  type OrderView,
} from '../workflows/contract';
import {
  countingProvider,
  giftCardRequest,
  internetRequest,
  mobileRequest,
  newRef,
  PRODUCTION_KEY,
  startOrder,
  startOrderTestWorkers,
  startTestSandbox,
  testProvider,
  waitForView,
} from '../test/helpers/orders';
import { historiesDir, historyToJson } from '../test/helpers/histories';
import { clientsWith, eventually, startWebhookStack } from '../test/helpers/webhooks';
import { startReceiver } from '../src/webhooks/receiver';
import { endpointSecret } from '../src/webhooks/secrets';
import { orderWorkflowId } from '../workflows/contract';
import { webhookDeliveryWorkflowId } from '../workflows/webhook-contract';

interface Scenario {
  request: (ref: string) => OrderRequest;
  expected: OrderView['status'];
  apiKey?: string;
  fault?: FaultSpecInput;
  /** Spec timings (× the time scale) overridden, before scaling. */
  timings?: Partial<OrderTimings>;
  /** What an operator does once the order is in review. */
  operator?: (handle: WorkflowHandle) => Promise<void>;
}

const decide = (decision: 'FULFILLED' | 'REFUNDED' | 'RECHECK', note: string) => (handle: WorkflowHandle) =>
  handle.signal(resolveReviewSignal, { decision, operator: 'recorder', note });

const scenarios: Record<string, Scenario> = {
  'mobile-fulfilled': { request: (ref) => mobileRequest(ref), expected: 'FULFILLED' },
  'internet-fulfilled': { request: internetRequest, expected: 'FULFILLED' },
  'gift-card-fulfilled': { request: (ref) => giftCardRequest(ref), expected: 'FULFILLED' },
  'mobile-refunded': {
    request: (ref) => mobileRequest(ref, sandboxSpecialNumbers.refunded),
    expected: 'REFUNDED',
  },
  'mobile-refunded-plan-mismatch': {
    request: (ref) => mobileRequest(ref, sandboxSpecialNumbers.planMismatch),
    expected: 'REFUNDED',
  },
  'mobile-failed-refused': {
    request: (ref) => mobileRequest(ref),
    apiKey: PRODUCTION_KEY,
    expected: 'FAILED',
  },
  'mobile-send-lost-fulfilled': {
    request: (ref) => mobileRequest(ref),
    fault: { kind: 'drop_after_commit', routes: ['mobile.send'], times: 1 },
    expected: 'FULFILLED',
  },
  'mobile-review-recheck-then-fulfilled': {
    request: (ref) => mobileRequest(ref, sandboxSpecialNumbers.unknownError),
    operator: async (handle) => {
      await decide('RECHECK', 'asked the provider')(handle);
      await waitForView(handle, (v) => v.timeline.some((e) => e.event.includes('still in review')));
      await decide('FULFILLED', 'provider confirmed by phone')(handle);
    },
    expected: 'FULFILLED',
  },
  'gift-card-review-refunded': {
    request: (ref) => giftCardRequest(ref),
    fault: { kind: 'drop_after_commit', routes: ['giftcards.placeOrder'], times: 1 },
    operator: decide('REFUNDED', 'no cards issued; refunded'),
    expected: 'REFUNDED',
  },
  'mobile-stuck-resolved-by-recheck': {
    request: (ref) => mobileRequest(ref),
    // The deadline falls inside HANDLING; the review recheck finds the top-up FULFILLED.
    timings: { deadlineMs: 10_000, reviewRecheckMs: 15_000 },
    expected: 'FULFILLED',
  },
};

function scaled(timeScale: number, overrides: Partial<OrderTimings> = {}): OrderTimings {
  const timings = { ...defaultOrderTimings.mobile_topup, ...overrides };
  const scale = (ms: number) => Math.max(1, Math.round(ms * timeScale));
  return {
    firstCheckMs: scale(timings.firstCheckMs),
    handlingCheckMs: scale(timings.handlingCheckMs),
    maxIntervalMs: scale(timings.maxIntervalMs),
    deadlineMs: scale(timings.deadlineMs),
    reviewRecheckMs: scale(timings.reviewRecheckMs),
    activityTimeoutMs: 10_000,
  };
}

const webhookScenarios = [
  'mobile-fulfilled-webhooks',
  'mobile-review-decided-webhooks',
  'webhook-delivery-retried',
] as const;

/** The webhook scenarios: a client with one endpoint whose receiver fails each event's first attempt. */
async function recordWebhookScenarios(
  timeScale: number,
  wanted: (name: string) => boolean,
): Promise<string[]> {
  if (!webhookScenarios.some(wanted)) return [];
  const signingKey = randomBytes(32);
  const seen = new Set<string>();
  const receiver = await startReceiver({
    secrets: [endpointSecret(signingKey, 'recorder', 'main', 1)],
    answer: (d) => {
      const first = !seen.has(d.id);
      seen.add(d.id);
      return { status: first ? 500 : 204 };
    },
  });
  const stack = await startWebhookStack({
    clients: clientsWith({
      recorder: { key: 'recorder-key', webhooks: [{ id: 'main', url: receiver.url }] },
    }),
    signingKey,
    sandboxTimeScale: timeScale,
    timingsFor: () => scaled(timeScale),
    policy: { idleCloseMs: 2_000 },
  });
  const rows: string[] = [];
  const write = async (name: string, workflowId: string) => {
    const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
    writeFileSync(join(historiesDir, `${name}.json`), historyToJson(history));
    rows.push(`| ${name} | ${history.events?.length ?? 0} events |`);
  };
  const submit = async (request: OrderRequest) => {
    const res = await stack.api.request('POST', '/v1/orders', { body: request, apiKey: 'recorder-key' });
    if (res.status !== 201) throw new Error(`submitting ${request.ref}: ${res.status} ${res.text}`);
    return orderWorkflowId(request.ref, 'recorder');
  };
  const closed = (workflowId: string) =>
    eventually(
      async () => (await stack.client.workflow.getHandle(workflowId).describe()).status.name,
      (status) => status === 'COMPLETED',
      `${workflowId} closed`,
      180_000,
    );
  try {
    const fulfilled = await submit(mobileRequest(newRef('wh-fulfilled')));
    const reviewRef = newRef('wh-review');
    const reviewed = await submit(mobileRequest(reviewRef, sandboxSpecialNumbers.unknownError));
    await eventually(
      async () => (await stack.client.workflow.getHandle(reviewed).query<OrderView>('status')).status,
      (status) => status === 'NEEDS_REVIEW',
      'in review',
      120_000,
    );
    const decided = await stack.api.request('POST', `/v1/orders/${reviewRef}/review`, {
      body: { decision: 'REFUNDED', note: 'no credit seen; refunded' },
      apiKey: 'recorder-key',
    });
    if (decided.status !== 202) throw new Error(`review: ${decided.status} ${decided.text}`);
    await Promise.all([closed(fulfilled), closed(reviewed), closed(webhookDeliveryWorkflowId(fulfilled))]);
    if (wanted('mobile-fulfilled-webhooks')) await write('mobile-fulfilled-webhooks', fulfilled);
    if (wanted('mobile-review-decided-webhooks')) await write('mobile-review-decided-webhooks', reviewed);
    if (wanted('webhook-delivery-retried'))
      await write('webhook-delivery-retried', webhookDeliveryWorkflowId(fulfilled));
  } finally {
    await stack.stop();
    await receiver.close();
  }
  return rows;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { 'time-scale': { type: 'string', default: '1' }, only: { type: 'string' } },
  });
  const timeScale = Number(values['time-scale']);
  const only = values.only?.split(',').map((name) => name.trim());
  const wanted = (name: string) => !only || only.includes(name);
  mkdirSync(historiesDir, { recursive: true });
  const webhookRows = await recordWebhookScenarios(timeScale, wanted);
  for (const row of webhookRows) console.log(row);
  const names = Object.keys(scenarios).filter(wanted);
  if (names.length === 0) return;
  const setups = await Promise.all(
    names.map(async (name) => {
      const scenario = scenarios[name]!;
      const sandbox = await startTestSandbox(timeScale);
      if (scenario.fault) await sandbox.addFault(scenario.fault);
      const provider = testProvider(sandbox.url, scenario.apiKey);
      return { name, scenario, sandbox, provider, counted: countingProvider(provider.client) };
    }),
  );
  const env = await startOrderTestWorkers(
    Object.fromEntries(setups.map((s) => [s.name, s.counted.provider])),
  );
  try {
    mkdirSync(historiesDir, { recursive: true });
    // allSettled: one failed scenario must not close the connection under the others.
    const settled = await Promise.allSettled(
      setups.map(async ({ name, scenario, counted }) => {
        const handle = await startOrder(env.client, env.taskQueues[name]!, scenario.request(newRef(name)), {
          timings: scaled(timeScale, scenario.timings),
        });
        if (scenario.operator) {
          await waitForView(handle, (v) => v.status === 'NEEDS_REVIEW', 120_000);
          await scenario.operator(handle);
        }
        const view = await handle.result();
        if (view.status !== scenario.expected)
          throw new Error(`${name}: ${view.status}, expected ${scenario.expected}`);
        const history = await handle.fetchHistory();
        writeFileSync(join(historiesDir, `${name}.json`), historyToJson(history));
        return { name, status: view.status, events: history.events?.length ?? 0, calls: counted.total() };
      }),
    );
    const failures = settled.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    if (failures.length > 0) throw new AggregateError(failures, 'some scenarios failed');
    const rows = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    console.log(`time scale ${timeScale}; histories written to ${historiesDir}\n`);
    console.log('| scenario | final status | history events | provider calls |');
    console.log('|---|---|---|---|');
    for (const r of rows) console.log(`| ${r.name} | ${r.status} | ${r.events} | ${r.calls} |`);
  } finally {
    await env.stop();
    await Promise.all(setups.map(async (s) => (await s.provider.close(), await s.sandbox.close())));
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
