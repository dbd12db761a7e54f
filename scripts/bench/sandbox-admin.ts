/**
 * The sandbox's admin surface, as far as the bench needs it: the send counters (how many sends of
 * each ref reached the provider) and a latency rule that makes the provider as slow as a real one.
 */

/** The sandbox's admin send counters: per ref (top-ups) and gift-card orders placed. */
export interface SendReport {
  refs: Record<string, { family: string; accepted: number; attempts: number }>;
  giftCardOrders: { placed: number };
}

export async function sandboxSends(sandbox: { url: string; adminToken: string } | undefined) {
  if (!sandbox) return undefined;
  try {
    const response = await fetch(`${sandbox.url}/admin/sends`, {
      headers: { 'X-Admin-Token': sandbox.adminToken },
      signal: AbortSignal.timeout(30_000),
    });
    if (!response.ok) return undefined;
    return ((await response.json()) as { data: SendReport }).data;
  } catch {
    return undefined;
  }
}

/** Every send and check answers `latencyMs` later (validate and the catalog stay fast). */
export async function addProviderLatency(
  sandbox: { url: string; adminToken: string } | undefined,
  latencyMs: number,
): Promise<void> {
  if (!sandbox)
    throw new Error('--provider-latency needs the sandbox admin surface (our own sandbox or --sandbox-url)');
  const response = await fetch(`${sandbox.url}/admin/faults`, {
    method: 'POST',
    headers: { 'X-Admin-Token': sandbox.adminToken, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      kind: 'latency',
      latencyMs,
      routes: [
        'mobile.send',
        'mobile.check',
        'internet.send',
        'internet.check',
        'giftcards.placeOrder',
        'giftcards.checkOrder',
      ],
    }),
    signal: AbortSignal.timeout(10_000),
  });
  if (!response.ok) throw new Error(`sandbox refused the latency rule: HTTP ${response.status}`);
  await response.body?.cancel();
}
