/**
 * Deeply nested JSON (issue 36, finding 6): a body of 20,000 arrays inside one another (40 kB,
 * under the batch body limit) is refused with a 400 naming the depth limit on every route that
 * takes a body, and its log lines read as JSON; an error carrying a raw request body is logged
 * readably, without the body. Real HTTP against createApp and a real Temporal server; no worker
 * (nothing here may start a workflow but the one shallow batch, which stays ACCEPTED).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Problem } from '../../src/http/errors';
import { capturingLogger, startTestApi, type TestApi } from '../helpers/api';
import { connectTestClient } from '../helpers/temporal';
import { idleProvider, mobileTopupBody } from '../helpers/stack';

const run = randomUUID().slice(0, 8);
/** `{"orders":[` + `[`×depth + `]`×depth + `]}`: the body of the issue at depth 20,000. */
const nestedBatch = (depth: number) => `{"orders":[${'['.repeat(depth)}${']'.repeat(depth)}]}`;
const json = { 'content-type': 'application/json' };

describe('deeply nested JSON bodies', { timeout: 120_000 }, () => {
  let temporal: { client: Client; close(): Promise<void> };
  let api: TestApi;
  const logs = capturingLogger();

  before(async () => {
    temporal = await connectTestClient();
    api = await startTestApi({
      client: temporal.client,
      taskQueue: `deep-json-${run}`,
      provider: idleProvider,
      logger: logs.logger,
    });
  });
  after(async () => {
    await api?.close();
    await temporal?.close();
  });

  /** The log lines of one request, by its ID: each must have been JSON with readable members. */
  const linesOf = (requestId: string) => logs.lines.filter((line) => line.requestId === requestId);

  it('a batch of 20,000 nested arrays (40 kB) answers 400 naming the depth limit, and its log lines are readable', async () => {
    const body = nestedBatch(20_000);
    assert.ok(body.length > 40_000 && body.length < 41_000);
    const res = await api.request<Problem>('POST', '/v1/orders/batch', { body, headers: json });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.type, '/problems/validation-error');
    assert.deepEqual(res.body.errors, [
      { field: '(body)', message: 'arrays and objects nested deeper than 32 levels (the limit)' },
    ]);
    assert.match(res.body.detail, /nests deeper than 32 levels/);

    const lines = linesOf(String(res.headers['x-request-id']));
    const final = lines.find((line) => line.msg === 'POST /v1/orders/batch 400');
    assert.ok(final, `the request's line: ${JSON.stringify(lines)}`);
    for (const line of logs.raw.filter((raw) => raw.includes(String(res.headers['x-request-id'])))) {
      assert.doesNotMatch(line, /unable to serialize/);
      assert.ok(line.length < 2_000, `a log line of ${line.length} characters: the body was logged`);
    }
  });

  it('every route that takes a body refuses it the same way, before it reads anything (no 500)', async () => {
    // 5,000 levels fit the single routes' 16 kB limit; the duplicate-member check overflowed there too.
    const deep = '['.repeat(5_000) + ']'.repeat(5_000);
    for (const [path, body] of [
      ['/v1/orders', `{"type":"mobile_topup","ref":${deep}}`],
      [`/v1/orders/R-${run}/review`, `{"decision":"RECHECK","note":${deep}}`],
      ['/v1/reviews/bulk', `{"bulkId":"b-${run}","decision":"RECHECK","note":"x","filter":${deep}}`],
    ] as const) {
      const res = await api.request<Problem>('POST', path, { body, headers: json });
      assert.equal(res.status, 400, `${path}: ${res.text}`);
      assert.equal(res.body.errors?.[0]?.field, '(body)', path);
    }
  });

  it('the limit counts arrays and objects, not brackets inside strings; a body at the limit is read', async () => {
    // 33 levels: refused.
    const tooDeep = await api.request<Problem>('POST', '/v1/orders/batch', {
      body: `{"orders":[${'['.repeat(31)}${']'.repeat(31)}]}`,
      headers: json,
    });
    assert.equal(tooDeep.status, 400, tooDeep.text);
    assert.equal(tooDeep.body.errors?.[0]?.field, '(body)');

    // 32 levels and brackets in a string: read, and each item answered on its own.
    const brackets = '[{'.repeat(100);
    const atLimit = await api.request<{ results: { status: number; body: Problem }[] }>(
      'POST',
      '/v1/orders/batch',
      {
        body: `{"orders":[${'['.repeat(30)}${']'.repeat(30)},{"type":"mobile_topup","ref":"${brackets}"}]}`,
        headers: json,
      },
    );
    assert.equal(atLimit.status, 200, atLimit.text);
    assert.deepEqual(
      atLimit.body.results.map((r) => r.status),
      [400, 400],
    );
    assert.ok(atLimit.body.results[1]?.body.errors?.some((e) => e.field === 'ref'));

    // An ordinary batch is untouched.
    const ok = await api.request<{ results: { status: number }[] }>('POST', '/v1/orders/batch', {
      body: { orders: [mobileTopupBody(`DEEP-${run}`)] },
    });
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(
      ok.body.results.map((r) => r.status),
      [201],
    );
    await temporal.client.workflow.getHandle(`order-DEEP-${run}`).terminate('test done');
  });

  it('an error that carries the raw request body (as body-parser attaches it) is logged readably, without the body', () => {
    const err = Object.assign(new RangeError('Maximum call stack size exceeded'), {
      status: 403,
      type: 'entity.verify.failed',
      body: Buffer.from(nestedBatch(20_000)),
    });
    logs.logger.error({ err, requestId: `logged-${run}` }, 'a failed request');
    const [line] = linesOf(`logged-${run}`) as [{ err: Record<string, unknown> } | undefined];
    assert.ok(line, 'the line was written');
    assert.equal(typeof line.err, 'object', `err logged as ${JSON.stringify(line.err)}`);
    assert.equal(line.err.type, 'RangeError');
    assert.equal(line.err.message, 'Maximum call stack size exceeded');
    assert.equal(line.err.status, 403);
    assert.equal(line.err.body, undefined, 'the request body is not logged');
  });
});
