/**
 * The sandbox's admin surface, as far as the bench needs it: the send counters (how many sends of
 * each ref reached the provider) and a latency rule that makes the provider as slow as a real one.
 */
import { orderRoutes, SandboxAdmin } from '../../src/sandbox/admin-client';
import type { SendReport } from '../../src/sandbox/state';

export type { SendReport };

type SandboxAccess = { url: string; adminToken: string } | undefined;

/** The counters, or undefined when there is no sandbox to ask (or it does not answer). */
export async function sandboxSends(sandbox: SandboxAccess): Promise<SendReport | undefined> {
  if (!sandbox) return undefined;
  return new SandboxAdmin(sandbox.url, sandbox.adminToken, 30_000).sends().catch(() => undefined);
}

/** Every send and check answers `latencyMs` later (validate and the catalog stay fast). */
export async function addProviderLatency(sandbox: SandboxAccess, latencyMs: number): Promise<void> {
  if (!sandbox)
    throw new Error('--provider-latency needs the sandbox admin surface (our own sandbox or --sandbox-url)');
  await new SandboxAdmin(sandbox.url, sandbox.adminToken).add({
    kind: 'latency',
    latencyMs,
    routes: [...orderRoutes],
  });
}
