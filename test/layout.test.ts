/**
 * docs/contributors.md's layout (its "## Layout" section: markdown tables whose first column is a
 * backticked folder such as `src/orders/`) against the tree: every folder of src/ on disk is in
 * those tables, and every folder they list exists.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..');

/** The folders the tables of a markdown document's "## Layout" section list (first column, backticked). */
export function layoutFolders(markdown: string): string[] {
  const start = markdown.search(/^## Layout\s*$/m);
  if (start < 0) return [];
  const rest = markdown.slice(start).split('\n').slice(1);
  const end = rest.findIndex((line) => /^## /.test(line));
  const section = end < 0 ? rest : rest.slice(0, end);
  return section.flatMap((line) => {
    const first = /^\|\s*`([^`]+\/)`/.exec(line);
    return first ? [first[1]!] : [];
  });
}

/** The folders directly under src/, as `src/<name>/`. */
export function srcFolders(projectRoot: string): string[] {
  return readdirSync(join(projectRoot, 'src'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `src/${entry.name}/`)
    .sort();
}

/** What disagrees between a layout document and the tree: folders missing from either. */
export function layoutMismatches(projectRoot: string, markdown: string) {
  const listed = layoutFolders(markdown);
  return {
    notListed: srcFolders(projectRoot).filter((folder) => !listed.includes(folder)),
    notOnDisk: listed.filter((folder) => {
      const path = join(projectRoot, folder);
      return !existsSync(path) || !statSync(path).isDirectory();
    }),
  };
}

describe('docs/contributors.md "Layout"', () => {
  const doc = readFileSync(join(root, 'docs', 'contributors.md'), 'utf8');

  it('has a layout table', () => {
    assert.ok(layoutFolders(doc).length > 0, 'a "## Layout" section with tables of backticked folders');
  });

  it('lists every folder of src/, and only folders that exist', () => {
    assert.deepEqual(layoutMismatches(root, doc), { notListed: [], notOnDisk: [] });
  });

  it('reads the tables of the Layout section only', () => {
    const markdown = [
      '## Layout',
      '| folder | holds |',
      '| --- | --- |',
      '| `src/orders/` | orders |',
      '| `contract/` | the base |',
      '## Next',
      '| `src/elsewhere/` | not layout |',
    ].join('\n');
    assert.deepEqual(layoutFolders(markdown), ['src/orders/', 'contract/']);
    assert.deepEqual(layoutMismatches(root, markdown).notOnDisk, []);
    assert.ok(layoutMismatches(root, markdown).notListed.includes('src/webhooks/'));
  });
});
