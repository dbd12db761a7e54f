/**
 * The fast tier's Temporal: the SDK's time-skipping test environment on the test server that
 * `npm run setup` installs from Maven Central (src/temporal/test-server-install.ts), with workers
 * running the real workflows and activities against a provider over real HTTP. Timers skip ahead
 * whenever the workflows wait, so the lifecycle's real timings (30-minute deadlines and rechecks)
 * take seconds.
 */
import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Client } from '@temporalio/client';
import { createActivities } from '../../src/worker/activities';
import { type OrderProvider } from '../../src/orders/order.activities';
import { indexedValueTypes } from '../../src/temporal/setup';
import { ensureTestServer } from '../../src/temporal/test-server-install';
import { createOrderWorker } from '../../src/worker/worker';
import { searchAttributeDefinitions } from '../../contract/order';
import { bundledWorkflows, installTestRuntime } from './orders';

export interface TimeSkippingWorkers<K extends string> {
  env: TestWorkflowEnvironment;
  client: Client;
  taskQueues: Record<K, string>;
  stop(): Promise<void>;
}

/** A time-skipping environment and one worker per named provider, each on a task queue of its own. */
export async function startTimeSkippingWorkers<K extends string>(
  providers: Record<K, OrderProvider>,
): Promise<TimeSkippingWorkers<K>> {
  const path = ensureTestServer();
  installTestRuntime();
  const [env, workflowCode] = await Promise.all([
    TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path } } }),
    bundledWorkflows(),
  ]);
  // The test server knows no custom search attributes until told, as a fresh cluster.
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(
      Object.entries(searchAttributeDefinitions).map(([name, type]) => [name, indexedValueTypes[type]]),
    ),
  });
  const workers = await Promise.all(
    (Object.entries(providers) as [K, OrderProvider][]).map(async ([name, provider]) => {
      const taskQueue = `orders-fast-${name}-${randomUUID()}`;
      const worker = await createOrderWorker({
        connection: env.nativeConnection,
        namespace: env.namespace ?? 'default',
        taskQueue,
        // A polling attempt that waits for its checks itself would wait in real time here.
        activities: createActivities({ provider, holdPolls: false }),
        workflowCode,
      });
      return { name, taskQueue, worker, running: worker.run() };
    }),
  );
  return {
    env,
    client: env.client,
    taskQueues: Object.fromEntries(workers.map((w) => [w.name, w.taskQueue])) as Record<K, string>,
    async stop() {
      for (const { worker } of workers) worker.shutdown();
      await Promise.all(workers.map((w) => w.running));
      await env.teardown();
    },
  };
}
