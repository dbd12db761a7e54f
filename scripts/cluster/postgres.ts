/**
 * A private PostgreSQL for the cluster tier: its own data directory in a temp dir, a free loopback
 * port, its unix socket in that temp dir, and one superuser with a password — what the compose
 * file's `postgres` image gives (POSTGRES_USER / POSTGRES_PASSWORD). Debian's packages provide
 * the binaries (`.ci/run` installs them when missing). PostgreSQL refuses to run as root, and CI
 * runs as root: then the server runs as the `postgres` system user (or `nobody`).
 *
 * Durability is off (fsync, full-page writes): the data is thrown away after the run, and the disk
 * and CPU are shared with every other test.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import {
  freePort,
  startServerProcess,
  waitUntilServing,
  type ServerProcess,
} from '../../src/temporal/process';

export interface PrivatePostgres {
  host: string;
  port: number;
  user: string;
  password: string;
  /** The temp dir holding the data directory, the socket and the log; removed by stop(). */
  dir: string;
  logFile: string;
  /** Runs SQL through psql over TCP, as the superuser; returns its unaligned output. */
  query(sql: string, database?: string): string;
  /**
   * Stops the server (its fast shutdown: sessions are ended) and keeps the data directory: an
   * outage until `startServer`.
   */
  stopServer(): Promise<void>;
  /** Starts it again on the same data directory and port; resolves once it answers. */
  startServer(): Promise<void>;
  /** Stops the server and removes its temp dir. */
  stop(): Promise<void>;
}

/** The newest Debian layout (/usr/lib/postgresql/<major>/bin) first, then PATH. */
function postgresBinDir(): string {
  const debian = '/usr/lib/postgresql';
  const majors = existsSync(debian)
    ? readdirSync(debian)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const major of majors) {
    const dir = join(debian, major, 'bin');
    if (existsSync(join(dir, 'postgres')) && existsSync(join(dir, 'initdb'))) return dir;
  }
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, 'postgres')) && existsSync(join(dir, 'initdb'))) return dir;
  }
  throw new Error(
    'PostgreSQL was not found (initdb and postgres). Install it: apt-get install -y postgresql (Debian), ' +
      'which .ci/run does when it is missing.',
  );
}

/** Root may not run PostgreSQL: pick the system user Debian's package creates, else nobody. */
function unprivilegedUser(): { uid: number; gid: number; name: string } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
    if (uid.status === 0 && gid.status === 0) {
      return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()), name };
    }
  }
  throw new Error('Running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as.');
}

export type PostgresAddress = Pick<PrivatePostgres, 'host' | 'port' | 'user' | 'password'>;

/** Runs SQL with psql over TCP; returns its unaligned output. */
export function queryPostgres(at: PostgresAddress, sql: string, database = 'postgres'): string {
  const psql = join(postgresBinDir(), 'psql');
  const args = ['-h', at.host, '-p', String(at.port), '-U', at.user, '-d', database, '-v', 'ON_ERROR_STOP=1'];
  return execFileSync(psql, [...args, '-Atc', sql], {
    encoding: 'utf8',
    env: { ...process.env, PGPASSWORD: at.password, PGCONNECT_TIMEOUT: '2' },
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim();
}

export async function startPrivatePostgres(
  options: { user?: string; password?: string; maxConnections?: number } = {},
): Promise<PrivatePostgres> {
  const bin = postgresBinDir();
  const owner = unprivilegedUser();
  const user = options.user ?? 'temporal';
  const password = options.password ?? 'temporal';
  const dir = mkdtempSync(join(tmpdir(), 'topup-postgres-'));
  const dataDir = join(dir, 'data');
  const passwordFile = join(dir, 'password');
  const logFile = join(dir, 'postgres.log');
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  writeFileSync(logFile, '');
  if (owner) for (const path of [dir, passwordFile, logFile]) chownSync(path, owner.uid, owner.gid);
  const asOwner = owner ? { uid: owner.uid, gid: owner.gid } : {};

  execFileSync(
    join(bin, 'initdb'),
    [
      '--pgdata',
      dataDir,
      '--username',
      user,
      `--pwfile=${passwordFile}`,
      // Over TCP a password, as in the compose file's PostgreSQL; on the private socket, trust.
      '--auth-host=scram-sha-256',
      '--auth-local=trust',
      '--encoding=UTF8',
      '--locale=C.UTF-8',
      '--no-sync',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], ...asOwner, env: { ...process.env, LC_ALL: 'C.UTF-8' } },
  );

  const port = await freePort();
  const launch = (): ServerProcess =>
    startServerProcess({
      name: 'postgres',
      command: join(bin, 'postgres'),
      args: [
        '-D',
        dataDir,
        '-p',
        String(port),
        '-k',
        dir,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        `max_connections=${options.maxConnections ?? 200}`,
        '-c',
        'fsync=off',
        '-c',
        'synchronous_commit=off',
        '-c',
        'full_page_writes=off',
      ],
      // Appended to (startServerProcess): a restart's lines follow the first start's.
      output: { file: logFile },
      ...(owner ? { user: { uid: owner.uid, gid: owner.gid } } : {}),
      // SIGINT is PostgreSQL's "fast" shutdown: it ends sessions instead of waiting for them.
      stopSignal: 'SIGINT',
    });

  const query = (sql: string, database = 'postgres') =>
    queryPostgres({ host: '127.0.0.1', port, user, password }, sql, database);

  let server = launch();
  const startServer = async () => {
    if (!server.hasExited()) return;
    server = launch();
    await waitUntilServing(server, async () => query('SELECT 1'), { timeoutMs: 30_000 });
  };
  try {
    await waitUntilServing(server, async () => query('SELECT 1'), { timeoutMs: 30_000 });
  } catch (err) {
    await server.stop();
    throw new Error(`${err instanceof Error ? err.message : String(err)} (log: ${logFile})`);
  }
  const stop = async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  const stopServer = () => server.stop();
  return { host: '127.0.0.1', port, user, password, dir, logFile, query, stopServer, startServer, stop };
}
