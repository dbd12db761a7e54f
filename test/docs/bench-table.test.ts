/**
 * The table of current figures in docs/benchmarks.md is what `npm run bench:table` writes from the
 * committed results in docs/bench/: no figure in it is typed by hand.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BEGIN, END, readResults, withBenchTable } from '../../scripts/bench/table';

const root = join(__dirname, '..', '..');
const docPath = join(root, 'docs', 'benchmarks.md');

describe('docs/benchmarks.md: current figures', () => {
  it('the table is the one npm run bench:table writes from docs/bench/', async () => {
    const doc = readFileSync(docPath, 'utf8');
    assert.equal(doc, await withBenchTable(doc, readResults(root), docPath));
  });

  it('a figure changed by hand, or a result file changed without the table, is caught', async () => {
    const doc = readFileSync(docPath, 'utf8');
    const results = readResults(root);
    const table = doc.slice(doc.indexOf(BEGIN), doc.indexOf(END));
    const edited = doc.replace(table, table.replace(/PASS/, 'FAIL').replace(/\d+\.\d/, '9.9'));
    assert.notEqual(edited, doc);
    assert.notEqual(edited, await withBenchTable(edited, results, docPath));
    const changed = structuredClone(results);
    changed.normal.targets[0]!.value += 1;
    assert.notEqual(doc, await withBenchTable(doc, changed, docPath));
  });

  it('quotes every part it reads from a committed file', () => {
    const doc = readFileSync(docPath, 'utf8');
    const table = doc.slice(doc.indexOf(BEGIN), doc.indexOf(END));
    for (const part of ['normal', 'provider-pace', 'readers'])
      assert.match(table, new RegExp(`\\| ${part} `));
  });
});
