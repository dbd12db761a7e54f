/**
 * `npm test`: starts one Temporal dev server for the whole run (and bundles the workflows once),
 * runs every test file with node's test runner, then stops the server. Arguments narrow the run
 * to files whose path contains one of them: `npm test -- sandbox api`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { failureConverterPath } from '../src/codec/data-converter';
import { startDevServer } from '../src/temporal/dev-server';

const root = resolve(__dirname, '..');

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [relative(root, path)] : [];
  });
}

async function bundleWorkflows(outDir: string): Promise<string | undefined> {
  const workflowsPath = join(root, 'workflows', 'index.ts');
  if (!existsSync(workflowsPath)) return undefined;
  const { code } = await bundleWorkflowCode({ workflowsPath, failureConverterPath, logger: undefined });
  const codePath = join(outDir, 'workflow-bundle.js');
  writeFileSync(codePath, code);
  return codePath;
}

async function main(): Promise<number> {
  const filters = process.argv.slice(2);
  const files = testFiles(join(root, 'test'))
    .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
    .sort();
  if (files.length === 0) {
    console.error(`No test files match ${filters.join(' ')}`);
    return 1;
  }
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
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...files], {
      cwd: root,
      stdio: 'inherit',
      env: {
        ...process.env,
        TEST_TEMPORAL_ADDRESS: server.address,
        ...(bundlePath ? { TEST_WORKFLOW_BUNDLE_PATH: bundlePath } : {}),
        LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
      },
    });
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.on('SIGINT', forward).on('SIGTERM', forward);
    return await new Promise<number>((resolveCode) => child.on('exit', (code) => resolveCode(code ?? 1)));
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
