/**
 * docker-compose.yml as data, and its jobs' own commands run without containers: the schema job's
 * shell script (temporal-sql-tool from the admin-tools image) and the commands of the services
 * built from our image (`node dist/...`). The cluster tier and the compose tests use this, so what
 * they run is what `docker compose up` runs, with only addresses (and tool paths) swapped for the
 * machine's own.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { parse } from 'yaml';

export const projectRoot = resolve(__dirname, '..', '..');
export const composeFile = join(projectRoot, 'docker-compose.yml');

export interface ComposeService {
  image?: string;
  build?: unknown;
  entrypoint?: string[];
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  depends_on?: Record<string, { condition?: string }> | string[];
  healthcheck?: { test?: string[] };
  deploy?: { replicas?: number };
  restart?: string;
  container_name?: string;
}

/**
 * Compose's interpolation: `$$` is a literal `$`; `${NAME}`, `${NAME:-default}`, `${NAME-default}`,
 * `${NAME:?message}` and `${NAME?message}` read `vars` (a required one that is missing throws).
 */
export function interpolate(value: string, vars: Record<string, string | undefined>): string {
  return value.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])((?:[^}])*))?\}/g,
    (match, name, colon, op, arg) => {
      if (match === '$$') return '$';
      const raw = vars[name as string];
      const unset = raw === undefined || (colon === ':' && raw === '');
      if (op === '-') return unset ? (arg as string) : raw!;
      if (op === '?') {
        if (unset) throw new Error(`docker-compose.yml: ${name as string} is required: ${arg as string}`);
        return raw!;
      }
      return raw ?? '';
    },
  );
}

function interpolateAll(value: unknown, vars: Record<string, string | undefined>): unknown {
  if (typeof value === 'string') return interpolate(value, vars);
  if (Array.isArray(value)) return value.map((v) => interpolateAll(v, vars));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateAll(v, vars)]));
  }
  return value;
}

/** The services, YAML merge keys resolved; with `vars`, every value interpolated as compose would. */
export function readComposeServices(
  vars?: Record<string, string | undefined>,
): Record<string, ComposeService> {
  const raw = parse(readFileSync(composeFile, 'utf8'), { merge: true }) as {
    services: Record<string, unknown>;
  };
  const services = vars ? interpolateAll(raw.services, vars) : raw.services;
  return services as Record<string, ComposeService>;
}

export interface LocalRun {
  status: number;
  output: string;
}

/**
 * Runs a compose service's entrypoint + command on this machine, with the service's environment
 * plus `env` (addresses, tool paths) and `path` prepended to PATH; our image's services run from
 * the project root with this Node, as the image runs them from /app.
 */
export function runComposeServiceLocally(
  service: ComposeService,
  options: { env?: Record<string, string>; path?: string[]; timeoutMs?: number } = {},
): LocalRun {
  const argv = [...(service.entrypoint ?? []), ...(service.command ?? [])];
  const [command, ...args] = argv;
  if (!command) throw new Error('the service has no command');
  const env = {
    ...process.env,
    ...service.environment,
    ...options.env,
    PATH: [...(options.path ?? []), process.env.PATH ?? ''].join(delimiter),
  };
  const result = spawnSync(command === 'node' ? process.execPath : command, args, {
    cwd: projectRoot,
    env,
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 300_000,
  });
  return {
    status: result.status ?? 1,
    output: `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ? `\n${result.error.message}` : ''}`,
  };
}

/** docker-compose.yml's schema job against a PostgreSQL, with the installed temporal-sql-tool and schema files. */
export function runComposeSchemaJob(
  services: Record<string, ComposeService>,
  install: { sqlToolBin: string; postgresSchemaDir: string },
  postgres: { host: string; port: number },
): LocalRun {
  return runComposeServiceLocally(services['temporal-schema']!, {
    env: {
      SQL_HOST: postgres.host,
      SQL_PORT: String(postgres.port),
      TEMPORAL_SCHEMA_DIR: install.postgresSchemaDir,
    },
    path: [dirname(install.sqlToolBin)],
  });
}

/** docker-compose.yml's setup job (`npm run temporal:setup`, built) against a Temporal frontend. */
export function runComposeSetupJob(
  services: Record<string, ComposeService>,
  temporalAddress: string,
): LocalRun {
  return runComposeServiceLocally(services['temporal-setup']!, {
    env: { TEMPORAL_ADDRESS: temporalAddress },
  });
}
