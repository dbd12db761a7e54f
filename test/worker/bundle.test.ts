/**
 * What goes into the workflow bundle is loaded into every worker's sandbox: zod there cost about
 * hundreds of MB of worker RSS (docs/contributors.md, "What the code's choices cost"). ESLint refuses direct value imports of it;
 * this checks the bundle itself, so an indirect import is caught too. The interceptors
 * (src/worker/interceptors.workflow.ts) bring OpenTelemetry's API and span classes in — required only when a
 * traced order runs, since each cached workflow evaluates what it loads — and nothing of its Node
 * SDK, exporters or instrumentations, which are the worker's.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { bundleWorkflowCode } from '@temporalio/worker';
import { workflowBundleOptions } from '../../src/worker/bundle';

async function bundledCode(): Promise<string> {
  const prebuilt = process.env.TEST_WORKFLOW_BUNDLE_PATH; // npm test bundles once for every test
  if (prebuilt) return readFileSync(prebuilt, 'utf8');
  return (await bundleWorkflowCode({ ...workflowBundleOptions, logger: undefined })).code;
}

describe('workflow bundle', () => {
  it(
    'carries no zod, undici, express, pino, prom-client or OpenTelemetry SDK for Node',
    { timeout: 120_000 },
    async () => {
      const code = await bundledCode();
      assert.match(code, /node_modules\/@temporalio\/workflow\//, 'module paths are visible in the bundle');
      for (const name of [
        'zod',
        'undici',
        'express',
        'pino',
        'prom-client',
        '@opentelemetry/sdk-trace-node',
        '@opentelemetry/exporter-trace-otlp-http',
        '@opentelemetry/instrumentation',
        '@opentelemetry/instrumentation-undici',
      ]) {
        assert.doesNotMatch(code, new RegExp(`node_modules/${name}/`), `${name} is in the workflow bundle`);
      }
    },
  );

  it(
    'carries the interceptors, so every worker exports order metrics and spans',
    { timeout: 120_000 },
    async () => {
      const code = await bundledCode();
      assert.match(code, /src\/worker\/interceptors\.workflow\.ts/);
      assert.match(code, /node_modules\/@temporalio\/interceptors-opentelemetry\/lib\/workflow\//);
    },
  );
});
