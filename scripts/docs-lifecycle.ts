/**
 * `npm run docs:lifecycle`: draws the lifecycle's table (src/orders/lifecycle/transitions.workflow.ts)
 * as a Mermaid diagram into docs/contributors.md, between the lifecycle-diagram markers.
 *
 *   npm run docs:lifecycle               # regenerate the diagram
 *   npm run docs:lifecycle -- --check    # exit 1 if the diagram is not what it would write
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from './lib/processes';
import { withLifecycleDiagram } from './lib/lifecycle-diagram';

function main(args: string[]): number {
  const docPath = join(projectRoot, 'docs', 'contributors.md');
  const doc = readFileSync(docPath, 'utf8');
  const next = withLifecycleDiagram(doc);
  if (args.includes('--check')) {
    if (next === doc) return 0;
    console.error('docs/contributors.md: the lifecycle diagram is not what npm run docs:lifecycle writes');
    return 1;
  }
  if (next !== doc) writeFileSync(docPath, next);
  console.log(
    next === doc
      ? 'docs/contributors.md: lifecycle diagram unchanged'
      : 'docs/contributors.md: lifecycle diagram regenerated',
  );
  return 0;
}

process.exit(main(process.argv.slice(2)));
