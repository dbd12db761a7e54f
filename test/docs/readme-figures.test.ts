/**
 * Every figure the README quotes is the code's own: each is read from the constant, default or
 * recorded history it describes, so a change to one fails here until the README says it too.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OrderRequest } from '../../contract/schemas';
import { loadConfig } from '../../src/config';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { HANDLING_MS, PENDING_MS } from '../../src/sandbox/simulation';
import { billableActions, MAX_ACTIONS } from '../../scripts/bench/billable-actions';
import { historiesDir, historyFromJson, LIFECYCLE_VERSION } from '../helpers/histories';

const root = join(__dirname, '..', '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const defaults = loadConfig({});
/** One line of the README, whitespace folded (the text wraps anywhere). */
const flat = readme.replace(/\s+/g, ' ');
const says = (text: string) => assert.ok(flat.includes(text), `the README says "${text}"`);

/** The normal mobile top-up's recorded history (the replay fixture, at the spec's timings). */
function normalOrder() {
  const json: unknown = JSON.parse(readFileSync(join(historiesDir, 'mobile-fulfilled.json'), 'utf8'));
  return historyFromJson(json).events ?? [];
}

describe('README: the figures it quotes', () => {
  it('the Node.js version is package.json’s engines', () => {
    const engines = (
      JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } }
    ).engines.node;
    const [, major, minor] = /^>=(\d+)\.(\d+)/.exec(engines)!;
    says(`Node.js ≥ ${major}.${minor}`);
  });

  it('the addresses the dev stack prints are its defaults', () => {
    says(`Temporal UI: http://127.0.0.1:${defaults.DEV_TEMPORAL_UI_PORT}`);
    says(`API: http://127.0.0.1:${defaults.PORT}`);
    says(`http://127.0.0.1:${defaults.WEBHOOK_RECEIVER_PORT}/webhooks`);
    const devStack = readFileSync(join(root, 'scripts', 'dev-stack.ts'), 'utf8');
    for (const [, address] of flat.matchAll(/http:\/\/(127\.0\.0\.1:\d+)\/metrics/g)) {
      assert.ok(devStack.includes(`'${address}'`), `the dev stack serves metrics on ${address}`);
    }
  });

  it('the sandbox’s timeline and the polling interval are the spec timings and the default', () => {
    says(`keeps a top-up PENDING for ${PENDING_MS / 1000} s and HANDLING for ${HANDLING_MS / 1000} s`);
    says(`the workflow checks every ${defaults.POLL_INTERVAL_MS / 1000} s`);
    says(`About ${(PENDING_MS + HANDLING_MS) / 1000} s after submission: \`status: "FULFILLED"\``);
  });

  it('a normal order’s history events and billable actions are its recorded history’s', () => {
    const events = normalOrder();
    says(`The history is ${events.length} events`);
    const actions = billableActions(events).total;
    assert.equal(actions, MAX_ACTIONS, 'the bench’s and the billable-actions test’s limit');
    says(`A normal order costs ${actions} Temporal Cloud actions`);
  });

  it('the lifecycle’s number is the fixtures’ lifecycle version', () => {
    says(`Every order type takes this one lifecycle, **${LIFECYCLE_VERSION}**`);
  });

  it('the example requests are valid orders, and the line numbers’ forms are the schema’s', () => {
    const bodies = [...readme.matchAll(/-d '(\{"type":[^']+\})'/g)].map(
      ([, body]) => JSON.parse(body!) as unknown,
    );
    assert.equal(bodies.length, 3, 'a mobile top-up, an internet top-up, a gift card');
    for (const body of bodies) assert.ok(OrderRequest.safeParse(body).success, JSON.stringify(body));
    says("an ADSL line's number has 9 digits with the leading 0; a 4G line's is `213` and 9 digits");
    const internet = { type: 'internet_topup', ref: 'r', value: 1000 };
    const valid = (lineType: string, number: string) =>
      OrderRequest.safeParse({ ...internet, lineType, number }).success;
    assert.deepEqual(
      [valid('ADSL', '021123456'), valid('ADSL', '02112345'), valid('ADSL', '121123456')],
      [true, false, false],
    );
    assert.deepEqual([valid('4G', '213472731602'), valid('4G', '21347273160')], [true, false]);
  });

  it('the scripted numbers are the sandbox’s', () => {
    says(`\`${sandboxSpecialNumbers.refunded}\` → REFUNDED with a \`refundMessage\``);
    says(`\`${sandboxSpecialNumbers.planMismatch}\` → REFUNDED with \`suggestedOffers\``);
    says(`\`${sandboxSpecialNumbers.unknownError}\` → the provider's \`UNKNOWN_ERROR\``);
  });

  it('the webhook walk-through counts the events its log shows', () => {
    const lines = [...readme.matchAll(/\[webhook-receiver\] ✔ order\.\w+ #(\d+)/g)].map(([, n]) => Number(n));
    assert.deepEqual(lines, [1, 2, 3]);
    says(`events: ${lines.length}, delivered: ${lines.length}, attempts: ${lines.length}`);
  });
});
