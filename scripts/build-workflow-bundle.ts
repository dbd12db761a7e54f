/**
 * `npm run build:bundle [out-file] [--workflows <file>]`: bundles the workflows once (default
 * dist/workflow-bundle.js) for WORKER_WORKFLOW_BUNDLE_PATH, so workers start fast and all run exactly
 * the same code. `--workflows` bundles other workflows instead (bench's baselines).
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { writeWorkflowBundle } from './lib/bundle';

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { workflows: { type: 'string' } },
  });
  const outFile = resolve(positionals[0] ?? resolve(__dirname, '..', 'dist', 'workflow-bundle.js'));
  const size = await writeWorkflowBundle(outFile, values.workflows);
  console.log(`workflow bundle written to ${outFile} (${Math.round(size / 1024)} KiB)`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
