/**
 * Clients and keys without Temporal: the clients file's validation (every error names the file
 * and the place in it, never a key or a hash), the registry's key check, the legacy API_KEYS
 * client, the `npm run clients` command as a user runs it, and key rotation against the real API
 * process (SIGHUP reloads the file).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { randomBytes } from 'node:crypto';
import { generateApiKey, hashApiKey, keyDigest } from '../../src/clients/keys';
import { endpointSecret } from '../../src/webhooks/secrets';
import { ClientsFileError, parseClientsFile, type ClientsFile } from '../../src/clients/model';
import {
  ClientRegistry,
  clientsFromConfig,
  legacyClientsFile,
  readClientsFile,
} from '../../src/clients/registry';
import { ConfigError } from '../../src/config';
import { freePort } from '../../src/temporal/dev-server';

const root = resolve(__dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'clients-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const keyA = generateApiKey();
const keyB = generateApiKey();
const keyC = generateApiKey();

function validFile(): ClientsFile {
  return {
    defaultClient: 'shop',
    clients: [
      {
        id: 'shop',
        name: 'Shop back office',
        scopes: ['orders:write', 'orders:read'],
        keys: [
          { id: 'k1', hash: hashApiKey(keyA) },
          { id: 'k2', hash: hashApiKey(keyB), created: '2026-01-01T00:00:00Z', label: 'rotation' },
        ],
      },
      {
        id: 'amina',
        name: 'Amina B.',
        role: 'operator',
        scopes: ['orders:read', 'reviews:write'],
        keys: [{ id: 'k1', hash: hashApiKey(keyC) }],
      },
    ],
  };
}

/** What must never appear in an error: any key or the hex of any hash. */
const secrets = [keyA, keyB, keyC, ...[keyA, keyB, keyC].map((k) => keyDigest(k).toString('hex'))];

function assertFileError(text: string, places: string[]): string {
  const path = '/etc/topup/clients.yaml';
  let message = '';
  assert.throws(
    () => parseClientsFile(text, path),
    (err: unknown) => {
      assert.ok(err instanceof ClientsFileError && err instanceof ConfigError, String(err));
      message = err.message;
      return true;
    },
  );
  assert.ok(message.startsWith(`Invalid clients file ${path}`), message);
  for (const place of places) assert.ok(message.includes(`  ${place}: `), `${message}\n  names ${place}`);
  for (const secret of secrets) assert.ok(!message.includes(secret), `no key or hash in: ${message}`);
  return message;
}

function withChange(change: (file: ClientsFile) => void): string {
  const file = validFile();
  change(file);
  return stringify(file);
}

describe('the clients file', () => {
  it('a valid file reads the same as YAML and as JSON', () => {
    const file = validFile();
    assert.deepEqual(parseClientsFile(stringify(file), 'clients.yaml'), file);
    assert.deepEqual(parseClientsFile(JSON.stringify(file), 'clients.json'), file);
  });

  const bad: [string, (f: ClientsFile) => void, string[], RegExp?][] = [
    [
      'an unknown scope',
      (f) => (f.clients[0]!.scopes = ['orders:delete' as 'orders:read']),
      ['clients[0].scopes[0]'],
    ],
    ['a client id with a dash', (f) => (f.clients[0]!.id = 'back-office'), ['clients[0].id']],
    ['a client id with a colon', (f) => (f.clients[0]!.id = 'a:b'), ['clients[0].id']],
    ['a client id with a dot', (f) => (f.clients[0]!.id = 'a.b'), ['clients[0].id']],
    ['an upper-case client id', (f) => (f.clients[0]!.id = 'Shop'), ['clients[0].id']],
    ['a client id of 25 characters', (f) => (f.clients[0]!.id = 'a'.repeat(25)), ['clients[0].id']],
    ['the same client twice', (f) => (f.clients[1]!.id = 'shop'), ['clients[1].id'], /also clients\[0\]/],
    [
      'a raw key where the hash belongs',
      (f) => (f.clients[0]!.keys[0]!.hash = keyA),
      ['clients[0].keys[0].hash'],
      /never the key/,
    ],
    [
      'one key hash for two clients',
      (f) => (f.clients[1]!.keys[0]!.hash = f.clients[0]!.keys[0]!.hash),
      ['clients[1].keys[0].hash'],
      /also at clients\[0\]\.keys\[0\]/,
    ],
    [
      'a key id used twice by one client',
      (f) => (f.clients[0]!.keys[1]!.id = 'k1'),
      ['clients[0].keys[1].id'],
    ],
    ['a default client that does not exist', (f) => (f.defaultClient = 'nobody'), ['defaultClient']],
    [
      'audit:read without orders:read',
      (f) => (f.clients[0]!.scopes = ['audit:read']),
      ['clients[0].scopes'],
      /add orders:read/,
    ],
    [
      'an operator without orders:read',
      (f) => (f.clients[1]!.scopes = ['reviews:write']),
      ['clients[1].scopes'],
    ],
    [
      'a scope listed twice',
      (f) => (f.clients[0]!.scopes = ['orders:read', 'orders:read']),
      ['clients[0].scopes'],
    ],
    ['a blank name', (f) => (f.clients[0]!.name = '  '), ['clients[0].name']],
    [
      'no key at all',
      (f) => f.clients.forEach((c) => (c.keys = [])),
      ['clients'],
      /nobody could call the API/,
    ],
    ['no clients', (f) => (f.clients = []), ['clients']],
    [
      'a misspelt field (scope for scopes)',
      (f) => Object.assign(f.clients[0]!, { scope: ['orders:read'] }),
      ['clients[0]'],
      /scope/,
    ],
    ['an unknown role', (f) => (f.clients[1]!.role = 'admin' as 'operator'), ['clients[1].role']],
    [
      'a webhook URL with a password in it',
      (f) => (f.clients[0]!.webhooks = [{ id: 'erp', url: 'https://user:pass@erp.example.com/hooks' }]),
      ['clients[0].webhooks[0].url'],
      /no user or password/,
    ],
    [
      'a webhook URL that is not http(s)',
      (f) => (f.clients[0]!.webhooks = [{ id: 'erp', url: 'ftp://erp.example.com/hooks' }]),
      ['clients[0].webhooks[0].url'],
    ],
    [
      'a webhook URL with a fragment',
      (f) => (f.clients[0]!.webhooks = [{ id: 'erp', url: 'https://erp.example.com/hooks#x' }]),
      ['clients[0].webhooks[0].url'],
    ],
    [
      'a relative webhook URL',
      (f) => (f.clients[0]!.webhooks = [{ id: 'erp', url: '/hooks' }]),
      ['clients[0].webhooks[0].url'],
    ],
    [
      'two endpoints with one id',
      (f) =>
        (f.clients[0]!.webhooks = [
          { id: 'erp', url: 'https://a.example.com/' },
          { id: 'erp', url: 'https://b.example.com/' },
        ]),
      ['clients[0].webhooks[1].id'],
    ],
    [
      'an unknown event type',
      (f) =>
        (f.clients[0]!.webhooks = [
          { id: 'erp', url: 'https://a.example.com/', events: ['order.shipped' as 'order.fulfilled'] },
        ]),
      ['clients[0].webhooks[0].events[0]'],
    ],
    [
      'a previous secret version that is not below the current one',
      (f) =>
        (f.clients[0]!.webhooks = [
          { id: 'erp', url: 'https://a.example.com/', secretVersion: 2, previousSecretVersion: 2 },
        ]),
      ['clients[0].webhooks[0].previousSecretVersion'],
    ],
    [
      'a secret in the endpoint (there is no such field: secrets are derived)',
      (f) =>
        (f.clients[0]!.webhooks = [
          Object.assign({ id: 'erp', url: 'https://a.example.com/' }, { secret: 'whsec_x' }),
        ]),
      ['clients[0].webhooks[0]'],
    ],
  ];
  for (const [name, change, places, detail] of bad) {
    it(`refuses ${name}, naming ${places.join(', ')}`, () => {
      const message = assertFileError(withChange(change), places);
      if (detail) assert.match(message, detail);
    });
  }

  it('refuses text that is not YAML, with its line and column but not the line itself', () => {
    const text = `clients:\n  - id: shop\n    keys: [{hash: sha256:${keyDigest(keyA).toString('hex')}\n`;
    const message = assertFileError(text, []);
    assert.match(message, /not valid YAML or JSON \(line \d+, column \d+\)/);
  });

  it('refuses an empty file and a list at the top', () => {
    assertFileError('', ['(file)']);
    assertFileError('- id: shop\n', ['(file)']);
  });

  it('readClientsFile names an unreadable file as a configuration error', () => {
    assert.throws(
      () => readClientsFile(join(dir, 'missing.yaml')),
      (err: unknown) =>
        err instanceof ConfigError &&
        /API_CLIENTS_FILE: cannot read .*missing\.yaml \(ENOENT\)/.test(err.message),
    );
  });
});

describe('the client registry', () => {
  const registry = new ClientRegistry(validFile());

  it('identifies each key’s client and which key it was; two keys of one client are the same client', () => {
    const a = registry.identify(keyA)!;
    const b = registry.identify(keyB)!;
    assert.deepEqual(
      { id: a.id, keyId: a.keyId, scopes: [...a.scopes], operator: a.operator },
      { id: 'shop', keyId: 'k1', scopes: ['orders:write', 'orders:read'], operator: false },
    );
    assert.equal(b.id, 'shop');
    assert.equal(b.keyId, 'k2');
    const c = registry.identify(keyC)!;
    assert.equal(c.id, 'amina');
    assert.equal(c.operator, true);
    assert.equal(c.name, 'Amina B.');
    assert.equal(registry.defaultClientId, 'shop');
  });

  it('knows no other key: a prefix, a suffix, another case, an empty string, a hash', () => {
    for (const presented of [keyA.slice(0, -1), `${keyA}x`, keyA.toUpperCase(), '', hashApiKey(keyA)])
      assert.equal(registry.identify(presented), undefined, presented);
  });

  it('replace swaps every client at once (a revoked key stops working)', () => {
    const reloaded = new ClientRegistry(validFile());
    const file = validFile();
    file.clients[0]!.keys = file.clients[0]!.keys.filter((k) => k.id !== 'k1');
    reloaded.replace(file);
    assert.equal(reloaded.identify(keyA), undefined);
    assert.equal(reloaded.identify(keyB)?.id, 'shop');
  });

  it('API_KEYS is one client, `default`, with every scope, and the default client', () => {
    const legacy = new ClientRegistry(legacyClientsFile(['one', 'two', 'one']));
    const caller = legacy.identify('two')!;
    assert.equal(caller.id, 'default');
    assert.deepEqual(
      [...caller.scopes],
      [
        'orders:write',
        'orders:read',
        'reviews:write',
        'audit:read',
        'audit:reveal',
        'webhooks:read',
        'webhooks:write',
      ],
    );
    assert.equal(legacy.identify('one')?.id, 'default');
    assert.equal(legacy.defaultClientId, 'default');
  });

  it('the configuration names one source of clients: the file, or API_KEYS, never both, never neither', () => {
    const path = join(dir, 'registry.yaml');
    writeFileSync(path, stringify(validFile()));
    assert.equal(clientsFromConfig({ API_CLIENTS_FILE: path, API_KEYS: undefined }).defaultClient, 'shop');
    assert.equal(
      clientsFromConfig({ API_CLIENTS_FILE: undefined, API_KEYS: ['k'] }).defaultClient,
      'default',
    );
    assert.throws(() => clientsFromConfig({ API_CLIENTS_FILE: path, API_KEYS: ['k'] }), /not both/);
    assert.throws(
      () => clientsFromConfig({ API_CLIENTS_FILE: undefined, API_KEYS: [] }),
      /API_CLIENTS_FILE: required/,
    );
  });
});

/** `npm run clients -- …`, as a user runs it (through tsx, as npm would). */
function clients(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  return clientsWith({}, ...args);
}

function clientsWith(
  env: Record<string, string>,
  ...args: string[]
): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/clients.ts', ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, API_CLIENTS_FILE: '', WEBHOOK_SIGNING_KEY: '', ...env },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('npm run clients', () => {
  it('add-client creates the file and prints the key once, alone on stdout; the file holds only its hash', () => {
    const file = join(dir, 'cli.yaml');
    const added = clients(
      'add-client',
      'acme',
      '--name',
      'Acme',
      '--scopes',
      'orders:write,orders:read',
      '--default',
      '--file',
      file,
    );
    assert.equal(added.status, 0, added.stderr);
    const key = added.stdout.trim();
    assert.match(key, /^tfk_[A-Za-z0-9_-]{43}$/);
    assert.equal(added.stdout, `${key}\n`, 'nothing else on stdout');
    assert.match(added.stderr, /shown once/);
    const text = readFileSync(file, 'utf8');
    assert.ok(!text.includes(key), 'the key is not in the file');
    assert.ok(text.includes(hashApiKey(key)), 'its hash is');
    assert.match(text, /^# Clients of the intake API/, 'a new file explains itself');
    const registry = new ClientRegistry(readClientsFile(file));
    assert.equal(registry.identify(key)?.id, 'acme');
    assert.equal(registry.defaultClientId, 'acme');
  });

  it('add-key adds a second working key (rotation), revoke-key removes the old one; comments stay', () => {
    const file = join(dir, 'rotate.yaml');
    const first = clients(
      'add-client',
      'shop',
      '--name',
      'Shop',
      '--scopes',
      'orders:read',
      '--file',
      file,
    ).stdout.trim();
    writeFileSync(file, `# kept by hand: who to call about this file\n${readFileSync(file, 'utf8')}`);
    const second = clients('add-key', 'shop', '--label', 'spring rotation', '--file', file);
    assert.equal(second.status, 0, second.stderr);
    const newKey = second.stdout.trim();
    let registry = new ClientRegistry(readClientsFile(file));
    const oldKeyId = registry.identify(first)!.keyId;
    assert.equal(registry.identify(newKey)?.id, 'shop');
    assert.notEqual(registry.identify(newKey)?.keyId, oldKeyId);

    const listed = clients('list', '--file', file);
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`key ${oldKeyId}`));
    assert.match(listed.stdout, /spring rotation/);
    assert.ok(
      !listed.stdout.includes('sha256:') && !listed.stdout.includes(first),
      'list shows no hash or key',
    );

    const revoked = clients('revoke-key', 'shop', oldKeyId, '--file', file);
    assert.equal(revoked.status, 0, revoked.stderr);
    registry = new ClientRegistry(readClientsFile(file));
    assert.equal(registry.identify(first), undefined, 'the old key is refused');
    assert.equal(registry.identify(newKey)?.id, 'shop', 'the new key works');
    assert.match(readFileSync(file, 'utf8'), /# kept by hand/);
  });

  it('add-webhook prints the endpoint’s secret alone on stdout; the file holds none; rotation signs with both until it ends', () => {
    const file = join(dir, 'webhooks.yaml');
    const signingKey = randomBytes(32);
    const env = { WEBHOOK_SIGNING_KEY: signingKey.toString('base64') };
    assert.equal(
      clients('add-client', 'acme', '--name', 'Acme', '--scopes', 'webhooks:read', '--file', file).status,
      0,
    );
    const added = clientsWith(
      env,
      'add-webhook',
      'acme',
      'erp',
      '--url',
      'https://erp.example.com/hooks',
      '--events',
      'order.fulfilled,order.failed',
      '--card-codes',
      '--file',
      file,
    );
    assert.equal(added.status, 0, added.stderr);
    assert.equal(added.stdout, `${endpointSecret(signingKey, 'acme', 'erp', 1)}\n`, 'the secret, alone');
    const text = readFileSync(file, 'utf8');
    assert.doesNotMatch(text, /whsec_/, 'no secret in the file');
    assert.deepEqual(readClientsFile(file).clients[0]!.webhooks, [
      {
        id: 'erp',
        url: 'https://erp.example.com/hooks',
        events: ['order.fulfilled', 'order.failed'],
        cardCodes: true,
      },
    ]);
    assert.equal(clientsWith(env, 'webhook-secret', 'acme', 'erp', '--file', file).stdout, added.stdout);

    const rotated = clientsWith(env, 'rotate-webhook-secret', 'acme', 'erp', '--file', file);
    assert.equal(rotated.status, 0, rotated.stderr);
    assert.equal(rotated.stdout, `${endpointSecret(signingKey, 'acme', 'erp', 2)}\n`);
    const endpoint = readClientsFile(file).clients[0]!.webhooks![0]!;
    assert.deepEqual([endpoint.secretVersion, endpoint.previousSecretVersion], [2, 1]);
    assert.match(clients('list', '--file', file).stdout, /webhook erp .* secret v2 {2}also v1 \(rotating\)/);
    assert.equal(clients('end-webhook-rotation', 'acme', 'erp', '--file', file).status, 0);
    assert.equal(readClientsFile(file).clients[0]!.webhooks![0]!.previousSecretVersion, undefined);

    const withoutKey = clients('webhook-secret', 'acme', 'erp', '--file', file);
    assert.equal(withoutKey.stdout, '', 'no WEBHOOK_SIGNING_KEY, no secret');
    assert.match(withoutKey.stderr, /WEBHOOK_SIGNING_KEY is not set/);
    const refused = clients(
      'add-webhook',
      'acme',
      'crm',
      '--url',
      'https://u:p@crm.example.com/',
      '--file',
      file,
    );
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /no user or password/);
    // A literal address the worker would refuse at every delivery is refused now, IPv6 forms that
    // embed a refused IPv4 address included; WEBHOOK_ALLOWED_NETWORKS opens what it names.
    for (const [url, range] of [
      ['http://127.0.0.1:8080/', /loopback/],
      ['http://2130706433/', /loopback/],
      ['http://[::127.0.0.1]:8080/', /loopback/],
      ['http://[::ffff:10.0.0.1]/', /private/],
      ['http://[64:ff9b::a00:1]/', /private/],
      ['http://[2002:a9fe:a9fe::]/', /link-local/],
      ['http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/', /loopback/],
    ] as const) {
      const literal = clients('add-webhook', 'acme', 'lit', '--url', url, '--file', file);
      assert.equal(literal.status, 2, `${url}: ${literal.stderr}`);
      assert.match(literal.stderr, range, url);
    }
    assert.equal(
      clientsWith(
        { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' },
        'add-webhook',
        'acme',
        'lit',
        '--url',
        'http://127.0.0.1:8080/',
        '--file',
        file,
      ).status,
      0,
    );
    assert.equal(clients('remove-webhook', 'acme', 'lit', '--file', file).status, 0);
    assert.equal(clients('remove-webhook', 'acme', 'erp', '--file', file).status, 0);
    assert.deepEqual(readClientsFile(file).clients[0]!.webhooks, []);
  });

  it('a JSON clients file stays JSON', () => {
    const file = join(dir, 'clients.json');
    assert.equal(
      clients('add-client', 'acme', '--name', 'Acme', '--scopes', 'orders:read', '--file', file).status,
      0,
    );
    assert.equal(clients('add-key', 'acme', '--file', file).status, 0);
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as ClientsFile;
    assert.equal(parsed.clients[0]!.keys.length, 2);
  });

  it('refuses what would break the file, and says why, changing nothing', () => {
    const file = join(dir, 'refusals.yaml');
    const key = clients(
      'add-client',
      'solo',
      '--name',
      'Solo',
      '--scopes',
      'orders:read',
      '--file',
      file,
    ).stdout.trim();
    const before = readFileSync(file, 'utf8');
    const keyId = new ClientRegistry(readClientsFile(file)).identify(key)!.keyId;
    const cases: [string[], RegExp][] = [
      [['revoke-key', 'solo', keyId], /no client has a key/],
      [['revoke-key', 'solo', 'k-none'], /has no key "k-none"/],
      [['add-key', 'nobody'], /No client "nobody"/],
      [['add-client', 'solo', '--name', 'Again', '--scopes', 'orders:read'], /already/],
      [['add-client', 'Bad-Id', '--name', 'X', '--scopes', 'orders:read'], /not a client id/],
      [['add-client', 'x', '--name', 'X', '--scopes', 'orders:delete'], /unknown scope orders:delete/],
      [['add-client', 'x', '--name', 'X', '--scopes', 'audit:read'], /add orders:read/],
      [['frobnicate'], /unknown command/],
    ];
    for (const [args, message] of cases) {
      const result = clients(...args, '--file', file);
      assert.equal(result.status, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, message, args.join(' '));
      assert.equal(result.stdout, '', 'no key printed');
    }
    assert.equal(readFileSync(file, 'utf8'), before, 'the file is unchanged');
    assert.equal(clients('list').status, 2, 'no file named: a usage error');
  });
});

describe('key rotation against the running API (npm run api)', { timeout: 120_000 }, () => {
  it('a key added by `npm run clients` works after SIGHUP; a revoked one is refused after the next', async () => {
    const file = join(dir, 'live.yaml');
    // A client that may only write: GET /v1/orders answers 403 for its keys (known, no scope) and
    // 401 for anything else, before Temporal (unreachable here) is ever asked.
    const first = clients(
      'add-client',
      'live',
      '--name',
      'Live',
      '--scopes',
      'orders:write',
      '--file',
      file,
    ).stdout.trim();
    const port = await freePort();
    const api = spawn(process.execPath, ['--import', 'tsx', 'src/api/main.ts'], {
      cwd: root,
      env: {
        ...process.env,
        API_CLIENTS_FILE: file,
        API_KEYS: '',
        PORT: String(port),
        API_HOST: '127.0.0.1',
        PROVIDER_API_KEY: 'unused',
        TEMPORAL_ADDRESS: '127.0.0.1:1',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    api.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    api.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const status = async (key: string) =>
      (await fetch(`http://127.0.0.1:${port}/v1/orders`, { headers: { authorization: `Bearer ${key}` } }))
        .status;
    const eventually = async (key: string, expected: number) => {
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(100))
        if ((await status(key)) === expected) return;
      assert.equal(await status(key), expected, output);
    };
    try {
      for (const deadline = Date.now() + 60_000; !output.includes('intake API listening'); await sleep(100)) {
        assert.ok(Date.now() < deadline && api.exitCode === null, `the API did not start:\n${output}`);
      }
      assert.equal(await status(first), 403);

      const second = clients('add-key', 'live', '--file', file).stdout.trim();
      assert.equal(await status(second), 401, 'not before the API reloads');
      api.kill('SIGHUP');
      await eventually(second, 403);
      assert.equal(await status(first), 403, 'both keys work during the rotation');

      const keyId = new ClientRegistry(readClientsFile(file)).identify(first)!.keyId;
      assert.equal(clients('revoke-key', 'live', keyId, '--file', file).status, 0);
      api.kill('SIGHUP');
      await eventually(first, 401);
      assert.equal(await status(second), 403);

      // A broken file is not taken: the API keeps its clients and says so, without a hash.
      writeFileSync(file, readFileSync(file, 'utf8').replace(/hash: sha256:/, 'hash: '));
      api.kill('SIGHUP');
      for (const deadline = Date.now() + 10_000; !output.includes('NOT reloaded'); await sleep(100))
        assert.ok(Date.now() < deadline, output);
      assert.equal(await status(second), 403, 'the last good clients stay');
      assert.ok(!output.includes(keyDigest(second).toString('hex')), 'no hash in the log');
      assert.ok(!output.includes(second) && !output.includes(first), 'no key in the log');
    } finally {
      api.kill('SIGTERM');
      await new Promise((r) => api.once('exit', r));
    }
  });
});
