/**
 * `npm test`: starts one Temporal dev server for the whole run (and bundles the workflows once),
 * runs every test file with node's test runner, then stops the server. Arguments narrow the run
 * to files whose path contains one of them: `npm test -- sandbox api`. The files under
 * test/cluster/ need the cluster tier: `npm run test:cluster` runs them.
 * `--fast` (`npm run test:fast`) runs only the fast tier, with no dev server: unit tests and the
 * time-skipping tests of test/fast/.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevServer } from '../src/temporal/dev-server';
import { bundleWorkflows, fastTierFiles, runTestFiles, testFiles } from './lib/test-files';

async function main(): Promise<number> {
  const fast = process.argv.includes('--fast');
  const filters = process.argv.slice(2).filter((arg) => arg !== '--fast');
  const tier = testFiles().filter((f) => !f.startsWith(join('test', 'cluster')));
  const files = (fast ? fastTierFiles(tier) : tier).filter(
    (f) => filters.length === 0 || filters.some((x) => f.includes(x)),
  );
  if (files.length === 0) {
    console.error(`No test files match ${filters.join(' ')}`);
    return 1;
  }
  if (fast) return runTestFiles(files, {});
  const scratch = mkdtempSync(join(tmpdir(), 'topup-tests-'));
  const started = Date.now();
  const [server, bundlePath] = await Promise.all([
    startDevServer({ uiPort: false }),
    bundleWorkflows(scratch),
  ]);
  console.error(
    `Temporal dev server at ${server.address} (ready in ${Date.now() - started} ms); ${files.length} test files`,
  );
  try {
    return await runTestFiles(files, {
      TEST_TEMPORAL_ADDRESS: server.address,
      TEST_WORKFLOW_BUNDLE_PATH: bundlePath,
    });
  } finally {
    await server.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
