/**
 * The delivery workflow's handling of a deferred attempt (patch webhook-deferred-attempt), on the dev
 * server with a scripted delivery activity: it waits the turn the activity gave (`retryAfterMs`),
 * counts no attempt, shows no error and no back-off while deferred, and a redelivery signalled
 * while the event waits its turn starts the event's counts again.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import type { DeliveryActivities } from '../../src/webhooks/webhook.activities';
import { createWebhookWorker } from '../../src/worker/worker';
import {
  redeliverSignal,
  webhookDeliveriesQuery,
  webhookDeliveryWorkflowType,
  webhookEventSignal,
  type DeliveryOutcome,
  type WebhookDeliveryInput,
  type WebhookDeliveryPolicy,
  type WebhookDeliveryState,
  type WebhookEvent,
} from '../../contract/webhooks';
import { installTestRuntime } from '../helpers/orders';
import { useTemporal, workflowCodeOptions, type TestTemporal } from '../helpers/temporal';
import { eventually, TEST_WEBHOOK_POLICY, fabricatedEvent } from '../helpers/webhooks';
import { makeTestVersionCurrent, versionedTestCode } from '../helpers/versioning';

const TURN_MS = 4_000;

function event(orderWorkflowId: string): WebhookEvent {
  return fabricatedEvent({
    id: `evt_${randomUUID()}`,
    orderWorkflowId,
    client: 'acme',
    targets: ['main'],
    type: 'order.submitted',
    ref: 'R1',
    status: 'SUBMITTED',
  });
}

describe('a deferred attempt in the delivery workflow', { timeout: 120_000 }, () => {
  let temporal: TestTemporal;
  let native: NativeConnection;
  let connection: Connection;
  let client: Client;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = `deferred-${randomUUID()}`;
  /** Per workflow: the answers its attempts get, in turn, and when each attempt came. */
  const scripts = new Map<string, { answers: DeliveryOutcome[]; calls: number[] }>();

  before(async () => {
    installTestRuntime();
    temporal = await useTemporal();
    native = await NativeConnection.connect({ address: temporal.address });
    connection = await Connection.connect({ address: temporal.address });
    client = new Client({ connection, namespace: temporal.namespace });
    const activities: DeliveryActivities = {
      deliverWebhook: async ({ event: e }) => {
        const script = scripts.get(e.orderWorkflowId)!;
        script.calls.push(Date.now());
        return script.answers.shift() ?? { outcome: 'delivered', status: 204 };
      },
    };
    const { workflowCode, deployment } = await versionedTestCode('deferred-workflow', workflowCodeOptions());
    worker = await createWebhookWorker({
      connection: native,
      namespace: temporal.namespace,
      taskQueue,
      activities,
      workflowCode,
      maxConcurrentDeliveries: 4,
      deployment,
    });
    running = worker.run();
    await makeTestVersionCurrent(connection, temporal.namespace, deployment, [taskQueue]);
  });
  after(async () => {
    worker?.shutdown();
    await running;
    await Promise.all([native?.close(), connection?.close()]);
    await temporal?.stop();
  });

  const deferred: DeliveryOutcome = { outcome: 'deferred', reason: 'at its cap', retryAfterMs: TURN_MS };

  async function start(
    orderWorkflowId: string,
    answers: DeliveryOutcome[],
    overrides: Partial<WebhookDeliveryPolicy> = {},
  ) {
    scripts.set(orderWorkflowId, { answers, calls: [] });
    // Back-offs of the test policy, but a turn may be longer than its longest (1 s).
    const policy = { ...TEST_WEBHOOK_POLICY, retryMaxIntervalMs: 120_000, ...overrides };
    const input: WebhookDeliveryInput = { orderWorkflowId, client: 'acme', policy };
    const e = event(orderWorkflowId);
    const handle = await client.workflow.signalWithStart(webhookDeliveryWorkflowType, {
      workflowId: `webhooks:${orderWorkflowId}`,
      taskQueue,
      args: [input],
      signal: webhookEventSignal,
      signalArgs: [e],
    });
    return { handle, e, script: scripts.get(orderWorkflowId)! };
  }

  it('waits the turn it was given, counts no attempt, shows no error or back-off meanwhile', async () => {
    const { handle, script } = await start(`order:acme:D-${randomUUID().slice(0, 8)}`, [deferred, deferred]);
    const waiting = await eventually(
      () => handle.query(webhookDeliveriesQuery),
      (s) => (s.events[0]?.deliveries[0]?.deferrals ?? 0) >= 1,
      'a deferral recorded',
    );
    const d = waiting.events[0]!.deliveries[0]!;
    assert.equal(d.state, 'pending');
    assert.equal(d.attempts, 0, JSON.stringify(d));
    assert.equal(d.lastError, undefined);
    assert.deepEqual(waiting.backoffMs, {});
    const state = await eventually(
      () => handle.query(webhookDeliveriesQuery),
      (s) => s.events[0]?.deliveries[0]?.state === 'delivered',
      'delivered',
    );
    const done = state.events[0]!.deliveries[0]!;
    assert.equal(done.attempts, 1, JSON.stringify(done));
    assert.equal(done.deferrals, 2);
    assert.equal(done.lastError, undefined);
    assert.equal(script.calls.length, 3);
    // The dev server fires timers on a ~1 s tick: each turn waited, give or take that.
    for (let i = 1; i < script.calls.length; i++)
      assert.ok(script.calls[i]! - script.calls[i - 1]! >= TURN_MS - 1_100, JSON.stringify(script.calls));
  });

  it('a redelivery while the event waits its turn starts its counts again; the event is then delivered once', async () => {
    const { handle, e, script } = await start(`order:acme:R-${randomUUID().slice(0, 8)}`, [
      { outcome: 'failed', error: 'HTTP 500', status: 500 },
      { ...deferred, retryAfterMs: 60_000 },
    ]);
    await eventually(
      () => handle.query(webhookDeliveriesQuery),
      (s) => (s.events[0]?.deliveries[0]?.deferrals ?? 0) >= 1,
      'failed once, then deferred for a minute',
      30_000,
    );
    await handle.signal(redeliverSignal, { eventId: e.id });
    const state: WebhookDeliveryState = await eventually(
      () => handle.query(webhookDeliveriesQuery),
      (s) => s.events[0]?.deliveries[0]?.state === 'delivered',
      'delivered after the redelivery, not after the minute',
      20_000,
    );
    const d = state.events[0]!.deliveries[0]!;
    assert.equal(d.redeliveries, 1);
    assert.equal(d.attempts, 1, JSON.stringify(d));
    assert.equal(d.deferrals, undefined, JSON.stringify(d));
    assert.equal(script.calls.length, 3);
  });

  it('the retry window ends while a failed event waits its turn: it says so and keeps why its last attempt failed', async () => {
    const { handle, script } = await start(
      `order:acme:W-${randomUUID().slice(0, 8)}`,
      [
        { outcome: 'failed', error: 'HTTP 503', status: 503 },
        ...Array(20).fill({ ...deferred, retryAfterMs: 500 }),
      ],
      { retryForMs: 3_000 },
    );
    const state = await eventually(
      () => handle.query(webhookDeliveriesQuery),
      (s) => s.events[0]?.deliveries[0]?.state === 'failed',
      'failed once its window ended while deferred',
    );
    const d = state.events[0]!.deliveries[0]!;
    assert.equal(d.attempts, 1, JSON.stringify(d));
    assert.ok((d.deferrals ?? 0) >= 1, JSON.stringify(d));
    assert.equal(
      d.lastError,
      'the retry window ended before its next attempt could be made (at its cap); the last attempt: HTTP 503',
    );
    assert.equal(d.lastStatus, 503);
    assert.equal(d.nextAttemptAt, undefined);
    assert.equal(script.calls.filter((_, i) => i > 0).length, d.deferrals);
  });
});
