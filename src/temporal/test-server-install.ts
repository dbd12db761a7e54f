/**
 * Temporal's time-skipping test server for the fast test tier (`npm run test:fast`).
 *
 * `TestWorkflowEnvironment.createTimeSkipping()` downloads a native build of it from
 * temporal.download, which the machines here cannot reach. The native build is compiled from the
 * Java test server that Maven Central publishes (`io.temporal:temporal-test-server`), so we
 * install that instead: Maven resolves it and its dependencies into
 * `.tools/temporal-test-server-<version>/lib`, and a small launcher script there takes the port
 * argument the SDK passes (`<port>`), exactly as the native binary does. Needs `java` (17+) and
 * `mvn`; both come from Debian (default-jre-headless, maven). Idempotent: a complete install is
 * found and nothing is downloaded again.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The Java SDK release whose test server we run; any recent one speaks the API the TS SDK uses. */
export const TEMPORAL_TEST_SERVER_VERSION = '1.38.0';
const projectRoot = resolve(__dirname, '..', '..');

function installDir(version: string): string {
  return join(projectRoot, '.tools', `temporal-test-server-${version}`);
}

/** The launcher's path if the test server is installed, without installing anything. */
export function findTestServer(version = TEMPORAL_TEST_SERVER_VERSION): string | undefined {
  const launcher = join(installDir(version), 'temporal-test-server');
  return existsSync(launcher) ? launcher : undefined;
}

/** The launcher's path, installing the test server from Maven Central when it is missing. */
export function ensureTestServer(log: (line: string) => void = (l) => console.error(l)): string {
  const found = findTestServer();
  if (found) return found;
  ensureJavaAndMaven(log);
  const dir = installDir(TEMPORAL_TEST_SERVER_VERSION);
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  writeFileSync(join(partial, 'pom.xml'), pom(TEMPORAL_TEST_SERVER_VERSION));
  log(`Installing Temporal's test server ${TEMPORAL_TEST_SERVER_VERSION} from Maven Central…`);
  const resolved = spawnSync(
    'mvn',
    [
      '--batch-mode',
      '--quiet',
      '-Dstyle.color=never',
      '-f',
      join(partial, 'pom.xml'),
      'dependency:copy-dependencies',
      '-DincludeScope=runtime',
      `-DoutputDirectory=${join(partial, 'lib')}`,
    ],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  if (resolved.status !== 0) {
    throw new Error(
      `Maven could not resolve io.temporal:temporal-test-server:${TEMPORAL_TEST_SERVER_VERSION}`,
    );
  }
  const launcher = join(partial, 'temporal-test-server');
  // The SDK runs `<launcher> <port>`; exec keeps one process, so stopping it stops the JVM.
  writeFileSync(
    launcher,
    '#!/bin/sh\n' +
      'exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 ' +
      '-cp "$(dirname "$0")/lib/*" io.temporal.testserver.TestServer "$@"\n',
  );
  chmodSync(launcher, 0o755);
  renameSync(partial, dir);
  log(`Temporal's test server installed at ${dir}`);
  return join(dir, 'temporal-test-server');
}

const javaAndMaven = [
  ['java', 'default-jre-headless'],
  ['mvn', 'maven'],
] as const;

/**
 * Java and Maven come from Debian. As root (CI, a fresh machine) the missing ones are installed, as
 * `.ci/run` does; anyone else is told the command.
 */
function ensureJavaAndMaven(log: (line: string) => void): void {
  const has = (tool: string) => spawnSync(tool, ['-version'], { stdio: 'ignore' }).status === 0;
  const missing = javaAndMaven.filter(([tool]) => !has(tool)).map(([, pkg]) => pkg);
  if (missing.length === 0) return;
  const command = `apt-get install -y --no-install-recommends ${missing.join(' ')}`;
  if (process.getuid?.() !== 0 || !has('apt-get')) {
    throw new Error(`The time-skipping test server needs Java and Maven (Debian: ${command})`);
  }
  log(`Installing ${missing.join(' and ')} from Debian for the time-skipping test server…`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', '--no-install-recommends', ...missing],
  ]) {
    const run = spawnSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env });
    if (run.status !== 0) throw new Error(`${command} failed (exit ${run.status})`);
  }
}

function pom(version: string): string {
  return `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.topup</groupId>
  <artifactId>temporal-test-server-install</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>io.temporal</groupId>
      <artifactId>temporal-test-server</artifactId>
      <version>${version}</version>
    </dependency>
  </dependencies>
</project>
`;
}
