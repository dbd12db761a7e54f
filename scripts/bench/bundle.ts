/**
 * `tsx scripts/bench/bundle.ts <out-file>`: the baseline workflows bundled ahead, as
 * `npm run build:bundle` does for the order workflows, so both workers run a pre-built bundle.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';

async function main(): Promise<void> {
  const outFile = process.argv[2];
  if (!outFile) throw new Error('usage: bundle.ts <out-file>');
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('./baseline-workflows'),
    logger: new DefaultLogger('WARN'),
  });
  mkdirSync(dirname(resolve(outFile)), { recursive: true });
  writeFileSync(outFile, code);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
