/**
 * docker-compose.yml, checked without a Docker engine: docker-compose's own offline `config` must
 * accept it without an error or a warning, and reading it, the deployment must hang together —
 * images pinned to tags that are published, the jobs ordered and failing loudly, the UI able to
 * decode, our services reading only variables the configuration knows. Its commands run for real
 * in `npm run test:cluster` (test/cluster/compose-jobs.test.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { knownEnvironmentVariables } from '../src/config';
import { TEMPORAL_SERVER_VERSION } from '../src/temporal/server-install';
import {
  composeFile,
  interpolate,
  projectRoot,
  readComposeServices,
  type ComposeService,
} from '../scripts/lib/compose';

const services = readComposeServices();
const ourServices = Object.entries(services).filter(([, s]) => s.build !== undefined);
const required = {
  API_CLIENTS_FILE: './clients.yaml',
  PAYLOAD_ENCRYPTION_KEYS: 'key:AAAA',
  CODEC_AUTH_TOKENS: 'tttttttttttttttt',
  GRAFANA_ADMIN_PASSWORD: 'grafana-test-password',
};

function composeConfig(env: Record<string, string>) {
  // Only the variables given: the file must not depend on anything else in the environment.
  return spawnSync('docker-compose', ['--file', composeFile, '--project-directory', projectRoot, 'config'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
  });
}

const dependsOn = (service: ComposeService): Record<string, { condition?: string }> =>
  Array.isArray(service.depends_on)
    ? Object.fromEntries(service.depends_on.map((d) => [d, {}]))
    : (service.depends_on ?? {});

describe('docker-compose.yml', () => {
  it("passes docker-compose's offline `config` with no error and no warning (install: apt-get install docker-compose)", () => {
    const result = composeConfig(required);
    assert.equal(result.error, undefined, `docker-compose could not run: ${String(result.error)}`);
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stderr.trim(), '', 'no warnings');
    const resolved = parse(result.stdout) as { services: Record<string, ComposeService> };
    assert.deepEqual(Object.keys(resolved.services).sort(), Object.keys(services).sort());
  });

  it('refuses to start without the secrets it needs, naming each', () => {
    for (const name of Object.keys(required)) {
      const result = composeConfig({ ...required, [name]: '' });
      assert.notEqual(result.status, 0, `${name} missing must fail`);
      assert.match(result.stderr, new RegExp(name));
    }
  });

  it('has no top-level name (compose v1 refuses it) and declares the services a deployment needs', () => {
    const top = parse(readFileSync(composeFile, 'utf8')) as Record<string, unknown>;
    assert.equal(top.name, undefined);
    for (const name of [
      'postgresql',
      'temporal-schema',
      'temporal',
      'temporal-setup',
      'temporal-ui',
      'codec',
    ]) {
      assert.ok(services[name], `service ${name} is declared`);
    }
    assert.deepEqual(ourServices.map(([name]) => name).sort(), [
      'api',
      'codec',
      'sandbox',
      'temporal-setup',
      'worker',
    ]);
  });

  it('pins the Temporal images to the release the cluster tier builds and tests, in the tag form published since 1.30', () => {
    assert.equal(services.temporal!.image, `temporalio/server:${TEMPORAL_SERVER_VERSION}`);
    assert.equal(services['temporal-schema']!.image, `temporalio/admin-tools:${TEMPORAL_SERVER_VERSION}`);
    for (const [name, service] of Object.entries(services)) {
      if (service.image && !service.build)
        assert.match(service.image, /:v?\d+(\.\d+)*$/, `${name}: a pinned version tag`);
    }
  });

  it('sets the history shard count, which can never change once the database is used', () => {
    const shards = Number(services.temporal!.environment!.NUM_HISTORY_SHARDS);
    assert.ok(Number.isInteger(shards) && shards >= 128, `NUM_HISTORY_SHARDS=${shards}`);
  });

  it('gives the server its dynamic config file (the server does not start without one) from the repository', () => {
    const env = services.temporal!.environment!;
    const mount = services
      .temporal!.volumes!.map((v) => v.split(':'))
      .find(([, target]) => env.DYNAMIC_CONFIG_FILE_PATH!.startsWith(`${target}/`));
    assert.ok(mount, 'DYNAMIC_CONFIG_FILE_PATH is inside a mounted directory');
    const hostFile = join(projectRoot, mount[0]!, env.DYNAMIC_CONFIG_FILE_PATH!.slice(mount[1]!.length));
    assert.ok(existsSync(hostFile), `${hostFile} exists`);
    // Task-queue fairness on (docs/deployers.md "Fair under load"), as on every server we start.
    const dynamicConfig = parse(readFileSync(hostFile, 'utf8')) as Record<string, { value: unknown }[]>;
    for (const key of ['matching.enableFairness', 'matching.useNewMatcher'])
      assert.deepEqual(
        dynamicConfig[key]?.map((entry) => entry.value),
        [true],
        key,
      );
  });

  it('orders the jobs: schema → server → setup (namespace, search attributes) → UI, worker and API', () => {
    assert.deepEqual(dependsOn(services['temporal-schema']!), {
      postgresql: { condition: 'service_healthy' },
    });
    assert.equal(
      dependsOn(services.temporal!)['temporal-schema']?.condition,
      'service_completed_successfully',
    );
    assert.ok(dependsOn(services['temporal-setup']!).temporal);
    for (const name of ['worker', 'api', 'temporal-ui']) {
      assert.equal(
        dependsOn(services[name]!)['temporal-setup']?.condition,
        'service_completed_successfully',
        `${name} waits for the setup job`,
      );
    }
    for (const [name, service] of Object.entries(services)) {
      for (const dep of Object.keys(dependsOn(service)))
        assert.ok(services[dep], `${name} depends on declared ${dep}`);
    }
  });

  it('lets its one-off jobs fail loudly: no error swallowed, no restart', () => {
    const script = services['temporal-schema']!.command!.join('\n');
    assert.match(script, /set -eu/);
    assert.doesNotMatch(script, /\|\|\s*true/);
    for (const name of ['temporal-schema', 'temporal-setup'])
      assert.equal(services[name]!.restart, 'no', name);
    // The setup job runs the service's own setup, which derives the search attributes from
    // contract/order.ts: none is listed in the compose file.
    assert.deepEqual(services['temporal-setup']!.command, ['node', 'dist/src/worker/setup-main.js']);
    assert.doesNotMatch(readFileSync(composeFile, 'utf8'), /search-attribute create|OrderStatus/);
  });

  it('health checks use only what the image ships: node in ours, pg_isready in postgres, none in the Temporal server image', () => {
    assert.equal(services.temporal!.healthcheck, undefined);
    assert.equal(services.postgresql!.healthcheck!.test!.join(' ').includes('pg_isready'), true);
    for (const [name, service] of ourServices) {
      const test = service.healthcheck?.test;
      if (test) assert.deepEqual(test.slice(0, 2), ['CMD', 'node'], name);
    }
  });

  it('points the UI at the codec service, which accepts the UI origin and needs a token', () => {
    const ui = services['temporal-ui']!.environment!;
    const codec = services.codec!;
    const published = (service: ComposeService) => service.ports!.map((p) => Number(p.split(':')[0]));
    assert.equal(new URL(ui.TEMPORAL_CODEC_ENDPOINT!).port, String(published(codec)[0]));
    assert.equal(ui.TEMPORAL_CODEC_INCLUDE_CREDENTIALS, 'true', 'the browser sends the codec session cookie');
    const uiOrigin = `http://localhost:${published(services['temporal-ui']!)[0]}`;
    assert.ok(codec.environment!.CODEC_CORS_ORIGINS!.split(',').includes(uiOrigin));
    assert.match(codec.environment!.CODEC_AUTH_TOKENS!, /^\$\{CODEC_AUTH_TOKENS:\?/);
  });

  it('hides the Temporal UI buttons that bypass an order’s own rules, and keeps signals and updates', () => {
    const ui = services['temporal-ui']!.environment!;
    for (const setting of [
      'TEMPORAL_WORKFLOW_TERMINATE_DISABLED',
      'TEMPORAL_WORKFLOW_RESET_DISABLED',
      'TEMPORAL_BATCH_ACTIONS_DISABLED',
    ])
      assert.equal(ui[setting], 'true', setting);
    // Operators decide reviews with Send an Update / Send a Signal; cancellation is safe (the order decides).
    for (const setting of [
      'TEMPORAL_DISABLE_WRITE_ACTIONS',
      'TEMPORAL_WORKFLOW_SIGNAL_DISABLED',
      'TEMPORAL_WORKFLOW_CANCEL_DISABLED',
    ])
      assert.equal(ui[setting], undefined, setting);
  });

  it('sets on our services only variables the configuration knows', () => {
    for (const [name, service] of ourServices) {
      const unknown = Object.keys(service.environment ?? {}).filter(
        (v) => !knownEnvironmentVariables.includes(v),
      );
      assert.deepEqual(unknown, [], `${name} sets variables src/config.ts does not read`);
    }
  });

  it('runs each of our services from a program the build produces', () => {
    for (const [name, service] of ourServices) {
      const script = service.command?.find((part) => part.startsWith('dist/'));
      assert.ok(script, `${name} runs a built script`);
      const source = script.replace(/^dist\//, '').replace(/\.js$/, '.ts');
      assert.ok(existsSync(join(projectRoot, source)), `${name}: ${source} exists`);
    }
    const packageJson = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as {
      scripts: object;
    };
    const dockerfile = readFileSync(join(projectRoot, 'Dockerfile'), 'utf8');
    for (const script of dockerfile.matchAll(/npm run ([\w:-]+)/g)) {
      assert.ok(script[1]! in packageJson.scripts, `Dockerfile's npm run ${script[1]} exists`);
    }
  });

  it('lets the worker scale out: several replicas, no fixed container name or host port', () => {
    const worker = services.worker!;
    assert.ok((worker.deploy?.replicas ?? 1) >= 2);
    assert.equal(worker.container_name, undefined);
    assert.equal(worker.ports, undefined);
  });

  it('requires the operator’s clients file, mounted read-only, instead of shipping keys', () => {
    const api = services.api!;
    const path = api.environment!.API_CLIENTS_FILE!;
    assert.equal(api.environment!.API_KEYS, undefined);
    const mount = api.volumes?.find((v) => v.includes(`:${path}:`));
    assert.ok(mount, 'API_CLIENTS_FILE is a mounted file');
    assert.match(mount, /^\$\{API_CLIENTS_FILE:\?/, 'the host path must be given');
    assert.match(mount, /:ro$/, 'read-only');
  });

  it('passes the page-token keys through to the API, so tokens outlive a restart (empty: a key per process)', () => {
    const sealed = 'k1:' + Buffer.alloc(32, 1).toString('base64');
    const withKeys = composeConfig({ ...required, API_PAGE_TOKEN_KEYS: sealed });
    assert.equal(withKeys.status, 0, withKeys.stderr);
    assert.match(withKeys.stdout, new RegExp(`API_PAGE_TOKEN_KEYS: ${sealed.replace(/[+/=]/g, '\\$&')}`));
    assert.match(services.api!.environment!.API_PAGE_TOKEN_KEYS!, /^\$\{API_PAGE_TOKEN_KEYS:-\}$/);
  });

  it('lets Prometheus scrape the API and every worker replica on their metrics listeners, published to no host port', () => {
    const prometheus = parse(
      readFileSync(join(projectRoot, 'deploy', 'prometheus', 'prometheus.yml'), 'utf8'),
    ) as {
      rule_files: string[];
      scrape_configs: { job_name: string; dns_sd_configs: { names: string[]; port: number }[] }[];
    };
    const listenPort = (address: string | undefined) => Number(address?.split(':').at(-1));
    const scraped = new Map(
      prometheus.scrape_configs.flatMap((job) =>
        job.dns_sd_configs.flatMap((sd) => sd.names.map((n) => [n, sd.port])),
      ),
    );
    assert.equal(scraped.get('api'), listenPort(services.api!.environment!.API_METRICS_ADDRESS));
    assert.equal(scraped.get('worker'), listenPort(services.worker!.environment!.WORKER_METRICS_ADDRESS));
    for (const name of ['api', 'worker']) {
      const published = (services[name]!.ports ?? []).map((p) => Number(p.split(':').at(-1)));
      assert.ok(!published.includes(scraped.get(name)!), `${name}: the metrics port is not published`);
    }
    // The config and rule files Prometheus reads are the repository's.
    const mount = services.prometheus!.volumes!.find((v) => v.endsWith(':/etc/prometheus:ro'));
    assert.equal(mount, './deploy/prometheus:/etc/prometheus:ro');
    for (const file of prometheus.rule_files)
      assert.ok(
        existsSync(join(projectRoot, 'deploy', 'prometheus', file.replace('/etc/prometheus/', ''))),
        file,
      );
  });

  it('provisions Grafana from the repository: the Prometheus data source and the dashboard, with an admin password required', () => {
    const grafana = services.grafana!;
    for (const [source, target] of [
      ['./deploy/grafana/provisioning', '/etc/grafana/provisioning'],
      ['./deploy/grafana/dashboards', '/etc/grafana/dashboards'],
    ] as const) {
      assert.ok(grafana.volumes!.includes(`${source}:${target}:ro`), `${source} mounted`);
      assert.ok(existsSync(join(projectRoot, source)), `${source} exists`);
    }
    const provider = parse(
      readFileSync(join(projectRoot, 'deploy', 'grafana', 'provisioning', 'dashboards', 'topup.yml'), 'utf8'),
    ) as { providers: { options: { path: string } }[] };
    assert.equal(provider.providers[0]!.options.path, '/etc/grafana/dashboards');
    assert.match(grafana.environment!.GF_SECURITY_ADMIN_PASSWORD!, /^\$\{GRAFANA_ADMIN_PASSWORD:\?/);
  });

  it('interpolates as compose does ($$ is a dollar; defaults; required values)', () => {
    assert.equal(interpolate('$$db ${A:-x} ${B-y} ${C}', { A: '', B: '' }), '$db x  ');
    assert.throws(() => interpolate('${A:?set A}', {}), /A is required: set A/);
  });
});
