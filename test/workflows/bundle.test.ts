/**
 * What goes into the workflow bundle is loaded into every worker's sandbox: zod there cost about
 * 300 MB of worker RSS (src/orders/review-decision.ts). ESLint refuses direct value imports of it;
 * this checks the bundle itself, so an indirect import is caught too.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { bundleWorkflowCode } from '@temporalio/worker';
import { defaultWorkflowsPath as workflowsPath } from '../../src/worker/worker';

async function bundledCode(): Promise<string> {
  const prebuilt = process.env.TEST_WORKFLOW_BUNDLE_PATH; // npm test bundles once for every test
  if (prebuilt) return readFileSync(prebuilt, 'utf8');
  return (await bundleWorkflowCode({ workflowsPath, logger: undefined })).code;
}

describe('workflow bundle', () => {
  it('carries no zod, undici, express or pino', { timeout: 120_000 }, async () => {
    const code = await bundledCode();
    assert.match(code, /node_modules\/@temporalio\/workflow\//, 'module paths are visible in the bundle');
    for (const name of ['zod', 'undici', 'express', 'pino']) {
      assert.doesNotMatch(code, new RegExp(`node_modules/${name}/`), `${name} is in the workflow bundle`);
    }
  });
});
