/**
 * `npm run build:bundle [out-file]`: bundles the workflows once (default dist/workflow-bundle.js)
 * for WORKER_WORKFLOW_BUNDLE_PATH, so workers start fast and all run exactly the same code.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { failureConverterPath } from '../src/codec/data-converter';
import { defaultWorkflowsPath } from '../src/worker/worker';

async function main(): Promise<void> {
  const outFile = resolve(process.argv[2] ?? resolve(__dirname, '..', 'dist', 'workflow-bundle.js'));
  // WARN: webpack's per-module report is noise here.
  const { code } = await bundleWorkflowCode({
    workflowsPath: defaultWorkflowsPath,
    // A pre-built bundle ignores the Worker's failureConverterPath: build it in, so failures
    // raised inside workflows are encrypted whenever PAYLOAD_ENCRYPTION_KEYS is set.
    failureConverterPath,
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
