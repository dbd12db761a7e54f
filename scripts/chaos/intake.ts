/**
 * The intake API as a back-office system uses it under trouble: every request is retried on the
 * answers that mean "not now" (429, 502, 503, 504, no connection, timeout) for a bounded time.
 * Retrying a submission is safe by contract: the same ref with the same body is the same order.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { OrderView } from '../../src/orders/order.service';

export interface IntakeAnswer {
  status: number;
  body: unknown;
  location: string | null;
  contentType: string;
  retryAfter: string | null;
}

/** What the client had to retry, and any 500 (a bug: the API maps every known failure to 4xx/502/503). */
export interface IntakeStats {
  retried: Record<string, number>;
  internalErrors: number;
}

const RETRY_STATUSES = new Set([429, 502, 503, 504]);
const REQUEST_TIMEOUT_MS = 20_000;

export class IntakeClient {
  readonly stats: IntakeStats = { retried: {}, internalErrors: 0 };
  readonly #baseUrls: readonly string[];
  #next = 0;

  constructor(
    /** One API, or several: each attempt goes to the next one, as a round-robin load balancer sends it. */
    baseUrl: string | readonly string[],
    private readonly apiKey: string,
    private readonly signal: AbortSignal,
    /** How long one request is retried before its last answer (or error) is returned. */
    private readonly retryForMs = 180_000,
    /** Hears every attempt's answer (or its error), e.g. to count statuses per fault. */
    private readonly onAttempt?: (method: string, path: string, outcome: IntakeAnswer | Error) => void,
  ) {
    this.#baseUrls = typeof baseUrl === 'string' ? [baseUrl] : baseUrl;
    if (this.#baseUrls.length === 0) throw new Error('IntakeClient needs at least one API address');
  }

  submit(body: unknown): Promise<IntakeAnswer> {
    return this.request('POST', '/v1/orders', body);
  }

  order(ref: string, retryForMs?: number): Promise<IntakeAnswer> {
    return this.request('GET', `/v1/orders/${encodeURIComponent(ref)}`, undefined, retryForMs);
  }

  /**
   * Orders the account holds now, by reason, as /readyz reports them to operators; undefined when
   * the API cannot say (it is restarting, Temporal is down). One attempt: the caller asks again.
   */
  async held(): Promise<{ balance: number; operator: number } | undefined> {
    try {
      const answer = await this.request('GET', '/readyz', undefined, 0);
      const body = answer.body as { account?: { held?: { balance?: number; operator?: number } } };
      const held = answer.status === 200 ? body.account?.held : undefined;
      return held && { balance: held.balance ?? 0, operator: held.operator ?? 0 };
    } catch {
      if (this.signal.aborted) throw this.signal.reason;
      return undefined;
    }
  }

  /** The order's view, or undefined when it cannot be read now. One attempt. */
  async view(ref: string): Promise<OrderView | undefined> {
    try {
      const answer = await this.order(ref, 0);
      return answer.status === 200 ? (answer.body as OrderView) : undefined;
    } catch {
      if (this.signal.aborted) throw this.signal.reason;
      return undefined;
    }
  }

  async request(
    method: string,
    path: string,
    body?: unknown,
    retryForMs = this.retryForMs,
  ): Promise<IntakeAnswer> {
    const giveUpAt = Date.now() + retryForMs;
    for (let attempt = 1; ; attempt++) {
      this.signal.throwIfAborted();
      let outcome: IntakeAnswer | Error;
      try {
        outcome = await this.#once(method, path, body);
      } catch (err) {
        if (this.signal.aborted) throw err;
        outcome = err instanceof Error ? err : new Error(String(err));
      }
      this.onAttempt?.(method, path, outcome);
      const reason = outcome instanceof Error ? errorName(outcome) : retryReason(outcome.status);
      if (!(outcome instanceof Error) && outcome.status === 500) this.stats.internalErrors++;
      if (reason === undefined) return outcome as IntakeAnswer;
      if (Date.now() >= giveUpAt) {
        if (outcome instanceof Error) throw outcome;
        return outcome;
      }
      this.stats.retried[reason] = (this.stats.retried[reason] ?? 0) + 1;
      // Our API's Retry-After (5 s on a 503) is meant for the crowd; a Temporal restart is over sooner.
      const floorMs = !(outcome instanceof Error) && outcome.status === 429 ? 1_000 : 0;
      await sleep(Math.max(floorMs, Math.min(2_000, 100 * 2 ** attempt)), undefined, { signal: this.signal });
    }
  }

  async #once(method: string, path: string, body: unknown): Promise<IntakeAnswer> {
    const baseUrl = this.#baseUrls[this.#next++ % this.#baseUrls.length]!;
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.apiKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.any([this.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
    });
    const text = await response.text();
    const contentType = response.headers.get('content-type') ?? '';
    let parsed: unknown = text;
    if (/json/.test(contentType) && text) parsed = JSON.parse(text) as unknown;
    return {
      status: response.status,
      body: parsed,
      location: response.headers.get('location'),
      contentType,
      retryAfter: response.headers.get('retry-after'),
    };
  }
}

/** A 500 is retried too (the run must go on), but counted: it is a bug to report. */
function retryReason(status: number): string | undefined {
  if (RETRY_STATUSES.has(status) || status === 500) return `HTTP ${status}`;
  return undefined;
}

function errorName(err: Error): string {
  const cause = (err as { cause?: { code?: unknown } }).cause;
  if (err.name === 'TimeoutError') return 'timeout';
  return typeof cause?.code === 'string' ? cause.code : err.name;
}
