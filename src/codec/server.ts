/**
 * The codec endpoint that lets Temporal UI and the `temporal` CLI show encrypted payloads to operators
 * (Temporal's remote codec protocol): `POST …/encode` and `POST …/decode`, each taking and returning
 * `{ payloads: [{ metadata: { key: base64 }, data: base64 }] }` (Payloads as proto3 JSON). Only the last
 * path segment counts, as the protocol asks, so a proxy may mount it under any prefix.
 *
 * Who may call it — two modes, chosen by whether tokens are configured (CODEC_AUTH_TOKENS):
 *
 * - Token mode: every /encode and /decode needs `Authorization: Bearer <token>`, or the session cookie
 *   of a browser that signed in. The CLI sends the token with `--codec-auth "Bearer <token>"`. Temporal UI
 *   cannot hold a static token, so an operator signs in once per browser at `/login` with a token; the
 *   cookie (HttpOnly, SameSite=Strict, 8 h, an HMAC of its expiry under the token — never the token) then
 *   rides along on the UI's decode calls when the UI includes credentials
 *   (TEMPORAL_CODEC_INCLUDE_CREDENTIALS=true; the UI and this server must be the same site, e.g. both
 *   on localhost or both under one domain). With "Pass the user access token" the UI forwards the
 *   user's OIDC token instead; this server does not validate OIDC tokens itself — put it behind the
 *   proxy that does.
 * - Local mode (no tokens): for a developer machine. main.ts then listens on loopback only, and this app
 *   refuses any Host header that is not a loopback name (so a web page cannot reach it by DNS
 *   rebinding). Browser requests must come from an allowed origin; requests without an Origin are
 *   non-browser local programs such as the CLI and are let in: any local process could forge an Origin
 *   anyway, so local mode trusts every process on the machine — never use it on a shared host.
 *
 * One namespace: the server decodes and encodes for TEMPORAL_NAMESPACE only. Temporal UI and the CLI
 * name the namespace of every call in `X-Namespace` (the protocol's header); a call without it is a
 * 400 and a call for another namespace a 403, so a UI user signed in to look at one namespace
 * cannot have another namespace's payloads decoded (or forge payloads for it) under the same keys.
 * Another namespace runs a codec server of its own, with keys of its own (docs/deployers.md).
 *
 * In both modes browsers are limited to CODEC_CORS_ORIGINS (a page from any other origin is refused,
 * preflight included), bodies are capped, and the log records method, path, status, payload count and
 * duration — never headers, bodies or decoded content.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import express, {
  Router,
  type ErrorRequestHandler,
  type Express,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import type { Payload, PayloadCodec } from '@temporalio/common';
import type { Logger } from 'pino';
import { z } from 'zod';
import { PayloadDecryptionError } from './encryption-codec';

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** The one namespace served (TEMPORAL_NAMESPACE): every call must name it in X-Namespace. */
  namespace: string;
  /** Accepted bearer tokens; empty = local mode (see above). */
  authTokens: readonly string[];
  /** Browser origins allowed to call, e.g. the Temporal UI's `http://localhost:8233`. */
  corsOrigins: readonly string[];
  logger: Logger;
  /** express.json limit; default 8mb (CODEC_BODY_LIMIT). */
  bodyLimit?: string;
}

/** proto3 JSON writes bytes as base64; parsers accept the standard and the URL-safe alphabet. */
const base64 = z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'must be base64');
const jsonPayloadSchema = z.object({
  metadata: z.record(z.string(), base64).nullish(),
  data: base64.nullish(),
});
const requestSchema = z.object({ payloads: z.array(jsonPayloadSchema) });
type JsonPayload = z.infer<typeof jsonPayloadSchema>;

const LOOPBACK_HOSTNAMES = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);
const ALLOWED_HEADERS = 'content-type, x-namespace, authorization';
/** Browsers cache a preflight this long (seconds), sparing the UI one OPTIONS per decode. */
const PREFLIGHT_MAX_AGE_S = '600';

export function createCodecServer(options: CodecServerOptions): Express {
  const { codec, logger } = options;
  const localMode = options.authTokens.length === 0;
  const tokens = options.authTokens;
  const tokenDigests = tokens.map(sha256);
  const corsOrigins = new Set(options.corsOrigins);

  const app = express();
  app.disable('x-powered-by');
  app.disable('etag'); // an ETag is a hash of the decoded content: no reason to hand it out

  // One log line per request, written when the response is done.
  app.use((req, res, next) => {
    const started = performance.now();
    res.on('finish', () => {
      const status = res.statusCode;
      const level = status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info';
      logger[level](
        {
          method: req.method,
          path: req.path,
          status,
          payloads: res.locals.payloadCount as number | undefined,
          namespace: req.get('x-namespace')?.slice(0, 100),
          durationMs: Math.round(performance.now() - started),
        },
        'codec request',
      );
    });
    next();
  });

  if (localMode) {
    app.use((req, res, next) => {
      if (LOOPBACK_HOSTNAMES.has(req.hostname)) return next();
      problem(
        res,
        403,
        'Host not allowed',
        'Without CODEC_AUTH_TOKENS this server answers only on loopback.',
      );
    });
  }

  if (!localMode) app.use('/login', signInRouter(tokens, logger));

  // CORS by hand: it is a dozen lines, and a browser from any other origin must be refused outright.
  app.use((req, res, next) => {
    res.vary('Origin');
    const origin = req.get('origin');
    if (origin !== undefined) {
      if (!corsOrigins.has(origin)) {
        return problem(res, 403, 'Origin not allowed', 'Add the Temporal UI origin to CODEC_CORS_ORIGINS.');
      }
      res.set('Access-Control-Allow-Origin', origin);
      // For the UI's "Include cross-origin credentials" option; cookies play no part in our auth.
      res.set('Access-Control-Allow-Credentials', 'true');
    }
    if (req.method !== 'OPTIONS') return next();
    res.set({
      'Access-Control-Allow-Methods': 'POST, OPTIONS',
      'Access-Control-Allow-Headers': ALLOWED_HEADERS,
      'Access-Control-Max-Age': PREFLIGHT_MAX_AGE_S,
    });
    // A hosted UI (https) calling a codec server on this machine: Chrome's Private Network Access.
    if (origin !== undefined && req.get('access-control-request-private-network') === 'true') {
      res.set('Access-Control-Allow-Private-Network', 'true');
    }
    res.status(204).end();
  });

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  if (!localMode) {
    app.use((req, res, next) => {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
      if (match?.[1] !== undefined && tokenMatches(sha256(match[1]), tokenDigests)) return next();
      if (validSession(sessionCookie(req), tokens, Date.now())) return next();
      res.set('WWW-Authenticate', 'Bearer realm="codec"');
      problem(res, 401, 'Unauthorized', 'Send Authorization: Bearer <one of CODEC_AUTH_TOKENS>.');
    });
  }

  const handle =
    (action: 'encode' | 'decode'): RequestHandler =>
    async (req, res, next) => {
      const parsed = requestSchema.safeParse(req.body);
      if (!parsed.success) {
        const errors = parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
        return problem(res, 400, 'Invalid payloads', 'Expected { payloads: [{ metadata, data }] }.', errors);
      }
      res.locals.payloadCount = parsed.data.payloads.length;
      try {
        const input = parsed.data.payloads.map(fromJson);
        const output = action === 'encode' ? await codec.encode(input) : await codec.decode(input);
        res.set('Cache-Control', 'no-store').json({ payloads: output.map(toJson) });
      } catch (err) {
        // Decryption errors are the caller's problem (protocol: 400) and their messages are safe.
        if (err instanceof PayloadDecryptionError) return problem(res, 400, 'Cannot decode', err.message);
        next(err);
      }
    };

  const json = express.json({ limit: options.bodyLimit ?? '8mb', strict: true, type: 'application/json' });
  const requireNamespace: RequestHandler = (req, res, next) => {
    const named = req.get('x-namespace');
    if (!named) {
      return problem(res, 400, 'Namespace required', 'Send X-Namespace: the namespace of the payloads.');
    }
    if (named === options.namespace) return next();
    problem(
      res,
      403,
      'Namespace not served',
      `This codec server serves namespace ${options.namespace} only.`,
    );
  };
  const requireJson: RequestHandler = (req, res, next) => {
    if (req.is('application/json')) return next();
    problem(res, 415, 'Unsupported Media Type', 'Send Content-Type: application/json.');
  };
  app.post(/\/encode$/, requireNamespace, requireJson, json, handle('encode'));
  app.post(/\/decode$/, requireNamespace, requireJson, json, handle('decode'));

  app.use((_req, res) => {
    problem(res, 404, 'Not Found', 'POST …/encode or …/decode.');
  });

  // body-parser errors carry the raw body (err.body): never log them, never echo their message.
  const onError: ErrorRequestHandler = (err: unknown, _req, res, _next) => {
    if (res.headersSent) return void res.end();
    const { type, status } = (err ?? {}) as { type?: unknown; status?: unknown };
    if (type === 'entity.too.large')
      return problem(res, 413, 'Payload Too Large', 'The request body is too large.');
    if (type === 'entity.parse.failed')
      return problem(res, 400, 'Invalid JSON', 'The body is not valid JSON.');
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return problem(res, status, 'Bad Request', 'The request body could not be read.');
    }
    logger.error({ errorName: err instanceof Error ? err.name : typeof err }, 'codec request failed');
    problem(res, 500, 'Internal Server Error', 'The codec failed; see the server log.');
  };
  app.use(onError);

  return app;
}

function problem(
  res: Response,
  status: number,
  title: string,
  detail: string,
  errors?: { path: string; message: string }[],
): void {
  res
    .status(status)
    .type('application/problem+json')
    .send(JSON.stringify({ type: 'about:blank', title, status, detail, ...(errors ? { errors } : {}) }));
}

/** A browser's sign-in lasts a working day. */
const SESSION_TTL_MS = 8 * 3_600_000;
const SESSION_COOKIE = 'codec_session';

function sessionMac(token: string, expiresAt: number): Buffer {
  return createHmac('sha256', token).update(`codec-session:${expiresAt}`).digest();
}

/** `<expiry ms>.<HMAC of it under one of the tokens>`: proves a sign-in without holding the token. */
function newSession(token: string, now: number): string {
  const expiresAt = now + SESSION_TTL_MS;
  return `${expiresAt}.${sessionMac(token, expiresAt).toString('base64url')}`;
}

function validSession(value: string | undefined, tokens: readonly string[], now: number): boolean {
  const match = /^(\d{13})\.([A-Za-z0-9_-]{43})$/.exec(value ?? '');
  if (!match) return false;
  const expiresAt = Number(match[1]);
  if (expiresAt <= now || expiresAt > now + SESSION_TTL_MS) return false;
  const mac = Buffer.from(match[2]!, 'base64url');
  let valid = false;
  for (const token of tokens) valid = timingSafeEqual(mac, sessionMac(token, expiresAt)) || valid;
  return valid;
}

function sessionCookie(req: Request): string | undefined {
  for (const part of (req.get('cookie') ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === SESSION_COOKIE) return value.join('=');
  }
  return undefined;
}

const SIGN_IN_PAGE = (message: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Codec server: sign in</title></head>
<body><h1>Sign in to the codec server</h1>
<p>${message}</p>
<form method="post" action="login"><label>Token <input type="password" name="token" autocomplete="off" required></label>
<button type="submit">Sign in</button></form></body></html>`;

/**
 * `GET /login`: a form; `POST /login` with a valid token: the session cookie. Only as a page of this
 * server's own (a form post from anywhere else is refused), and never logging what was typed.
 */
function signInRouter(tokens: readonly string[], logger: Logger): Router {
  const router = Router();
  router.use((req, res, next) => {
    res.set({
      'Content-Security-Policy': "default-src 'none'; form-action 'self'; frame-ancestors 'none'",
      'Cache-Control': 'no-store',
    });
    const origin = req.get('origin');
    if (req.method === 'POST' && origin !== undefined && origin !== `${req.protocol}://${req.get('host')}`) {
      return problem(res, 403, 'Origin not allowed', 'Sign in on this server’s own page.');
    }
    next();
  });
  router.get('/', (_req, res) => {
    res
      .type('html')
      .send(
        SIGN_IN_PAGE(
          'Enter one of the codec tokens (CODEC_AUTH_TOKENS). Temporal UI can then decode payloads in this browser.',
        ),
      );
  });
  router.post('/', express.urlencoded({ extended: false, limit: '2kb' }), (req, res) => {
    const token = typeof req.body?.token === 'string' ? (req.body.token as string) : '';
    const digest = sha256(token);
    const match = tokens.find((t) => timingSafeEqual(sha256(t), digest));
    if (!match) {
      logger.warn('codec sign-in refused');
      return void res.status(401).type('html').send(SIGN_IN_PAGE('That is not a codec token.'));
    }
    res.cookie(SESSION_COOKIE, newSession(match, Date.now()), {
      httpOnly: true,
      sameSite: 'strict',
      // Only over https, except on this machine (browsers treat localhost as a secure origin; a
      // TLS-terminating proxy in front still shows the browser https).
      secure: req.secure || !LOOPBACK_HOSTNAMES.has(req.hostname),
      path: '/',
      maxAge: SESSION_TTL_MS,
    });
    logger.info('codec sign-in');
    res
      .type('html')
      .send(SIGN_IN_PAGE('Signed in for 8 hours: Temporal UI can now decode payloads in this browser.'));
  });
  return router;
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Fixed-length digests compared in constant time, and every token compared, so timing tells nothing. */
function tokenMatches(digest: Buffer, accepted: readonly Buffer[]): boolean {
  let found = false;
  for (const candidate of accepted) found = timingSafeEqual(digest, candidate) || found;
  return found;
}

function fromJson(payload: JsonPayload): Payload {
  const metadata = Object.entries(payload.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]);
  return { metadata: Object.fromEntries(metadata), data: Buffer.from(payload.data ?? '', 'base64') };
}

function toJson(payload: Payload): { metadata: Record<string, string>; data: string } {
  const metadata = Object.entries(payload.metadata ?? {}).map(([k, v]) => [k, toBase64(v)]);
  return { metadata: Object.fromEntries(metadata), data: toBase64(payload.data ?? new Uint8Array()) };
}

function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}
