import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, defaultPayloadConverter, type Payload } from '@temporalio/common';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { Express } from 'express';
import pino from 'pino';
import { request } from 'undici';
import {
  ENCRYPTED_ENCODING,
  EncryptionCodec,
  PayloadDecryptionError,
  createEncryptionCodecFromConfig,
  parseEncryptionKeys,
} from '../../src/codec/encryption-codec';
import { dataConverterFromConfig, failureConverterPath } from '../../src/codec/data-converter';
import type * as failureConverterModule from '../../src/codec/failure-converter';
import { createCodecServer } from '../../src/codec/server';
import { rawHistory as readRawHistory, toJsonPayload, type RawPayload } from '../helpers/raw-history';
import { ConfigError } from '../../src/config';
import { findTemporalCli } from '../../src/temporal/cli';
import type {
  CardOrder,
  CodecTestActivities,
  codecDeliverWorkflow,
  codecRefuseWorkflow,
} from '../fixtures/codec-workflow';
import { useTemporal, type TestTemporal } from '../helpers/temporal';

const MARKER = 'CARD-CODE-1234567890';
const TOKEN = 'test-token-0123456789abcdef';
const UI_ORIGIN = 'http://localhost:8233';

const newKey = () => randomBytes(32).toString('base64');
const codecWith = (keys: string) => new EncryptionCodec(parseEncryptionKeys(keys));
const secretPayload = (): Payload =>
  defaultPayloadConverter.toPayload({ cardCode: MARKER, msisdn: '0600000001' });

/** Payloads as comparable plain values (decode returns protobuf message instances). */
function plain(payload: Payload): { metadata: Record<string, string>; data: string } {
  const metadata = Object.entries(payload.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString()]);
  return { metadata: Object.fromEntries(metadata), data: Buffer.from(payload.data ?? []).toString() };
}

function assertNoSecret(message: string, ...secrets: string[]): void {
  for (const secret of [MARKER, ...secrets])
    assert.ok(!message.includes(secret), `"${message}" leaks a secret`);
}

describe('EncryptionCodec', () => {
  it('when a payload is encoded then decoded, the original payload comes back', async () => {
    const codec = codecWith(`k1:${newKey()}`);
    const original = secretPayload();
    const [encoded] = await codec.encode([original]);
    const [decoded] = await codec.decode([encoded!]);
    assert.deepEqual(plain(decoded!), plain(original));
  });

  it('when encoded, the payload is marked binary/encrypted with the key id and holds no plaintext', async () => {
    const codec = codecWith(`k1:${newKey()}`);
    const [a, b] = await codec.encode([secretPayload(), secretPayload()]);
    assert.deepEqual(plain(a!).metadata, { encoding: ENCRYPTED_ENCODING, 'encryption-key-id': 'k1' });
    const data = Buffer.from(a!.data!);
    assert.ok(!data.includes(MARKER), 'the card code is not in the ciphertext');
    assert.ok(!data.includes('json/plain'), 'the original metadata is encrypted too');
    assert.notDeepEqual(a!.data, b!.data, 'a fresh IV per payload: equal inputs give different ciphertexts');
  });

  it('when a payload was not encrypted, decode passes it through unchanged', async () => {
    const codec = codecWith(`k1:${newKey()}`);
    const original = secretPayload();
    const [decoded] = await codec.decode([original]);
    assert.equal(decoded, original);
  });

  it('when keys rotate, old payloads still decode and new ones use the new key id', async () => {
    const oldKey = `old:${newKey()}`;
    const [written] = await codecWith(oldKey).encode([secretPayload()]);
    const rotated = codecWith(`new:${newKey()},${oldKey}`);
    const [decoded] = await rotated.decode([written!]);
    assert.deepEqual(plain(decoded!), plain(secretPayload()));
    const [fresh] = await rotated.encode([secretPayload()]);
    assert.equal(plain(fresh!).metadata['encryption-key-id'], 'new');
  });

  it('when the key id is unknown, decode fails naming the id but no key or plaintext', async () => {
    const oldKey = newKey();
    const [written] = await codecWith(`old:${oldKey}`).encode([secretPayload()]);
    const otherKey = newKey();
    await assert.rejects(codecWith(`new:${otherKey}`).decode([written!]), (err: Error) => {
      assert.ok(err instanceof PayloadDecryptionError);
      assert.match(err.message, /key id "old", which is not in PAYLOAD_ENCRYPTION_KEYS/);
      assertNoSecret(err.message, oldKey, otherKey);
      return true;
    });
  });

  it('when the ciphertext, IV or tag is altered or truncated, decode fails without plaintext or key', async () => {
    const key = newKey();
    const codec = codecWith(`k1:${key}`);
    const [written] = await codec.encode([secretPayload()]);
    const data = Buffer.from(written!.data!);
    const flip = (i: number) => Buffer.from(data).fill(data[i]! ^ 1, i, i + 1);
    for (const altered of [
      flip(0),
      flip(20),
      flip(data.length - 1),
      data.subarray(0, 20),
      data.subarray(0, 40),
    ]) {
      await assert.rejects(codec.decode([{ ...written!, data: altered }]), (err: Error) => {
        assert.ok(err instanceof PayloadDecryptionError);
        assert.match(err.message, /failed authentication/);
        assertNoSecret(err.message, key);
        return true;
      });
    }
  });

  it('when an encrypted payload has no key id, decode says so', async () => {
    const codec = codecWith(`k1:${newKey()}`);
    const [written] = await codec.encode([secretPayload()]);
    const noKeyId = { metadata: { encoding: written!.metadata!.encoding! }, data: written!.data! };
    await assert.rejects(codec.decode([noKeyId]), /no encryption-key-id/);
  });
});

describe('parseEncryptionKeys', () => {
  it('when several keys are given, the first encrypts and all decrypt', () => {
    const keys = parseEncryptionKeys(` a:${newKey()} , b.2:${newKey()},`);
    assert.equal(keys.currentKeyId, 'a');
    assert.deepEqual([...keys.keys.keys()], ['a', 'b.2']);
  });

  const bad: [string, string, RegExp][] = [
    [
      'a key of the wrong length',
      `k1:${randomBytes(16).toString('base64')}`,
      /"k1"\): the key decodes to 16 bytes/,
    ],
    ['a key that is not base64', `k1:${'*'.repeat(44)}`, /"k1"\): the key is not standard base64/],
    ['an entry without a key id', newKey(), /entry 1: expected keyId:base64key/],
    ['a duplicate key id', `k1:${newKey()},k1:${newKey()}`, /entry 2: key id "k1" is used twice/],
    ['an unsafe key id', `k 1/x:${newKey()}`, /entry 1: the key id must be/],
    ['nothing at all', ' , ', /no key/],
  ];
  for (const [what, value, expected] of bad) {
    it(`when given ${what}, it refuses with a message that does not print the key`, () => {
      assert.throws(
        () => parseEncryptionKeys(value),
        (err: Error) => {
          assert.ok(err instanceof ConfigError);
          assert.match(err.message, /PAYLOAD_ENCRYPTION_KEYS/);
          assert.match(err.message, expected);
          for (const part of value.split(/[:,]/).filter((p) => p.trim().length > 8))
            assertNoSecret(err.message, part);
          return true;
        },
      );
    });
  }

  it('when several entries are bad, every one is reported', () => {
    assert.throws(() => parseEncryptionKeys(`a:short,b:${newKey()},nokey`), /entry 1 \("a"\)[^]*entry 3:/);
  });
});

describe('configuration helpers', () => {
  it('when PAYLOAD_ENCRYPTION_KEYS is unset, there is no codec and the data converter is the default', () => {
    assert.equal(createEncryptionCodecFromConfig({ PAYLOAD_ENCRYPTION_KEYS: undefined }), undefined);
    assert.deepEqual(dataConverterFromConfig({ PAYLOAD_ENCRYPTION_KEYS: undefined }), {});
  });

  it('when keys are set, the data converter has the codec and the encoding failure converter', async () => {
    const converter = dataConverterFromConfig({ PAYLOAD_ENCRYPTION_KEYS: `k1:${newKey()}` });
    assert.equal(converter.payloadCodecs?.length, 1);
    assert.equal(converter.failureConverterPath, failureConverterPath);
    const { failureConverter } = (await import(failureConverterPath)) as typeof failureConverterModule;
    assert.equal(failureConverter.options.encodeCommonAttributes, true);
  });
});

// ---------------------------------------------------------------------------------------------------

interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** The namespace the codec servers of these tests serve (but the one against a real Temporal server). */
const NAMESPACE = 'default';

async function call(
  base: string,
  path: string,
  options: { method?: 'POST' | 'OPTIONS' | 'GET'; headers?: Record<string, string>; body?: unknown } = {},
): Promise<HttpAnswer> {
  const { method = 'POST', headers = {}, body } = options;
  const res = await request(base + path, {
    method,
    headers: {
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      // What Temporal UI and the CLI send with every call; a test that omits it says so.
      ...(method === 'POST' ? { 'x-namespace': NAMESPACE } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

async function listen(app: Express): Promise<{ base: string; close: () => Promise<void> }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((ok, fail) => server.once('listening', ok).once('error', fail));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((ok) => server.close(() => ok())).finally(() => server.closeAllConnections()),
  };
}

function captureLogs(): { logger: pino.Logger; lines: () => Record<string, unknown>[]; raw: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const raw = () => chunks.join('');
  const lines = () =>
    raw()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { logger: pino({ level: 'info' }, stream), lines, raw };
}

describe('codec server with bearer tokens', () => {
  const key = newKey();
  const codec = codecWith(`k1:${key}`);
  const logs = captureLogs();
  const auth = { authorization: `Bearer ${TOKEN}` };
  let base: string;
  let close: () => Promise<void>;

  before(async () => {
    const app = createCodecServer({
      codec,
      namespace: NAMESPACE,
      authTokens: ['another-token-0123456789', TOKEN],
      corsOrigins: [UI_ORIGIN],
      logger: logs.logger,
      bodyLimit: '16kb',
    });
    ({ base, close } = await listen(app));
  });
  after(() => close());

  it('serves its own namespace only: another X-Namespace is a 403, none a 400, and nothing is decoded or encoded', async () => {
    const original = toJsonPayload(secretPayload());
    const encoded = await call(base, '/encode', { headers: auth, body: { payloads: [original] } });
    assert.equal(encoded.status, 200, encoded.text);
    for (const [namespace, status] of [
      ['other-namespace', 403],
      ['', 400],
    ] as const) {
      for (const [path, body] of [
        ['/decode', encoded.text],
        ['/encode', { payloads: [original] }],
      ] as const) {
        const answer = await call(base, path, { headers: { ...auth, 'x-namespace': namespace }, body });
        assert.equal(answer.status, status, `${path} for ${JSON.stringify(namespace)}: ${answer.text}`);
        assert.equal((JSON.parse(answer.text) as { payloads?: unknown }).payloads, undefined, 'no payloads');
      }
    }
    const own = await call(base, '/decode', {
      headers: { ...auth, 'x-namespace': NAMESPACE },
      body: encoded.text,
    });
    assert.equal(own.status, 200);
  });

  it('when a client encodes then decodes over HTTP, it gets the original payloads back', async () => {
    const original = toJsonPayload(secretPayload());
    const encoded = await call(base, '/encode', { headers: auth, body: { payloads: [original] } });
    assert.equal(encoded.status, 200);
    assert.ok(!Buffer.from(encoded.text).includes(original.data), 'the encoded answer holds no plaintext');
    const decoded = await call(base, '/any/prefix/decode', {
      headers: { ...auth, 'x-namespace': 'default' },
      body: encoded.text,
    });
    assert.equal(decoded.status, 200);
    assert.equal(decoded.headers['cache-control'], 'no-store');
    assert.deepEqual(JSON.parse(decoded.text), { payloads: [original] });
  });

  it('when a payload with no data is encrypted (undefined, as a void activity returns), it decodes over HTTP', async () => {
    const nothing = defaultPayloadConverter.toPayload(undefined);
    assert.equal(nothing.data?.length ?? 0, 0, 'binary/null carries no data');
    const [encrypted] = await codec.encode([nothing]);
    const decoded = await call(base, '/decode', {
      headers: auth,
      body: { payloads: [toJsonPayload(encrypted!)] },
    });
    assert.equal(decoded.status, 200, decoded.text);
    assert.deepEqual(JSON.parse(decoded.text), { payloads: [toJsonPayload(nothing)] });
  });

  it('when an empty list of payloads is sent, an empty list comes back', async () => {
    const answer = await call(base, '/decode', { headers: auth, body: { payloads: [] } });
    assert.equal(answer.status, 200);
    assert.deepEqual(JSON.parse(answer.text), { payloads: [] });
  });

  for (const [what, authorization] of [
    ['no token', undefined],
    ['a wrong token', 'Bearer not-the-right-token-at-all'],
    ['the token without the Bearer scheme', TOKEN],
  ] as const) {
    it(`when a request carries ${what}, it is refused with 401`, async () => {
      const answer = await call(base, '/decode', {
        headers: authorization ? { authorization } : {},
        body: { payloads: [] },
      });
      assert.equal(answer.status, 401);
      assert.match(String(answer.headers['www-authenticate']), /^Bearer/);
    });
  }

  it('when the Temporal UI origin sends a preflight, it is allowed with the headers the UI sends', async () => {
    const answer = await call(base, '/decode', {
      method: 'OPTIONS',
      headers: {
        origin: UI_ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-namespace,authorization',
      },
    });
    assert.equal(answer.status, 204);
    assert.equal(answer.headers['access-control-allow-origin'], UI_ORIGIN);
    for (const header of ['content-type', 'x-namespace', 'authorization']) {
      assert.match(String(answer.headers['access-control-allow-headers']), new RegExp(header));
    }
  });

  it('when another origin sends a preflight or a request, it is refused with no CORS headers', async () => {
    const preflight = await call(base, '/decode', {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    assert.equal(preflight.status, 403);
    assert.equal(preflight.headers['access-control-allow-origin'], undefined);
    const post = await call(base, '/decode', {
      headers: { ...auth, origin: 'https://evil.example' },
      body: { payloads: [] },
    });
    assert.equal(post.status, 403);
  });

  describe('a browser signed in at /login (how Temporal UI, which holds no token, decodes)', () => {
    const signIn = (token: string, origin?: string) =>
      request(`${base}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(origin ? { origin } : {}) },
        body: new URLSearchParams({ token }).toString(),
      });

    it('GET /login serves the sign-in form', async () => {
      const page = await call(base, '/login', { method: 'GET' });
      assert.equal(page.status, 200);
      assert.match(page.text, /<form method="post"/);
    });

    it('a wrong token gets 401 and no cookie', async () => {
      const res = await signIn('not-the-right-token-at-all', base);
      await res.body.text();
      assert.equal(res.statusCode, 401);
      assert.equal(res.headers['set-cookie'], undefined);
    });

    it('a sign-in posted from another origin is refused', async () => {
      const res = await signIn(TOKEN, 'https://evil.example');
      await res.body.text();
      assert.equal(res.statusCode, 403);
      assert.equal(res.headers['set-cookie'], undefined);
    });

    it("a valid token gets an HttpOnly, SameSite=Strict cookie that is not the token, and the UI's decode call with it succeeds", async () => {
      const res = await signIn(TOKEN, base);
      assert.equal(res.statusCode, 200, await res.body.text());
      const cookie = String(res.headers['set-cookie']);
      assert.match(
        cookie,
        /^codec_session=[^;]+; Max-Age=28800; Path=\/; Expires=[^;]+; HttpOnly; SameSite=Strict$/,
      );
      assert.ok(!cookie.includes(TOKEN), 'the cookie does not hold the token');
      const session = cookie.split(';')[0]!;

      // The UI: a preflight without credentials, then the call with the cookie.
      const preflight = await call(base, '/decode', {
        method: 'OPTIONS',
        headers: {
          origin: UI_ORIGIN,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,x-namespace',
        },
      });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers['access-control-allow-credentials'], 'true');
      const original = toJsonPayload(secretPayload());
      const encoded = await call(base, '/encode', { headers: auth, body: { payloads: [original] } });
      const decoded = await call(base, '/decode', {
        headers: { origin: UI_ORIGIN, cookie: session, 'x-namespace': 'default' },
        body: encoded.text,
      });
      assert.equal(decoded.status, 200, decoded.text);
      assert.equal(decoded.headers['access-control-allow-origin'], UI_ORIGIN);
      assert.deepEqual(JSON.parse(decoded.text), { payloads: [original] });
    });

    it('a forged, altered or expired session cookie is refused with 401', async () => {
      const expired = `${Date.now() - 1_000}.${Buffer.alloc(32).toString('base64url')}`;
      const valid = String((await signIn(TOKEN, base)).headers['set-cookie'])
        .split(';')[0]!
        .split('=')[1]!;
      const altered = `${Number(valid.split('.')[0]) + 1}.${valid.split('.')[1]}`;
      for (const value of [expired, altered, 'anything', TOKEN]) {
        const answer = await call(base, '/decode', {
          headers: { cookie: `codec_session=${value}` },
          body: { payloads: [] },
        });
        assert.equal(answer.status, 401, value);
      }
    });
  });

  it('when the body is larger than the limit, it is refused with 413', async () => {
    const big = { payloads: [{ metadata: {}, data: Buffer.alloc(32 * 1024).toString('base64') }] };
    const answer = await call(base, '/encode', { headers: auth, body: big });
    assert.equal(answer.status, 413);
  });

  const malformed: [string, unknown][] = [
    ['invalid JSON', '{"payloads": ['],
    ['no payloads', {}],
    ['payloads that are not a list', { payloads: 'x' }],
    ['data that is not base64', { payloads: [{ data: 'not base64!' }] }],
    ['metadata values that are not strings', { payloads: [{ metadata: { encoding: 3 } }] }],
    ['a JSON array', [1, 2]],
  ];
  for (const [what, body] of malformed) {
    it(`when the body is ${what}, the answer is 400, never 500`, async () => {
      const answer = await call(base, '/decode', { headers: auth, body });
      assert.equal(answer.status, 400);
      assert.equal(answer.headers['content-type'], 'application/problem+json; charset=utf-8');
    });
  }

  it('when the body is not JSON, the answer is 415', async () => {
    const answer = await call(base, '/decode', {
      headers: { ...auth, 'content-type': 'text/plain' },
      body: 'payloads',
    });
    assert.equal(answer.status, 415);
  });

  it('when a payload was tampered with, decode answers 400 with no plaintext or key', async () => {
    const [encoded] = await codec.encode([secretPayload()]);
    const data = Buffer.from(encoded!.data!);
    data[30]! ^= 1;
    const answer = await call(base, '/decode', {
      headers: auth,
      body: { payloads: [toJsonPayload({ ...encoded!, data })] },
    });
    assert.equal(answer.status, 400);
    assert.match(answer.text, /failed authentication/);
    assertNoSecret(answer.text, key);
  });

  it('when requests were served, the log has one line each with no payload content, token or key', async () => {
    const decodedData = toJsonPayload(secretPayload()).data;
    const log = logs.raw();
    for (const secret of [MARKER, decodedData, TOKEN, key])
      assert.ok(!log.includes(secret), 'no secret in the log');
    const decode = logs.lines().find((l) => l.path === '/any/prefix/decode');
    assert.ok(decode, 'the decode request was logged');
    assert.deepEqual(
      Object.keys(decode)
        .filter((k) => !['level', 'time', 'pid', 'hostname'].includes(k))
        .sort(),
      ['durationMs', 'method', 'msg', 'namespace', 'path', 'payloads', 'status'],
    );
    assert.equal(decode.payloads, 1);
    assert.equal(decode.status, 200);
  });
});

describe('codec server in local mode (no tokens)', () => {
  const codec = codecWith(`k1:${newKey()}`);
  let base: string;
  let close: () => Promise<void>;
  before(async () => {
    const app = createCodecServer({
      codec,
      namespace: NAMESPACE,
      authTokens: [],
      corsOrigins: [UI_ORIGIN],
      logger: pino({ level: 'silent' }),
    });
    ({ base, close } = await listen(app));
  });
  after(() => close());

  it('when the Temporal UI or the local CLI calls without a token, it is served', async () => {
    const fromUi = await call(base, '/decode', { headers: { origin: UI_ORIGIN }, body: { payloads: [] } });
    assert.equal(fromUi.status, 200);
    assert.equal(fromUi.headers['access-control-allow-origin'], UI_ORIGIN);
    const fromCli = await call(base, '/decode', { body: { payloads: [] } });
    assert.equal(fromCli.status, 200);
  });

  it('when a web page from another origin calls, it is refused', async () => {
    const answer = await call(base, '/decode', {
      headers: { origin: 'http://evil.example' },
      body: { payloads: [] },
    });
    assert.equal(answer.status, 403);
  });

  it('when the Host is not a loopback name (DNS rebinding), it is refused', async () => {
    const answer = await call(base, '/decode', {
      headers: { host: 'evil.example:8888' },
      body: { payloads: [] },
    });
    assert.equal(answer.status, 403);
  });
});

// ---------------------------------------------------------------------------------------------------

const root = resolve(__dirname, '..', '..');

/** Runs `src/codec/main.ts` with only the given environment; stops it with SIGTERM once it listens. */
async function runMain(
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'codec', 'main.ts')], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', CODEC_PORT: '0', ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const wasListening = stdout.includes('codec server listening');
    stdout += chunk.toString();
    // Once: a second SIGTERM is the operator's "stop now" and would skip the graceful path.
    if (!wasListening && stdout.includes('codec server listening')) child.kill('SIGTERM');
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = await new Promise<number | null>((ok) => child.once('exit', ok));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

describe('npm run codec (src/codec/main.ts)', () => {
  it('when PAYLOAD_ENCRYPTION_KEYS is unset, it refuses to start', async () => {
    const { code, stderr } = await runMain({});
    assert.equal(code, 1);
    assert.match(stderr, /PAYLOAD_ENCRYPTION_KEYS: required/);
  });

  it('when a key is malformed, it refuses to start without printing the key', async () => {
    const shortKey = randomBytes(20).toString('base64');
    const { code, stderr } = await runMain({ PAYLOAD_ENCRYPTION_KEYS: `k1:${shortKey}` });
    assert.equal(code, 1);
    assert.match(stderr, /PAYLOAD_ENCRYPTION_KEYS: entry 1 \("k1"\)/);
    assertNoSecret(stderr, shortKey);
  });

  it('when there are no tokens and the host is not loopback, it refuses to start', async () => {
    const { code, stderr } = await runMain({
      PAYLOAD_ENCRYPTION_KEYS: `k1:${newKey()}`,
      CODEC_HOST: '0.0.0.0',
    });
    assert.equal(code, 1);
    assert.match(stderr, /CODEC_HOST: without CODEC_AUTH_TOKENS/);
  });

  it('when configured, it listens on loopback and exits cleanly on SIGTERM', async () => {
    const { code, stdout } = await runMain({
      PAYLOAD_ENCRYPTION_KEYS: `k1:${newKey()}`,
      CODEC_AUTH_TOKENS: TOKEN,
    });
    assert.equal(code, 0);
    assert.match(stdout, /"url":"http:\/\/127\.0\.0\.1:\d+","port":\d+,"mode":"token"/);
    assert.match(stdout, /codec server stopping/);
    assertNoSecret(stdout, TOKEN);
  });
});

// ---------------------------------------------------------------------------------------------------

describe('end to end with a Temporal server', () => {
  const keys = `k1:${newKey()}`;
  const dataConverter = dataConverterFromConfig({ PAYLOAD_ENCRYPTION_KEYS: keys });
  const taskQueue = `codec-test-${randomBytes(4).toString('hex')}`;
  const activities: CodecTestActivities = {
    deliverCard: async (order) => order.cardCode,
    refuseCard: async (order) => {
      throw ApplicationFailure.nonRetryable(`provider refused card ${order.cardCode}`, 'ProviderRefused');
    },
  };
  let temporalServer: TestTemporal;
  let connection: Connection;
  let nativeConnection: NativeConnection;
  let client: Client;
  let worker: Worker;
  let workerRun: Promise<void>;
  let codecServer: { base: string; close: () => Promise<void> };

  before(async () => {
    // The SDK logs failed activities with their messages at WARN: keep the marker out of test output.
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    temporalServer = await useTemporal();
    connection = await Connection.connect({ address: temporalServer.address });
    client = new Client({ connection, namespace: temporalServer.namespace, dataConverter });
    nativeConnection = await NativeConnection.connect({ address: temporalServer.address });
    worker = await Worker.create({
      connection: nativeConnection,
      namespace: temporalServer.namespace,
      taskQueue,
      workflowsPath: resolve(__dirname, '..', 'fixtures', 'codec-workflow.ts'),
      activities,
      dataConverter,
    });
    workerRun = worker.run();
    const app = createCodecServer({
      codec: codecWith(keys),
      namespace: temporalServer.namespace,
      authTokens: [TOKEN],
      corsOrigins: [],
      logger: pino({ level: 'silent' }),
    });
    codecServer = await listen(app);
  });

  after(async () => {
    worker?.shutdown();
    await workerRun;
    await nativeConnection?.close();
    await connection?.close();
    await codecServer?.close();
    await temporalServer?.stop();
  });

  /** The raw history: its bytes and its payloads, exactly as Temporal Server stores them. */
  async function rawHistory(workflowId: string): Promise<{ bytes: Buffer; payloads: RawPayload[] }> {
    const raw = await readRawHistory(client.workflowService, temporalServer.namespace, workflowId);
    assert.ok(raw.eventCount > 0, 'the history has events');
    return raw;
  }

  /** What an operator sees through Temporal UI or the CLI: the payloads decoded by the codec server. */
  async function decodeThroughServer(payloads: RawPayload[]): Promise<string[]> {
    const answer = await call(codecServer.base, '/decode', {
      headers: { authorization: `Bearer ${TOKEN}`, 'x-namespace': temporalServer.namespace },
      body: { payloads: payloads.map(toJsonPayload) },
    });
    assert.equal(answer.status, 200);
    const { payloads: decoded } = JSON.parse(answer.text) as { payloads: { data: string }[] };
    return decoded.map((p) => Buffer.from(p.data, 'base64').toString());
  }

  it('when an order carries a card code, history holds it only encrypted and the codec server reveals it', async () => {
    const order: CardOrder = { ref: `e2e-${randomBytes(4).toString('hex')}`, cardCode: MARKER };
    const workflowId = `codec-deliver-${order.ref}`;
    const result = await client.workflow.execute<typeof codecDeliverWorkflow>('codecDeliverWorkflow', {
      taskQueue,
      workflowId,
      args: [order],
    });
    assert.deepEqual(result, { ref: order.ref, delivered: MARKER }, 'the client decrypts the result');

    const { bytes, payloads } = await rawHistory(workflowId);
    assert.ok(!bytes.includes(MARKER), 'the card code is nowhere in the raw history');
    assert.ok(payloads.length >= 4, 'input, activity input, activity result and workflow result');
    for (const payload of payloads) {
      assert.equal(Buffer.from(payload.metadata!.encoding!).toString(), ENCRYPTED_ENCODING);
    }
    const decoded = await decodeThroughServer(payloads);
    assert.ok(
      decoded.filter((d) => d.includes(MARKER)).length >= 4,
      'every payload decodes to the card code',
    );
  });

  it('when the temporal CLI shows the workflow with --codec-endpoint and --codec-auth, it sees the card code', async (t) => {
    const cli = findTemporalCli();
    if (!cli) return t.skip('no temporal CLI (npm run setup installs it)');
    const order: CardOrder = { ref: `e2e-${randomBytes(4).toString('hex')}`, cardCode: MARKER };
    const workflowId = `codec-cli-${order.ref}`;
    await client.workflow.execute<typeof codecDeliverWorkflow>('codecDeliverWorkflow', {
      taskQueue,
      workflowId,
      args: [order],
    });
    /** The CLI's JSON output keeps payload data in base64: decode every data field. */
    const show = async (...codecArgs: string[]) => {
      const { stdout } = await promisify(execFile)(cli, [
        ...['workflow', 'show', '--workflow-id', workflowId, '--output', 'json'],
        ...['--address', temporalServer.address, '--namespace', temporalServer.namespace, ...codecArgs],
      ]);
      const data = [...stdout.matchAll(/"data":\s*"([A-Za-z0-9+/=]*)"/g)].map((m) =>
        Buffer.from(m[1]!, 'base64'),
      );
      return Buffer.concat([Buffer.from(stdout), ...data]).toString();
    };
    const withCodec = await show('--codec-endpoint', codecServer.base, '--codec-auth', `Bearer ${TOKEN}`);
    assert.ok(withCodec.includes(MARKER), 'decoded through the codec server');
    const without = await show();
    assert.ok(!without.includes(MARKER), 'without the codec the CLI sees only ciphertext');
  });

  it('when an order fails with the card code in its messages, the failures are encrypted too', async () => {
    const order: CardOrder = { ref: `e2e-${randomBytes(4).toString('hex')}`, cardCode: MARKER };
    const workflowId = `codec-refuse-${order.ref}`;
    await assert.rejects(
      client.workflow.execute<typeof codecRefuseWorkflow>('codecRefuseWorkflow', {
        taskQueue,
        workflowId,
        args: [order],
      }),
      (err: Error) => {
        assert.ok(err instanceof WorkflowFailedError);
        assert.match(
          String(err.cause?.message),
          new RegExp(`refused for card ${MARKER}`),
          'the client decrypts',
        );
        return true;
      },
    );

    const { bytes, payloads } = await rawHistory(workflowId);
    assert.ok(!bytes.includes(MARKER), 'no card code in any failure message or stack trace');
    assert.ok(bytes.includes('Encoded failure'), 'failure messages were moved into encoded attributes');
    const decoded = await decodeThroughServer(payloads);
    const messages = decoded.filter((d) => d.includes('"stack_trace"')).join('\n');
    assert.match(
      messages,
      new RegExp(`provider refused card ${MARKER}`),
      "the activity's failure (Worker side)",
    );
    assert.match(messages, new RegExp(`refused for card ${MARKER}`), "the workflow's failure (sandbox side)");
  });
});
