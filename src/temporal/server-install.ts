/**
 * The Temporal server and its SQL schema tool at a pinned version, for the cluster test tier
 * (`npm run test:cluster`): built from the Go module proxy into `.tools/temporal-server-<version>/`
 * with `go install` (the machines here reach package registries only, and no registry ships the
 * server binary), together with the PostgreSQL schema files from the module's source. Idempotent:
 * once the directory is complete a second run finds it and builds nothing.
 *
 * docker-compose.yml pins the same version (temporalio/server and temporalio/admin-tools), so the
 * tier tests the binaries and schema the compose file deploys.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';

export const TEMPORAL_SERVER_VERSION = '1.32.2';
const MODULE = 'go.temporal.io/server';
const projectRoot = resolve(__dirname, '..', '..');

export interface TemporalServerInstall {
  version: string;
  /** `temporal-server` (cmd/server). */
  serverBin: string;
  /** `temporal-sql-tool` (cmd/tools/sql), the tool docker-compose's schema job runs. */
  sqlToolBin: string;
  /** The PostgreSQL schemas, laid out as in the admin-tools image's /etc/temporal/schema/postgresql/v12. */
  postgresSchemaDir: string;
}

function installDir(version: string): string {
  return join(projectRoot, '.tools', `temporal-server-${version}`);
}

function layout(dir: string, version: string): TemporalServerInstall {
  return {
    version,
    serverBin: join(dir, 'bin', 'temporal-server'),
    sqlToolBin: join(dir, 'bin', 'temporal-sql-tool'),
    postgresSchemaDir: join(dir, 'schema', 'postgresql', 'v12'),
  };
}

function makeWritable(path: string): void {
  const stat = statSync(path);
  chmodSync(path, stat.isDirectory() ? 0o755 : 0o644);
  if (stat.isDirectory()) for (const entry of readdirSync(path)) makeWritable(join(path, entry));
}

/** Written last, so an interrupted build is never taken for a complete one. */
const COMPLETE_MARKER = '.complete';

export function findTemporalServer(version = TEMPORAL_SERVER_VERSION): TemporalServerInstall | undefined {
  const dir = installDir(version);
  return existsSync(join(dir, COMPLETE_MARKER)) ? layout(dir, version) : undefined;
}

/** The installed server, building it first if needed (several minutes on two cores). */
export function ensureTemporalServer(
  log: (line: string) => void = (l) => console.error(l),
  version = TEMPORAL_SERVER_VERSION,
): TemporalServerInstall {
  const found = findTemporalServer(version);
  if (found) return found;
  if (spawnSync('go', ['version']).status !== 0) {
    throw new Error(
      `Go is needed to build the Temporal server ${version} for the cluster tier (go install ${MODULE}/cmd/server@v${version}); ` +
        'install Go (https://go.dev/dl, or apt-get install golang) and run again.',
    );
  }
  const dir = installDir(version);
  const staging = `${dir}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  // GOTOOLCHAIN=auto: a server release may need a newer Go than the machine's (1.32.2 asks for
  // 1.26.10); go then fetches that toolchain as the module golang.org/toolchain from the same
  // module proxy, and the machine's Go is left as it is.
  const env = {
    ...process.env,
    GOTOOLCHAIN: 'auto',
    GOFLAGS: '-buildvcs=false',
    GOBIN: join(staging, 'bin'),
  };
  try {
    log(
      `Building the Temporal server ${version} and temporal-sql-tool from the Go module proxy (several minutes)…`,
    );
    const started = Date.now();
    // Both from one module version in one command: the packages they share compile once.
    const build = spawnSync(
      'go',
      [
        'install',
        '-trimpath',
        '-ldflags=-s -w',
        `${MODULE}/cmd/server@v${version}`,
        `${MODULE}/cmd/tools/sql@v${version}`,
      ],
      { stdio: ['ignore', 'inherit', 'inherit'], env, cwd: staging },
    );
    if (build.status !== 0)
      throw new Error(`go install of ${MODULE}@v${version} failed (exit ${build.status})`);
    renameSync(join(staging, 'bin', 'server'), join(staging, 'bin', 'temporal-server'));
    renameSync(join(staging, 'bin', 'sql'), join(staging, 'bin', 'temporal-sql-tool'));

    // The schema files live in the module's source, which `go install` just put in the module cache.
    const moduleInfo = JSON.parse(
      execFileSync('go', ['mod', 'download', '-json', `${MODULE}@v${version}`], {
        env,
        cwd: staging,
        encoding: 'utf8',
      }),
    ) as { Dir?: string };
    if (!moduleInfo.Dir) throw new Error(`go mod download did not say where ${MODULE}@v${version} is`);
    const schemaDir = join(staging, 'schema', 'postgresql');
    cpSync(join(moduleInfo.Dir, 'schema', 'postgresql'), schemaDir, { recursive: true });
    makeWritable(schemaDir); // the module cache is read-only, and so would the copy be
    writeFileSync(join(staging, COMPLETE_MARKER), `${version}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(staging, dir);
    log(`Temporal server ${version} installed in ${dir} (${Math.round((Date.now() - started) / 1000)} s)`);
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    throw err;
  }
  return layout(dir, version);
}
