/**
 * No Docker engine runs here, so docker-compose.yml is kept correct by reading it: it parses, the
 * services a production deployment needs are there, every variable set on our own services is one
 * the configuration knows, and every command points at a program the build produces.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { knownEnvironmentVariables } from '../src/config';

const root = resolve(__dirname, '..');

interface Service {
  build?: unknown;
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, unknown> | string[];
  deploy?: { replicas?: number };
  container_name?: string;
}

const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const services = compose.services;
const ourServices = Object.entries(services).filter(([, s]) => s.build !== undefined);

describe('docker-compose.yml', () => {
  it('declares PostgreSQL, the Temporal schema job, server and UI, the sandbox, the API and the worker', () => {
    for (const name of [
      'postgresql',
      'temporal-schema',
      'temporal',
      'temporal-ui',
      'sandbox',
      'api',
      'worker',
    ]) {
      assert.ok(services[name], `service ${name} is declared`);
    }
    assert.deepEqual(ourServices.map(([name]) => name).sort(), ['api', 'sandbox', 'worker']);
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
      assert.ok(existsSync(join(root, source)), `${name}: ${source} exists`);
    }
    const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: object };
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    for (const script of dockerfile.matchAll(/npm run ([\w:-]+)/g)) {
      assert.ok(script[1]! in packageJson.scripts, `Dockerfile's npm run ${script[1]} exists`);
    }
  });

  it('only depends on services that exist', () => {
    for (const [name, service] of Object.entries(services)) {
      const deps = Array.isArray(service.depends_on)
        ? service.depends_on
        : Object.keys(service.depends_on ?? {});
      for (const dep of deps) assert.ok(services[dep], `${name} depends on declared service ${dep}`);
    }
  });

  it('lets the worker scale out: several replicas, no fixed container name or host port', () => {
    const worker = services.worker!;
    assert.ok((worker.deploy?.replicas ?? 1) >= 2);
    assert.equal(worker.container_name, undefined);
    assert.equal((worker as { ports?: unknown }).ports, undefined);
  });

  it('requires the operator’s clients file, mounted read-only, instead of shipping keys', () => {
    const api = services.api as Service & { volumes?: string[] };
    const path = api.environment!.API_CLIENTS_FILE!;
    assert.equal(api.environment!.API_KEYS, undefined);
    const mount = api.volumes?.find((v) => v.includes(`:${path}:`));
    assert.ok(mount, 'API_CLIENTS_FILE is a mounted file');
    assert.match(mount, /^\$\{API_CLIENTS_FILE:\?/, 'the host path must be given');
    assert.match(mount, /:ro$/, 'read-only');
  });
});
