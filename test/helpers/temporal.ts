/**
 * The Temporal server every test that needs one shares.
 *
 * `npm test` (scripts/run-tests.ts) starts one dev server for the whole run and passes its address
 * in TEST_TEMPORAL_ADDRESS, plus a pre-built workflow bundle in TEST_WORKFLOW_BUNDLE_PATH. A test
 * file run on its own (`node --import tsx --test test/x.test.ts`) starts its own server instead.
 */
import { resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { startDevServer } from '../../src/temporal/dev-server';
import { workflowInterceptorModules } from '../../src/worker/bundle';

export interface TestTemporal {
  address: string;
  namespace: string;
  stop(): Promise<void>;
}

export async function useTemporal(): Promise<TestTemporal> {
  const shared = process.env.TEST_TEMPORAL_ADDRESS;
  if (shared) return { address: shared, namespace: 'default', stop: async () => {} };
  const server = await startDevServer({ uiPort: false });
  return { address: server.address, namespace: server.namespace, stop: server.stop };
}

/** A client of the run's Temporal server for a test file that starts no worker; `close` ends both. */
export async function connectTestClient(): Promise<{ client: Client; close(): Promise<void> }> {
  const temporal = await useTemporal();
  const connection = await Connection.connect({ address: temporal.address });
  return {
    client: new Client({ connection, namespace: temporal.namespace }),
    close: async () => {
      await connection.close();
      await temporal.stop();
    },
  };
}

export const workflowsPath = resolve(__dirname, '..', '..', 'src', 'worker', 'workflows.ts');

/**
 * Worker options that load the workflows: the run's pre-built bundle when there is one, else the
 * sources with the interceptors every bundle carries (src/worker/bundle.ts).
 */
export function workflowCodeOptions():
  | { workflowBundle: { codePath: string } }
  | { workflowsPath: string; interceptors: { workflowModules: string[] } } {
  const bundlePath = process.env.TEST_WORKFLOW_BUNDLE_PATH;
  return bundlePath
    ? { workflowBundle: { codePath: bundlePath } }
    : { workflowsPath, interceptors: { workflowModules: workflowInterceptorModules } };
}
