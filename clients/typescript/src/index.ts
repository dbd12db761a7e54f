/**
 * The intake API's TypeScript client (`TopupClient`), its typed problems and the webhook
 * verifier. The types of every route are generated from the API's /openapi.json (src/schema.ts).
 */
export * from './client';
export { isProblem, problemOf, type Problem, type ProblemType } from './problem';
export { retryAfterMs, type RetryOptions } from './retry';
export * from './webhooks';
export type { components, operations, paths } from './schema';
