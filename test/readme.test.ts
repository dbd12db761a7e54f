import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { knownEnvironmentVariables } from '../src/config';

const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8');

describe('README', () => {
  it('documents every environment variable the configuration reads', () => {
    const undocumented = knownEnvironmentVariables.filter((name) => !readme.includes(`\`${name}\``));
    assert.deepEqual(undocumented, []);
  });

  it('names the two commands and every npm script it tells people to run', () => {
    const scripts = Object.keys(
      (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { scripts: object })
        .scripts,
    );
    for (const match of readme.matchAll(/npm run ([\w:-]+)/g)) {
      assert.ok(scripts.includes(match[1]!), `npm run ${match[1]} exists`);
    }
    assert.match(readme, /npm start/);
    assert.match(readme, /npm test/);
  });
});
