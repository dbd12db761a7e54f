/**
 * Every workflow type declares its Worker Versioning behaviour (src/worker/workflows.ts,
 * docs/contributors.md "Worker versioning, never patches"): none falls back on the
 * worker's default by omission, and all are PINNED — AUTO_UPGRADE would replay old histories on
 * new code, which only patches make safe.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as workflows from '../../src/worker/workflows';

describe('workflow versioning behaviour', () => {
  const exported = Object.entries(workflows).filter(([, value]) => typeof value === 'function');

  it('the workflows module exports the workflow types', () => {
    assert.ok(exported.length >= 11, `only ${exported.length} workflow functions exported`);
  });

  for (const [name, fn] of exported) {
    it(`${name} is declared PINNED`, () => {
      const options = (fn as { workflowDefinitionOptions?: unknown }).workflowDefinitionOptions;
      const resolved = typeof options === 'function' ? (options as () => unknown)() : options;
      assert.equal((resolved as { versioningBehavior?: string } | undefined)?.versioningBehavior, 'PINNED');
    });
  }
});
