/**
 * A signal that fires at a deadline or when another signal does, held alive by its own timer.
 *
 * Not `AbortSignal.any([signal, AbortSignal.timeout(ms)])`: `any` holds its sources weakly and a
 * timeout signal nobody listens to directly can be garbage-collected before it fires, so under
 * memory pressure the deadline silently never comes — the one thing a money path cannot afford.
 */
export interface Deadline {
  signal: AbortSignal;
  /** Stops the timer and unhooks from the other signal once the guarded work is over. */
  clear(): void;
}

export function deadline(ms: number, reasonText: string, also?: AbortSignal): Deadline {
  const controller = new AbortController();
  const timeUp = () => controller.abort(new DOMException(reasonText, 'TimeoutError'));
  // Unref'd: a deadline alone must not keep a process alive.
  const timer = ms > 0 ? setTimeout(timeUp, ms).unref() : undefined;
  if (!timer) timeUp();
  const forward = () => controller.abort(also?.reason);
  if (also?.aborted) forward();
  else also?.addEventListener('abort', forward, { once: true });
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
      also?.removeEventListener('abort', forward);
    },
  };
}
