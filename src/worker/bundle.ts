/**
 * What goes into the workflow bundle, in one place for every bundle the project builds (`npm run
 * build:bundle`, the test run, chaos, a worker that bundles at start): the order workflows, their
 * interceptors (metrics, tracing: src/worker/interceptors.workflow.ts) and the failure converter. A bundle
 * built without the interceptors still runs orders, but exports no order metrics and no spans.
 */
import { failureConverterPath } from '../codec';

/** src/worker/workflows.ts under tsx, src/worker/workflows.js in a compiled build. */
export const defaultWorkflowsPath: string = require.resolve('./workflows');

export const workflowInterceptorModules: string[] = [require.resolve('./interceptors.workflow')];

/** The options for `bundleWorkflowCode` (add `logger`). */
export const workflowBundleOptions = {
  workflowsPath: defaultWorkflowsPath,
  workflowInterceptorModules,
  // A pre-built bundle ignores the Worker's failureConverterPath: build it in, so failures
  // raised inside workflows are encrypted whenever PAYLOAD_ENCRYPTION_KEYS is set.
  failureConverterPath,
};
