/**
 * A worker's build ID: a short digest of the workflow bundle it runs. The same code bundled twice
 * is the same version (a restart or a second replica joins it), and any change to the workflow
 * code, the interceptors or the failure converter bundled with it is a new version, so no build
 * ever replays a history another build wrote. WORKER_BUILD_ID overrides it (src/config.ts).
 */
import { createHash } from 'node:crypto';

/** 12 hex digits (48 bits): no two builds of one deployment collide in practice, and it stays readable. */
const BUILD_ID_HEX_DIGITS = 12;

export function workflowBuildId(bundleCode: string): string {
  return createHash('sha256').update(bundleCode).digest('hex').slice(0, BUILD_ID_HEX_DIGITS);
}
