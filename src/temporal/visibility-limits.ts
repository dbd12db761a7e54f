/**
 * Visibility's rate limit per namespace, as every Temporal server we start or deploy runs it: the
 * dev server (dev-server.ts passes these as dynamic config values) and docker-compose.yml's server
 * and the cluster tier (deploy/temporal/dynamicconfig/dynamicconfig.yaml, the same values:
 * test/temporal/visibility-limits.test.ts). docs/deployers.md "Visibility's budget" says who
 * shares it and how it was sized.
 *
 * - `frontend.globalNamespaceRPS.visibility`: visibility calls (lists, counts) per second for the
 *   namespace, cluster-wide, split evenly among the frontends, so adding frontends does not add
 *   load on the one visibility store. It replaces the per-frontend
 *   `frontend.namespaceRPS.visibility` (the server's default 10, the CLI dev server's 100).
 * - `frontend.namespaceBurstRatio.visibility`: the burst, as a multiple of that rate (default 1).
 */
export const visibilityDynamicConfig = {
  'frontend.globalNamespaceRPS.visibility': 100,
  'frontend.namespaceBurstRatio.visibility': 2,
} as const;
