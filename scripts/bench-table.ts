/**
 * `npm run bench:table`: regenerates the table of current figures in docs/benchmarks.md from the
 * committed bench results in docs/bench/ (one file per part the table quotes).
 *
 *   npm run bench:table                                   # regenerate the table
 *   npm run bench:table -- --take bench-results/bench-….json …   # make these runs current, then regenerate
 *   npm run bench:table -- --check                        # exit 1 if the table is not what it would write
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { projectRoot } from './lib/processes';
import { benchDir, partOf, readResults, withBenchTable } from './bench/table';

async function main(args: string[]): Promise<number> {
  const docPath = join(projectRoot, 'docs', 'benchmarks.md');
  const check = args.includes('--check');
  const take = args.includes('--take')
    ? args.slice(args.indexOf('--take') + 1).filter((a) => !a.startsWith('--'))
    : [];
  for (const file of take) {
    const result = JSON.parse(readFileSync(resolve(file), 'utf8')) as Record<string, unknown>;
    const part = partOf(result);
    if (!part) throw new Error(`${file}: not a result of a part the table quotes`);
    mkdirSync(benchDir(projectRoot), { recursive: true });
    const target = join(benchDir(projectRoot), `${part}.json`);
    // Docs quote no commit hash: the commit that takes the file is its provenance.
    delete result.git;
    const text = JSON.stringify(result, null, 2);
    writeFileSync(target, await format(text, { ...(await resolveConfig(target)), filepath: target }));
    console.log(`${file} → docs/bench/${part}.json`);
  }
  const doc = readFileSync(docPath, 'utf8');
  const next = await withBenchTable(doc, readResults(projectRoot), docPath);
  if (check) {
    if (next === doc) return 0;
    console.error('docs/benchmarks.md: the table of current figures is not what npm run bench:table writes');
    return 1;
  }
  if (next !== doc) writeFileSync(docPath, next);
  console.log(next === doc ? 'docs/benchmarks.md: table unchanged' : 'docs/benchmarks.md: table regenerated');
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
