/**
 * `npm run build:bundle [out-file]`: bundles the workflows once (default dist/workflow-bundle.js)
 * for WORKER_WORKFLOW_BUNDLE_PATH, so workers start fast and all run exactly the same code.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { workflowBundleOptions } from '../src/worker/bundle';

async function main(): Promise<void> {
  const outFile = resolve(process.argv[2] ?? resolve(__dirname, '..', 'dist', 'workflow-bundle.js'));
  // WARN: webpack's per-module report is noise here.
  const { code } = await bundleWorkflowCode({
    ...workflowBundleOptions,
    logger: new DefaultLogger('WARN'),
  });
  mkdirSync(dirname(outFile), { recursive: true });
  writeFileSync(outFile, code);
  console.log(`workflow bundle written to ${outFile} (${Math.round(code.length / 1024)} KiB)`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
