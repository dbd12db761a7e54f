/**
 * The baselines' worker, a child process of the bench: the baseline workflows on their own task
 * queue (BENCH_TASK_QUEUE), with the same WORKER_* tuning as the order worker, so the two compare.
 * Prints "bench baseline worker ready" once polling; SIGTERM drains and stops it.
 */
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { loadConfig } from '../../src/config';
import { nativeConnectionOptions } from '../../src/temporal/connection';
import { createWorkerLogger } from '../../src/worker/logger';
import { tuningFromConfig } from '../../src/worker/worker';
import { baselineActivities } from './baseline-activities';

async function main(): Promise<void> {
  const config = loadConfig();
  const taskQueue = process.env.BENCH_TASK_QUEUE;
  if (!taskQueue) throw new Error('BENCH_TASK_QUEUE is required');
  Runtime.install({ logger: createWorkerLogger(config.LOG_LEVEL), shutdownSignals: [] });
  const connection = await NativeConnection.connect(nativeConnectionOptions(config));
  try {
    const worker = await Worker.create({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue,
      // Pre-built like the order worker's (BENCH_BUNDLE_PATH), or bundled now.
      ...(process.env.BENCH_BUNDLE_PATH
        ? { workflowBundle: { codePath: process.env.BENCH_BUNDLE_PATH } }
        : { workflowsPath: require.resolve('./baseline-workflows') }),
      activities: baselineActivities,
      ...tuningFromConfig(config),
    });
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
      });
    }
    console.log('bench baseline worker ready');
    await worker.run();
  } finally {
    await connection.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
