/**
 * Readiness: can this instance serve orders now? Temporal must answer for our namespace and the
 * provider must accept our key. /readyz is public, so results are shared for a moment: a burst of
 * probes makes one call to each dependency, not one each.
 */
import type { Client } from '@temporalio/client';
import type { ProviderClient } from '../provider/client';

export type ProviderPort = Pick<ProviderClient, 'getGiftCardCatalog' | 'validateKey'>;

export interface Readiness {
  temporal: boolean;
  provider: boolean;
  /** Why a dependency is down, for the log (error messages of our clients: no secrets). */
  problems: string[];
}

/** Long enough to absorb a burst of probes, short enough that a load balancer sees an outage at once. */
const READINESS_CACHE_MS = 1_000;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function readinessCheck(deps: {
  client: Client;
  provider: ProviderPort;
  timeoutMs: number;
  now: () => number;
}): () => Promise<Readiness> {
  const { client, provider, timeoutMs, now } = deps;
  let last: { at: number; result: Promise<Readiness> } | undefined;

  const check = async (): Promise<Readiness> => {
    const problems: string[] = [];
    const down = (what: string) => (err: unknown) => {
      problems.push(`${what}: ${err instanceof Error ? err.message : String(err)}`);
      return false;
    };
    const [temporal, providerUp] = await Promise.all([
      client
        .withDeadline(Date.now() + timeoutMs, () =>
          client.workflowService.describeNamespace({ namespace: client.options.namespace }),
        )
        .then(() => true, down('temporal')),
      withTimeout(provider.validateKey(), timeoutMs).then(
        (info) => info.apiKey.isEnabled || down('provider')(new Error('the API key is disabled')),
        down('provider'),
      ),
    ]);
    return { temporal, provider: providerUp, problems };
  };

  return () => {
    if (!last || now() - last.at >= READINESS_CACHE_MS) last = { at: now(), result: check() };
    return last.result;
  };
}
