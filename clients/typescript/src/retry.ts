/**
 * Retrying what the API asks to be retried: `429` (a limit: nothing was done) and `503` (not able
 * now: nothing was done, or the request is one that is safe to repeat), after its `Retry-After`,
 * within one deadline for the whole call. Each wait is Retry-After plus jitter, so that many
 * callers refused in the same second do not all come back in the same second; without the header,
 * an exponential back-off with full jitter.
 */

export interface RetryOptions {
  /** Attempts in all, the first included (default 6). */
  maxAttempts?: number;
  /** The first back-off when an answer has no Retry-After, doubled each time (default 500 ms). */
  initialDelayMs?: number;
  /** The longest wait between two attempts, whatever Retry-After asks (default 30 s). */
  maxDelayMs?: number;
  /** Up to this fraction of the wait is added at random (default 0.2). */
  jitter?: number;
  /** Called before each wait (logs, metrics). */
  onRetry?: (info: { attempt: number; status: number; delayMs: number; url: string }) => void;
}

export const RETRIED_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/** Retry-After in ms: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1_000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** How long to wait before attempt `attempt + 1` after `response` (attempt counts from 1). */
export function retryDelayMs(response: Response, attempt: number, options: RetryOptions): number {
  const { initialDelayMs = 500, maxDelayMs = 30_000, jitter = 0.2 } = options;
  const asked = retryAfterMs(response.headers.get('retry-after'));
  if (asked === undefined) {
    // Full jitter: anywhere up to the exponential step.
    return Math.round(Math.random() * Math.min(maxDelayMs, initialDelayMs * 2 ** (attempt - 1)));
  }
  // Never earlier than asked: the API said when it will have room.
  return Math.round(Math.min(maxDelayMs, asked * (1 + Math.random() * jitter)));
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A fetch that retries 429 and 503 for requests `retryable` allows, until `deadlineAt` (epoch ms):
 * a wait that would end past the deadline is not started, and the last answer is returned as it
 * is (the caller turns it into a ProblemError).
 */
export async function fetchWithRetry(
  request: Request,
  options: RetryOptions & {
    fetch: typeof fetch;
    deadlineAt: number;
    signal: AbortSignal;
    retryable: (request: Request, status: number) => boolean;
  },
): Promise<Response> {
  const maxAttempts = options.maxAttempts ?? 6;
  for (let attempt = 1; ; attempt++) {
    // A Request's body can be read once: each attempt sends a copy.
    const response = await options.fetch(request.clone(), { signal: options.signal });
    if (!RETRIED_STATUSES.has(response.status) || !options.retryable(request, response.status))
      return response;
    if (attempt >= maxAttempts) return response;
    const delayMs = retryDelayMs(response, attempt, options);
    if (Date.now() + delayMs >= options.deadlineAt) return response;
    options.onRetry?.({ attempt, status: response.status, delayMs, url: request.url });
    // Read to the end, so the connection goes back to the pool.
    await response.arrayBuffer().catch(() => undefined);
    await sleep(delayMs, options.signal);
  }
}
