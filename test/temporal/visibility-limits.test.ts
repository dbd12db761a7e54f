/**
 * Visibility's limits are one decision, written twice: the dev server's flags
 * (src/temporal/visibility-limits.ts, passed by src/temporal/dev-server.ts) and the deployment's
 * dynamic config (deploy/temporal/dynamicconfig/dynamicconfig.yaml, docker-compose.yml's server
 * and the cluster tier). They must agree, and the deployers' page must give the same figures.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { visibilityDynamicConfig } from '../../src/temporal/visibility-limits';

const root = join(__dirname, '..', '..');

describe('visibility limits', () => {
  it('the deployment’s dynamic config sets what the dev server sets, unconstrained', () => {
    const file = parse(
      readFileSync(join(root, 'deploy', 'temporal', 'dynamicconfig', 'dynamicconfig.yaml'), 'utf8'),
    ) as Record<string, { value: unknown; constraints: object }[]>;
    for (const [key, value] of Object.entries(visibilityDynamicConfig)) {
      assert.deepEqual(file[key], [{ value, constraints: {} }], key);
    }
  });

  it('docs/deployers.md names each limit with its value', () => {
    const docs = readFileSync(join(root, 'docs', 'deployers.md'), 'utf8');
    for (const [key, value] of Object.entries(visibilityDynamicConfig)) {
      assert.match(docs, new RegExp(`\`${key.replace(/\./g, '\\.')}\`[^\\n]*\\b${value}\\b`), key);
    }
  });
});
