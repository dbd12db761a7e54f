/**
 * Finding the test files and running them with node's test runner, for `npm test` (against a dev
 * server) and `npm run test:cluster` (against the cluster tier): one place that knows how.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { writeWorkflowBundle } from './bundle';

export const projectRoot = resolve(__dirname, '..', '..');

/**
 * Where test files live: the service's, and the client library's (clients/typescript/test), which
 * run against the same dev server as the rest.
 */
export const testDirs = [join(projectRoot, 'test'), join(projectRoot, 'clients', 'typescript', 'test')];

/** Test files under `dirs` (relative to the project root), sorted. */
export function testFiles(dirs: string | string[] = testDirs): string[] {
  return (typeof dirs === 'string' ? [dirs] : dirs)
    .flatMap((dir) =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) return testFiles(path);
        return entry.name.endsWith('.test.ts') ? [relative(projectRoot, path)] : [];
      }),
    )
    .sort();
}

/**
 * The fast tier (`npm run test:fast`): the time-skipping tests under test/fast/ and every unit test,
 * that is every file that does not reach the dev server through its imports.
 */
export function fastTierFiles(files = testFiles()): string[] {
  const devServer = join(projectRoot, 'src', 'temporal', 'dev-server.ts');
  return files.filter(
    (f) => f.startsWith(join('test', 'fast')) || !reaches(join(projectRoot, f), devServer, new Set()),
  );
}

/** Whether `module` imports `target`, directly or through other project modules. */
function reaches(module: string, target: string, seen: Set<string>): boolean {
  if (module === target) return true;
  if (seen.has(module)) return false;
  seen.add(module);
  const specifiers = readFileSync(module, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g);
  return [...specifiers].some(([, specifier]) => {
    const base = resolve(dirname(module), specifier!);
    const found = [`${base}.ts`, join(base, 'index.ts')].find((candidate) => existsSync(candidate));
    return found !== undefined && reaches(found, target, seen);
  });
}

/** Bundles the workflows once for the whole run (as `npm run build:bundle` does) into `outDir`. */
export async function bundleWorkflows(outDir: string): Promise<string> {
  const codePath = join(outDir, 'workflow-bundle.js');
  await writeWorkflowBundle(codePath);
  return codePath;
}

/** Runs the files with `node --test` and the given environment; resolves with the exit code. */
export function runTestFiles(files: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...files], {
    cwd: projectRoot,
    stdio: 'inherit',
    env: { ...process.env, ...env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' },
  });
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  process.on('SIGINT', forward).on('SIGTERM', forward);
  return new Promise<number>((resolveCode) =>
    child.on('exit', (code) => {
      process.off('SIGINT', forward).off('SIGTERM', forward);
      resolveCode(code ?? 1);
    }),
  );
}
