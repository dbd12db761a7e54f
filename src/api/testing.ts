/**
 * For tests of the intake API (test/api*.test.ts): the app on a free loopback port with test
 * configuration, and an HTTP client that sends paths exactly as written (`fetch` would normalise
 * `/v1/orders/..` away before the server ever saw it).
 */
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { Pool } from 'undici';
import { loadConfig, type Config } from '../config';
import { createApp, type AppDeps } from './app';
import { redactPaths } from '../logging';
import { listen } from './server';

export const TEST_API_KEY = 'test-api-key-1';
export const OTHER_TEST_API_KEY = 'test-api-key-2';

/** Test configuration: two API keys, short Temporal deadlines; `env` overrides any variable. */
export function apiTestConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    API_KEYS: `${TEST_API_KEY},${OTHER_TEST_API_KEY}`,
    API_TEMPORAL_TIMEOUT_MS: '3000',
    API_READINESS_TIMEOUT_MS: '1500',
    LOG_LEVEL: 'info',
    ...env,
  });
}

/** A logger whose lines (parsed JSON) are kept in memory, with the app's redaction. */
export function capturingLogger(): { logger: Logger; lines: Record<string, unknown>[]; raw: string[] } {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      callback();
    },
  });
  return {
    logger: pino({ level: 'debug', redact: { paths: redactPaths, censor: '[redacted]' } }, stream),
    lines,
    raw,
  };
}

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The parsed body when it is JSON (problem+json included), else undefined. */
  body: T;
}

export interface RequestOptions {
  /** An object is sent as JSON; a string or Buffer as is. */
  body?: unknown;
  /** `undefined` = the test key; `null` = no Authorization header. */
  apiKey?: string | null;
  headers?: Record<string, string>;
}

export interface TestApi {
  url: string;
  config: Config;
  request<T = unknown>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  close(): Promise<void>;
}

export async function startTestApi(
  deps: Omit<AppDeps, 'config' | 'logger'> & { config?: Config; logger?: Logger },
): Promise<TestApi> {
  const config = deps.config ?? apiTestConfig();
  const app = createApp({ ...deps, config, logger: deps.logger ?? pino({ level: 'silent' }) });
  const server = await listen(app, { port: 0, host: '127.0.0.1', config });
  const pool = new Pool(server.url);

  async function request<T>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.apiKey !== null) headers.authorization ??= `Bearer ${options.apiKey ?? TEST_API_KEY}`;
    let body: string | Buffer | undefined;
    if (typeof options.body === 'string' || Buffer.isBuffer(options.body)) body = options.body;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await pool.request({ method, path, headers, body });
    const text = await response.body.text();
    const contentType = String(response.headers['content-type'] ?? '');
    const parsed: unknown = /json/.test(contentType) && text ? JSON.parse(text) : undefined;
    return { status: response.statusCode, headers: response.headers, text, body: parsed as T };
  }

  return {
    url: server.url,
    config,
    request,
    close: async () => {
      await pool.close();
      await server.close(1_000);
    },
  };
}
