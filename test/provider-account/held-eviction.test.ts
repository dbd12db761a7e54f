/**
 * Held orders read by query on a worker that keeps one workflow in its cache (docs/contributors.md
 * "Tests on a loaded machine"): every query and every workflow task of another order evicts the
 * run before it, so each is answered or run by replaying the order's whole history, while the held
 * orders' backstop (a send again every `reviewRecheckMs`, its local activity refused by the gate)
 * and the account workflow's rounds keep adding workflow tasks between the queries. Counts the
 * queries that failed with a non-determinism error and the workflow tasks that failed, over
 * HELD_EVICTION_RUNS runs (default 2; `HELD_EVICTION_RUNS=20 npm test -- held-eviction` is the
 * longer reproduction), each with its own held orders, then lets them go and checks they end
 * FULFILLED, sent once.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { OrderStatusAttribute, statusQuery } from '../../contract/order';
import {
  mobileRequest,
  newRef,
  scaledTimings,
  startOrder,
  startTestSandbox,
  testProvider,
  type TestSandbox,
} from '../helpers/orders';
import { startOrderTestWorkers, type OrderTestWorkers } from '../helpers/stack';
import { eventually } from '../helpers/webhooks';

const RUNS = Number(process.env.HELD_EVICTION_RUNS ?? 2);
const ORDERS_PER_RUN = 3;
/** Each order queried this many times per run, in turn with the others. */
const QUERY_ROUNDS = 15;
/** The held orders' backstop: a workflow task (and a local send the gate refuses) this often. */
const BACKSTOP_MS = 700;

const nondeterminism = /nondetermin|TMPRL1100/i;

describe('held orders queried in turn on a worker with a workflow cache of one', { timeout: 600_000 }, () => {
  let sandbox: TestSandbox;
  let provider: ReturnType<typeof testProvider>;
  let env: OrderTestWorkers<'held'>;

  before(async () => {
    sandbox = await startTestSandbox();
    provider = testProvider(sandbox.url);
    env = await startOrderTestWorkers(
      { held: provider.client },
      { account: { workers: ['held'], checkMs: 500 }, tuning: { maxCachedWorkflows: 1 } },
    );
  });
  after(async () => {
    await env?.stop();
    await provider?.close();
    await sandbox?.close();
  });

  /** Workflow tasks that failed, by cause, across the orders' histories. */
  async function failedTasks(handles: WorkflowHandle[]): Promise<string[]> {
    const { EventType, WorkflowTaskFailedCause } = temporal.api.enums.v1;
    const causes: string[] = [];
    for (const handle of handles) {
      for (const e of (await handle.fetchHistory()).events ?? []) {
        if (e.eventType !== EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED) continue;
        const cause = e.workflowTaskFailedEventAttributes?.cause ?? 0;
        causes.push(`${handle.workflowId}: ${WorkflowTaskFailedCause[cause] ?? cause}`);
      }
    }
    return causes;
  }

  it(`${RUNS} run(s) of ${ORDERS_PER_RUN} held orders, each queried ${QUERY_ROUNDS} times: no non-determinism in queries or workflow tasks`, async (t) => {
    let queries = 0;
    const failedQueries: string[] = [];
    const failedTaskCauses: string[] = [];
    for (let run = 1; run <= RUNS; run++) {
      await sandbox.settings({ balance: 0 });
      const requests = Array.from({ length: ORDERS_PER_RUN }, () => mobileRequest(newRef(`evict-${run}`)));
      const handles: WorkflowHandle[] = [];
      for (const request of requests) {
        handles.push(
          await startOrder(env.client, env.taskQueues.held, request, {
            timings: scaledTimings({ reviewRecheckMs: BACKSTOP_MS, maxHoldMs: 600_000 }),
          }),
        );
      }
      // HELD from the run's search attributes (visibility-free: describe), as the account reads it.
      for (const handle of handles) {
        await eventually(
          async () => (await handle.describe()).typedSearchAttributes.get(OrderStatusAttribute),
          (status) => status === 'HELD',
          `${handle.workflowId} held`,
          60_000,
        );
      }
      for (let round = 0; round < QUERY_ROUNDS; round++) {
        for (const handle of handles) {
          queries++;
          try {
            const view = await handle.query(statusQuery);
            assert.equal(view.status, 'HELD');
          } catch (err) {
            const message = err instanceof Error ? err.message : String(err);
            if (nondeterminism.test(message)) failedQueries.push(`${handle.workflowId}: ${message}`);
            else throw err;
          }
        }
        await sleep(50);
      }
      await sandbox.settings({ balance: 1_000_000 });
      for (const handle of handles) assert.equal((await handle.result()).status, 'FULFILLED');
      for (const request of requests) assert.equal((await sandbox.sendsOf(request.ref)).accepted, 1);
      failedTaskCauses.push(...(await failedTasks(handles)));
    }
    t.diagnostic(
      `${RUNS} runs, ${RUNS * ORDERS_PER_RUN} held orders, ${queries} queries: ` +
        `${failedQueries.length} failed with a non-determinism error; ` +
        `${failedTaskCauses.length} workflow tasks failed`,
    );
    for (const failure of [...failedQueries, ...failedTaskCauses]) t.diagnostic(failure);
    assert.deepEqual(failedQueries, []);
    assert.deepEqual(failedTaskCauses, []);
  });
});
