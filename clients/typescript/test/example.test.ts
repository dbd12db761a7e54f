/**
 * The example back office of docs/integrators.md runs as written, against the real API: it
 * submits, waits for its order's final webhook (verified by the library), reads the order and
 * exits. The docs show the file itself (importing from '@topup/client' instead of '../src').
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../../src/temporal/dev-server';
import { scaledTimings } from '../../../test/helpers/orders';
import { clientsWith } from '../../../test/helpers/webhooks';
import { startOrderStack, type OrderStack } from '../../../test/helpers/stack';

const example = resolve(__dirname, '..', 'examples', 'back-office.ts');
const KEY = 'test-key-example';

describe('the example back office', { timeout: 300_000 }, () => {
  let stack: OrderStack<'orders'>;
  let port: number;

  before(async () => {
    port = await freePort();
    stack = await startOrderStack({
      name: 'client-example',
      sandbox: { timeScale: 0.25 },
      workers: { orders: {} },
      api: {
        timingsFor: () =>
          scaledTimings({ firstCheckMs: 1_250, handlingCheckMs: 3_750, maxIntervalMs: 5_000 }),
      },
      webhooks: {
        clients: clientsWith({
          backoffice: { key: KEY, webhooks: [{ id: 'erp', url: `http://127.0.0.1:${port}/` }] },
        }),
      },
    });
  });
  after(async () => stack?.stop());

  it('is under 40 lines and is the one docs/integrators.md shows', () => {
    const source = readFileSync(example, 'utf8');
    assert.ok(source.split('\n').length <= 40, 'under 40 lines');
    const docs = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'integrators.md'), 'utf8');
    assert.ok(
      docs.includes(source.replace("from '../src'", "from '@topup/client'")),
      'shown verbatim in the docs',
    );
  });

  it('submits, gets the final webhook, reads the order FULFILLED', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', example], {
      env: {
        ...process.env,
        API_URL: stack.api.url,
        API_KEY: KEY,
        WEBHOOK_SECRET: stack.webhooks.secretOf('backoffice', 'erp'),
        WEBHOOK_PORT: String(port),
      },
      timeout: 120_000,
    });
    assert.match(stdout, /demo-\d+: webhook order\.fulfilled #\d+\n/);
    assert.match(stdout, /demo-\d+ is FULFILLED/);
  });
});
