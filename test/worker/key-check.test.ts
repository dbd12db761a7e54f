/**
 * At start the worker validates its provider key (/v3/validate): a production key where the
 * sandbox is expected, the reverse, or a disabled key stops it with a clear message that never
 * prints the key. Runs `npm run worker`'s entry point as a child process against the real sandbox.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { startSandbox } from '../../src/sandbox/server';

const root = resolve(__dirname, '..', '..');
const ADMIN_TOKEN = 'admin-token-for-worker-test';
const keys = { sandbox: 'sandbox-key-for-worker-test', production: 'production-key-for-worker-test' };

function runWorker(env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', resolve(root, 'src', 'worker', 'main.ts')], {
    cwd: root,
    // Nothing listens here: the worker must stop before it ever connects to Temporal.
    env: { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((done) =>
    child.once('exit', (code) => {
      clearTimeout(killer);
      done({ code, output });
    }),
  );
}

describe('the worker checks its provider key at start', () => {
  let sandbox: Awaited<ReturnType<typeof startSandbox>>;
  before(async () => {
    sandbox = await startSandbox({
      port: 0,
      sandboxKey: keys.sandbox,
      productionKey: keys.production,
      disabledKey: 'disabled-key-for-worker-test',
      adminToken: ADMIN_TOKEN,
    });
  });
  after(() => sandbox.close());

  const cases = [
    {
      name: 'a production key where SANDBOX is expected',
      key: keys.production,
      expected: 'SANDBOX',
      says: /a PRODUCTION key, but PROVIDER_EXPECTED_KEY_TYPE is SANDBOX/,
    },
    {
      name: 'a sandbox key where PRODUCTION is expected',
      key: keys.sandbox,
      expected: 'PRODUCTION',
      says: /a SANDBOX key, but PROVIDER_EXPECTED_KEY_TYPE is PRODUCTION/,
    },
    {
      name: 'a disabled key',
      key: 'disabled-key-for-worker-test',
      expected: 'SANDBOX',
      says: /the key is disabled/,
    },
    {
      name: 'a key the provider does not know',
      key: 'unknown-key-for-worker-test',
      expected: 'SANDBOX',
      says: /refused by the provider/,
    },
  ];
  for (const { name, key, expected, says } of cases) {
    it(`with ${name}, stops with a message naming PROVIDER_API_KEY and never printing the key`, async () => {
      const { code, output } = await runWorker({
        PROVIDER_BASE_URL: sandbox.url,
        PROVIDER_API_KEY: key,
        PROVIDER_EXPECTED_KEY_TYPE: expected,
      });
      assert.equal(code, 1, output);
      assert.match(output, /PROVIDER_API_KEY/);
      assert.match(output, says);
      assert.ok(!output.includes(key), 'the key is not in the output');
    });
  }

  it('with a READ-ONLY key (documented scope: it reads, never sends), stops naming PROVIDER_API_KEY and the scope', async () => {
    const settings = (scope: string) =>
      fetch(`${sandbox.url}/admin/settings`, {
        method: 'PATCH',
        headers: { 'x-admin-token': ADMIN_TOKEN, 'content-type': 'application/json' },
        body: JSON.stringify({ scope }),
      });
    assert.equal((await settings('READ-ONLY')).status, 200);
    try {
      const { code, output } = await runWorker({
        PROVIDER_BASE_URL: sandbox.url,
        PROVIDER_API_KEY: keys.sandbox,
        PROVIDER_EXPECTED_KEY_TYPE: 'SANDBOX',
      });
      assert.equal(code, 1, output);
      assert.match(output, /PROVIDER_API_KEY: the key is READ-ONLY/);
      assert.ok(!output.includes(keys.sandbox), 'the key is not in the output');
    } finally {
      await settings('READ-WRITE');
    }
  });
});
