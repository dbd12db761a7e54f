import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { knownEnvironmentVariables } from '../src/config';
import { REVIEW_QUEUE_QUERY, reviewQueueUiUrl, workflowUiUrl } from '../src/temporal/ui-links';

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

describe('README: links into Temporal UI and the operator guide', () => {
  const uiBase = 'http://127.0.0.1:8233';
  const links = [...readme.matchAll(/http:\/\/127\.0\.0\.1:8233(\/[^\s)`'"]*)?/g)].map((m) => new URL(m[0]));

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
    assert.ok(
      links.some((link) => link.href === queue),
      'the README links the review queue',
    );
    assert.equal(new URL(queue).searchParams.get('query'), REVIEW_QUEUE_QUERY);
    assert.ok(readme.includes(`\`${REVIEW_QUEUE_QUERY}\``), 'and names the query an operator types');
  });

  it('links an order to its workflow the way the order view does', () => {
    const workflow = workflowUiUrl(uiBase, 'default', 'order-demo-1');
    assert.ok(
      links.some((link) => link.href === workflow),
      workflow,
    );
  });

  it('walks the operator through the UI as it is: User Metadata, the Queries tab, More Actions → Send an Update or a Signal', () => {
    const guide = readme.slice(readme.indexOf("## Operator's guide"), readme.indexOf('## Audit export'));
    assert.match(guide, /\*\*User Metadata\*\*/);
    assert.match(guide, /\*\*Queries\*\* tab/);
    assert.match(guide, /\*\*More Actions\*\* → \*\*Send an Update\*\* → Name: `decideReview`/);
    assert.match(guide, /\*\*Send a Signal\*\*\s+→ `resolveReview`/);
  });
});
