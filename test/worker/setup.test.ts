/**
 * A worker starts only on a Temporal that can take orders: at start it runs the setup (namespace
 * with its retention, the search attributes) and polls only once that passed, or stops with the
 * reason. Runs `npm run worker`'s entry point as a child process against a real Temporal server
 * and the sandbox.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { startSandbox } from '../../src/sandbox/server';
import { ensureTemporalSetup } from '../../src/temporal/setup';
import { searchAttributeDefinitions } from '../../contract/order';
import { useTemporal, type TestTemporal } from '../helpers/temporal';

const root = resolve(__dirname, '..', '..');
const SANDBOX_KEY = 'sandbox-key-for-worker-setup-test';

describe('the worker sets Temporal up at start, or does not start', () => {
  let temporal: TestTemporal;
  let connection: Connection;
  let sandbox: Awaited<ReturnType<typeof startSandbox>>;

  before(async () => {
    [temporal, sandbox] = await Promise.all([
      useTemporal(),
      startSandbox({ port: 0, sandboxKey: SANDBOX_KEY, productionKey: 'p-key', disabledKey: 'd-key' }),
    ]);
    connection = await Connection.connect({ address: temporal.address });
  });
  after(async () => {
    await connection?.close();
    await sandbox?.close();
    await temporal?.stop();
  });

  /** Runs the worker until it logs "worker started" (then stops it) or exits by itself. */
  function runWorker(namespace: string): Promise<{ started: boolean; code: number | null; output: string }> {
    const child = spawn(process.execPath, ['--import', 'tsx', resolve(root, 'src', 'worker', 'main.ts')], {
      cwd: root,
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: temporal.address,
        TEMPORAL_NAMESPACE: namespace,
        TEMPORAL_TASK_QUEUE: `worker-setup-${randomUUID()}`,
        TEMPORAL_NAMESPACE_RETENTION: '2d',
        TEMPORAL_SETUP_TIMEOUT_MS: '30000',
        PROVIDER_BASE_URL: sandbox.url,
        PROVIDER_API_KEY: SANDBOX_KEY,
        LOG_LEVEL: 'info',
        ...(process.env.TEST_WORKFLOW_BUNDLE_PATH
          ? { WORKER_WORKFLOW_BUNDLE_PATH: process.env.TEST_WORKFLOW_BUNDLE_PATH }
          : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let started = false;
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (!started && output.includes('"worker started"')) {
        started = true;
        child.kill('SIGTERM');
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const killer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    return new Promise((done) =>
      child.once('exit', (code) => {
        clearTimeout(killer);
        done({ started, code, output });
      }),
    );
  }

  it('on a namespace that does not exist yet: creates it with the retention, registers the search attributes, then polls', async () => {
    const namespace = `worker-setup-${randomUUID().slice(0, 8)}`;
    const { started, output } = await runWorker(namespace);
    assert.ok(started, output);
    assert.ok(
      output.indexOf('registered search attributes') < output.indexOf('"worker started"'),
      'set up before it polls',
    );
    const { config } = await connection.workflowService.describeNamespace({ namespace });
    assert.equal(Number(config?.workflowExecutionRetentionTtl?.seconds), 2 * 86_400);
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
    assert.deepEqual(
      Object.keys(customAttributes ?? {}).sort(),
      Object.keys(searchAttributeDefinitions).sort(),
    );
  });

  it('when a search attribute has the wrong type: exits 1 with the reason, never polling', async () => {
    const namespace = `worker-setup-${randomUUID().slice(0, 8)}`;
    await ensureTemporalSetup(connection, { namespace, retentionMs: 86_400_000, searchAttributes: {} });
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: { AcceptedAt: proto.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD },
    });
    const { started, code, output } = await runWorker(namespace);
    assert.equal(started, false, output);
    assert.equal(code, 1, output);
    assert.match(output, /AcceptedAt is INDEXED_VALUE_TYPE_KEYWORD, the service needs Datetime/);
  });
});
