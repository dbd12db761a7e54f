import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { knownEnvironmentVariables } from '../src/config';
import { REVIEW_QUEUE_QUERY, reviewQueueUiUrl, workflowUiUrl } from '../src/temporal/ui-links';

const root = join(__dirname, '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
/** The README and the readers' pages under docs/, by path from the project root. */
const pages = new Map(
  ['README.md', ...readdirSync(join(root, 'docs')).map((name) => `docs/${name}`)]
    .filter((path) => path.endsWith('.md'))
    .map((path) => [path, read(path)]),
);
const readme = pages.get('README.md')!;
const operators = pages.get('docs/operators.md') ?? '';
const allDocs = [...pages.values()].join('\n');

describe('README and docs/', () => {
  it('document every environment variable the configuration reads', () => {
    const undocumented = knownEnvironmentVariables.filter((name) => !allDocs.includes(`\`${name}\``));
    assert.deepEqual(undocumented, []);
  });

  it('name the two commands and only npm scripts that exist', () => {
    const scripts = Object.keys((JSON.parse(read('package.json')) as { scripts: object }).scripts);
    for (const match of allDocs.matchAll(/npm run ([\w:-]+)/g)) {
      assert.ok(scripts.includes(match[1]!), `npm run ${match[1]} exists`);
    }
    assert.match(readme, /npm start/);
    assert.match(readme, /npm test/);
  });

  it('lead a newcomer from the README to each reader’s page', () => {
    for (const reader of ['integrators', 'operators', 'deployers', 'contributors']) {
      assert.ok(pages.has(`docs/${reader}.md`), `docs/${reader}.md exists`);
      assert.ok(readme.includes(`](docs/${reader}.md)`), `the README links docs/${reader}.md`);
    }
  });

  it('link only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const [path, text] of pages) {
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [file, anchor] = target!.split('#');
        const linked = file ? normalize(join(dirname(path), file)) : path;
        if (!existsSync(join(root, linked))) broken.push(`${path}: ${target} (no file)`);
        else if (
          anchor &&
          linked.endsWith('.md') &&
          !headingSlugs(pages.get(linked) ?? read(linked)).has(anchor)
        ) {
          broken.push(`${path}: ${target} (no heading)`);
        }
      }
    }
    assert.deepEqual(broken, []);
  });
});

/** GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to hyphens. */
function headingSlugs(markdown: string): Set<string> {
  return new Set(
    [...markdown.matchAll(/^#{1,6} (.+)$/gm)].map(([, title]) =>
      title!
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\- _]/gu, '')
        .replace(/ /g, '-'),
    ),
  );
}

describe('README and docs/: links into Temporal UI and the operator guide', () => {
  const uiBase = 'http://127.0.0.1:8233';
  const links = [...allDocs.matchAll(/http:\/\/127\.0\.0\.1:8233(\/[^\s)`'"]*)?/g)].map((m) => new URL(m[0]));

  it('every link into the dev stack’s Temporal UI has the shape of one of the UI’s routes', () => {
    assert.ok(links.length >= 3, `${links.length} links`);
    // src/temporal/ui-links.ts: the UI's workflow list (with a visibility query) and a workflow.
    const routes = [/^\/?$/, /^\/namespaces\/[^/]+\/workflows$/, /^\/namespaces\/[^/]+\/workflows\/[^/]+$/];
    for (const link of links) {
      assert.ok(
        routes.some((route) => route.test(link.pathname)),
        `${link.href} is not a Temporal UI route`,
      );
      if (link.search) assert.deepEqual([...link.searchParams.keys()], ['query'], link.href);
    }
  });

  it('gives the review queue link the dev stack prints: the workflow list filtered by OrderStatus="NEEDS_REVIEW"', () => {
    const queue = reviewQueueUiUrl(uiBase, 'default');
    assert.equal(queue, `${uiBase}/namespaces/default/workflows?query=OrderStatus%3D%22NEEDS_REVIEW%22`);
    assert.ok(operators.includes(queue), 'the operators’ page links the review queue');
    assert.equal(new URL(queue).searchParams.get('query'), REVIEW_QUEUE_QUERY);
    assert.ok(operators.includes(`\`${REVIEW_QUEUE_QUERY}\``), 'and names the query an operator types');
  });

  it('links an order to its workflow the way the order view does', () => {
    const workflow = workflowUiUrl(uiBase, 'default', 'order-demo-1');
    assert.ok(
      links.some((link) => link.href === workflow),
      workflow,
    );
  });

  it('walks the operator through the UI as it is: the review under Input, User Metadata, the Queries tab, More Actions → Send an Update or a Signal', () => {
    const guide = operators.slice(
      operators.indexOf("## Operator's guide"),
      operators.indexOf('## Audit export'),
    );
    assert.match(guide, /opens on \*\*History\*\*\s+with the review notice/);
    assert.match(guide, /\*\*User Metadata\*\*/);
    assert.match(guide, /\*\*Queries\*\* tab/);
    assert.match(guide, /\*\*More Actions\*\* → \*\*Send an Update\*\* → Name:\s+`decideReview`/);
    assert.match(guide, /\*\*Send a Signal\*\*\s+→ `resolveReview`/);
  });
});
