/**
 * The one way the project writes a workflow bundle ahead of time — `npm run build:bundle` (the
 * Docker image), the test run, chaos, schemathesis and bench — so every worker that runs a pre-built
 * bundle runs the same code as production.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { workflowBundleOptions } from '../../src/worker/bundle';

/**
 * Bundles the order workflows (src/worker/bundle.ts: interceptors and failure converter included)
 * into `outFile`, or, given `workflowsPath`, those workflows alone (bench's baselines, which must
 * not carry the order workflows' interceptors). Resolves with the bundle's size in bytes.
 */
export async function writeWorkflowBundle(outFile: string, workflowsPath?: string): Promise<number> {
  const { code } = await bundleWorkflowCode({
    ...(workflowsPath ? { workflowsPath: resolve(workflowsPath) } : workflowBundleOptions),
    // WARN: webpack's per-module report is noise here.
    logger: new DefaultLogger('WARN'),
  });
  mkdirSync(dirname(resolve(outFile)), { recursive: true });
  writeFileSync(outFile, code);
  return code.length;
}
