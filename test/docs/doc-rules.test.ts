/**
 * Docs are a reference, not a diary (issue 33): no commit hashes in docs/*.md or the README,
 * docs/contributors.md stays short enough to read, and every section the code cites by name
 * (`docs/operators.md "Orders on hold"`) is still a heading of that page.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');
const pages = ['README.md', ...readdirSync(join(root, 'docs')).map((name) => `docs/${name}`)].filter((path) =>
  path.endsWith('.md'),
);
const MAX_CONTRIBUTORS_LINES = 600;

/**
 * Words that look like commit hashes: 7–40 hex digits with at least one digit and one letter a–f,
 * not part of a longer name (`evt_…`, a UUID's groups, `tfk_…`). Fenced code blocks are left out:
 * they show example keys, IDs and outputs, never a commit. Numbers (no letter) and words like
 * `deadbeef` or `decade` (no digit) are not hashes.
 */
export function commitHashes(markdown: string): string[] {
  const prose = markdown.replace(/^[ \t]*(```|~~~)[^\n]*\n[\s\S]*?^[ \t]*\1[ \t]*$/gm, '');
  return [...prose.matchAll(/(?<![\w-])[0-9a-fA-F]{7,40}(?![\w-])/g)]
    .map(([word]) => word)
    .filter((word) => /[0-9]/.test(word) && /[a-fA-F]/.test(word));
}

/** `docs/<page>.md "<Section>"` citations in a text (a comment may break the line between them). */
export function sectionCitations(text: string): { page: string; section: string }[] {
  return [...text.matchAll(/docs\/([a-z-]+\.md)[\s/*]*"([^"\n]+)"/g)].map(([, page, section]) => ({
    page: page!,
    section: section!,
  }));
}

/** A page's headings, without their `#`s. */
function headings(page: string): string[] {
  return readFileSync(join(root, 'docs', page), 'utf8')
    .split('\n')
    .filter((line) => /^#{1,6} /.test(line))
    .map((line) => line.replace(/^#+ /, '').trim());
}

describe('docs are a reference', () => {
  it('the hash finder catches a commit in prose, in inline code and in a link, and nothing else', () => {
    const sample = [
      'Run A (commit 62c1e74) and `9bb9305` gave 0.63 ×; see [the fix](https://example.com/commit/2e305be4f).',
      'Not hashes: 3600000, deadbeef, order-demo-1, evt_Newfpl1S4lMB0PRSldNZsUTipT, 550e8400-e29b-41d4-a716-446655440000.',
      '```',
      'X-Key: tfk_3f9a2c1d7e  a1b2c3d4e5',
      '```',
    ].join('\n');
    assert.deepEqual(commitHashes(sample), ['62c1e74', '9bb9305', '2e305be4f']);
  });

  for (const page of pages) {
    it(`${page} names no commit hash`, () => {
      assert.deepEqual(commitHashes(readFileSync(join(root, page), 'utf8')), [], `${page}: a commit hash`);
    });
  }

  it(`docs/contributors.md is at most ${MAX_CONTRIBUTORS_LINES} lines`, () => {
    const lines = readFileSync(join(root, 'docs', 'contributors.md'), 'utf8').split('\n').length - 1;
    assert.ok(lines <= MAX_CONTRIBUTORS_LINES, `${lines} lines`);
  });

  it('the citation finder reads a page and a section, across a comment’s line break', () => {
    const sample =
      'see docs/operators.md "Orders on hold" and (docs/contributors.md\n   // "The latest run decides")';
    assert.deepEqual(sectionCitations(sample), [
      { page: 'operators.md', section: 'Orders on hold' },
      { page: 'contributors.md', section: 'The latest run decides' },
    ]);
  });

  it('every section the code, scripts, tests and docs cite by name is a heading of its page', () => {
    const files = execFileSync(
      'git',
      ['ls-files', 'src', 'contract', 'scripts', 'test', 'deploy', 'docs', 'README.md'],
      {
        cwd: root,
        encoding: 'utf8',
      },
    )
      .split('\n')
      .filter((file) => /\.(ts|mjs|md|ya?ml)$/.test(file));
    const stale: string[] = [];
    for (const file of files) {
      for (const { page, section } of sectionCitations(readFileSync(join(root, file), 'utf8'))) {
        const known = pages.includes(`docs/${page}`) ? headings(page) : [];
        if (!known.includes(section)) stale.push(`${file}: docs/${page} "${section}"`);
      }
    }
    assert.deepEqual(stale, []);
  });
});
