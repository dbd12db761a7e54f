/**
 * What an order shows of itself in Temporal UI, read back through the client as the UI reads it:
 * the static summary (`describe`), the current details and handler descriptions (the
 * `__temporal_workflow_metadata` query), the summaries on timers and activities (the history),
 * and the ReviewSince search attribute. A real Temporal server, the sandbox, the order worker and
 * the API, with payload encryption on.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Client, type Connection, WorkflowUpdateFailedError } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { decodeArrayFromPayloads, loadDataConverter } from '@temporalio/common/lib/internal-non-workflow';
import { apiTestConfig, testClients, type TestApi } from '../helpers/api';
import { auditOrder } from '../../src/audit/order-audit';
import { dataConverterFromConfig } from '../../src/codec/data-converter';
import { providerRefFor } from '../../src/orders/provider-ref';
import { ENCRYPTED_ENCODING } from '../../src/codec/encryption-codec';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import {
  decideReviewUpdate,
  orderWorkflowId,
  ReviewSinceAttribute,
  type OrderInput,
  type OrderView,
  type ReviewDecision,
} from '../../contract/order';
import {
  handlerDescriptions,
  pastableDecisions,
  reviewNotice,
  type PastableDecision,
  type ReviewNotice,
} from '../../contract/ui-metadata';
import { rawHistory } from '../helpers/raw-history';
import { internetRequest, mobileRequest, newRef, scaledTimings, type TestSandbox } from '../helpers/orders';
import type { TestTemporal } from '../helpers/temporal';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const UNKNOWN = sandboxSpecialNumbers.unknownError;

/** What the SDK's built-in `__temporal_workflow_metadata` query answers (temporal.api.sdk.v1.WorkflowMetadata). */
interface WorkflowMetadata {
  definition: {
    type: string;
    queryDefinitions: { name: string; description?: string }[];
    signalDefinitions: { name: string; description?: string }[];
    updateDefinitions: { name: string; description?: string }[];
  };
  currentDetails: string;
}

describe('Temporal UI metadata', () => {
  const dataConverter = dataConverterFromConfig({
    PAYLOAD_ENCRYPTION_KEYS: `ui-test:${randomBytes(32).toString('base64')}`,
  });
  let stack: OrderStack<'main'>;
  let temporal: TestTemporal;
  let sandbox: TestSandbox;
  let connection: Connection;
  let client: Client;
  let api: TestApi;

  before(async () => {
    stack = await startOrderStack({
      name: 'ui-metadata',
      workers: { main: {} },
      dataConverter,
      api: { timingsFor: () => scaledTimings(), config: apiTestConfig() },
    });
    ({ temporal, sandbox, connection, client, api } = stack);
  });

  after(() => stack?.stop());

  async function inReview(ref: string): Promise<OrderView> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const res = await api.request<OrderView>('GET', `/v1/orders/${ref}`, { apiKey: testClients.shop.key });
      if (res.body.status === 'NEEDS_REVIEW') return res.body;
      assert.ok(Date.now() < deadline, `${ref} in review: ${res.text}`);
      await sleep(100);
    }
  }

  const metadataOf = (workflowId: string) =>
    client.workflow.getHandle(workflowId).query<WorkflowMetadata>('__temporal_workflow_metadata');

  it('an order in review: its summary, why it is there, the evidence and the decision to paste, described handlers, ReviewSince', async () => {
    const request = mobileRequest(newRef('ui-review'), UNKNOWN);
    const submitted = await api.request('POST', '/v1/orders', {
      apiKey: testClients.shop.key,
      body: request,
    });
    assert.equal(submitted.status, 201, submitted.text);
    const view = await inReview(request.ref);
    const workflowId = orderWorkflowId(request.ref);
    const handle = client.workflow.getHandle(workflowId);

    // The order continued as new into review: the run Temporal UI opens holds it in its input,
    // which the workflow page shows as it opens (one block per argument, each with a copy button).
    const description = await handle.describe();
    const firstRunId = description.raw.workflowExecutionInfo?.firstRunId;
    assert.ok(firstRunId && firstRunId !== description.runId, 'the review has a run of its own');
    const started = await handle
      .fetchHistory()
      .then((h) => h.events![0]!.workflowExecutionStartedEventAttributes!);
    const [input, notice, ...decisions] = (await decodeArrayFromPayloads(
      loadDataConverter(dataConverter),
      started.input?.payloads as Payload[],
    )) as [OrderInput, ReviewNotice, ...PastableDecision[]];
    assert.equal(input.continued?.view.status, 'NEEDS_REVIEW');
    // Listed in review from its first event: visibility never shows the review's run as SUBMITTED.
    const startedStatus = started.searchAttributes?.indexedFields?.OrderStatus?.data;
    assert.equal(JSON.parse(Buffer.from(startedStatus ?? []).toString()), 'NEEDS_REVIEW');
    assert.deepEqual(notice, reviewNotice(view));
    assert.equal(notice.why, view.review!.reason);
    assert.equal(notice.evidence, view.review!.evidence);
    assert.deepEqual(decisions, pastableDecisions);
    assert.ok(!JSON.stringify([notice, decisions]).includes(request.msisdn), 'no phone number in the notice');

    // The review queue (by OrderStatus) lists the order once: the run it left did not publish it.
    const listed: [string, string][] = [];
    for await (const w of client.workflow.list({
      query: `WorkflowId="${workflowId}" AND OrderStatus="NEEDS_REVIEW"`,
    }))
      listed.push([w.runId, w.status.name]);
    assert.deepEqual(listed, [[description.runId, 'RUNNING']]);

    // The static summary the API set at start, on the first run: type, ref, amount; never the number.
    const summary = await (
      await client.workflow.getHandle(workflowId, firstRunId).describe()
    ).staticSummary();
    assert.equal(
      summary,
      `Mobile top-up ${request.ref} · amount ${request.amount} · plan ${request.planCode}`,
    );
    assert.equal(notice.order, summary, 'the review run says what the order is');

    // ReviewSince, set with the status: when the order entered review.
    assert.equal(
      description.typedSearchAttributes.get(ReviewSinceAttribute)?.toISOString(),
      view.review!.since,
    );

    // The current details: the status, why, the evidence, and one decision JSON per decision.
    const metadata = await metadataOf(workflowId);
    const details = metadata.currentDetails;
    assert.match(details, /^\*\*NEEDS_REVIEW\*\* · Mobile top-up /);
    assert.ok(details.includes(`- **Why:** ${view.review!.reason}`), details);
    assert.ok(details.includes(`- **Evidence:** ${view.review!.evidence}`), details);
    assert.ok(details.includes('decideReview') && details.includes('resolveReview'), details);
    const pastable = [...details.matchAll(/```json\n(.+)\n```/g)].map((m) => m[1]!);
    assert.deepEqual(
      pastable.map((json) => (JSON.parse(json) as ReviewDecision).decision),
      ['FULFILLED', 'REFUNDED', 'RECHECK'],
    );
    assert.ok(!details.includes(request.msisdn) && !summary!.includes(request.msisdn), 'no phone number');

    // The current details are a query answer, never stored, and encrypted on the way all the same:
    // a client without the codec cannot read them.
    const withoutCodec = new Client({ connection, namespace: temporal.namespace });
    await assert.rejects(
      withoutCodec.workflow.getHandle(workflowId).query('__temporal_workflow_metadata'),
      /encoding/i,
    );

    // The handlers, described for the UI, with their payload's shape.
    const described = (list: { name: string; description?: string }[], name: string) =>
      list.find((d) => d.name === name)?.description;
    assert.equal(described(metadata.definition.queryDefinitions, 'status'), handlerDescriptions.status);
    assert.equal(
      described(metadata.definition.signalDefinitions, 'resolveReview'),
      handlerDescriptions.resolveReview,
    );
    assert.equal(
      described(metadata.definition.updateDefinitions, 'decideReview'),
      handlerDescriptions.decideReview,
    );

    // The JSON as pasted, unfilled, is rejected before it is recorded; filled in, it decides.
    const refunded = JSON.parse(pastable[1]!) as ReviewDecision;
    await assert.rejects(
      handle.executeUpdate(decideReviewUpdate, { args: [refunded] }),
      (err) => err instanceof WorkflowUpdateFailedError && /operator, note/.test(String(err.cause?.message)),
    );
    const filled = { ...refunded, operator: 'amina', note: 'no credit, ticket 4412' };
    // On UNKNOWN_ERROR a refund waits for the provider: refused with its guidance, applied when forced.
    const waits = await handle.executeUpdate(decideReviewUpdate, { args: [filled] });
    assert.equal(waits.outcome, 'refused');
    assert.match(waits.refusal?.reason ?? '', /do not refund|not to refund before/);
    const outcome = await handle.executeUpdate(decideReviewUpdate, { args: [{ ...filled, force: true }] });
    assert.equal(outcome.outcome, 'applied');
    await handle.result();
    const after = (await metadataOf(workflowId)).currentDetails;
    assert.match(after, /^\*\*REFUNDED\*\* · /);
    assert.ok(!after.includes('```json'), 'nothing to decide any more');
  });

  it('timers and activities say what they are for; every piece of metadata is a payload the codec encrypts', async () => {
    const request = internetRequest(newRef('ui-summaries'));
    // The provider holds it in HANDLING until told otherwise: the poll waits for each phase.
    await sandbox.changeTopup(providerRefFor('shop', request.ref), { status: 'HANDLING' });
    const submitted = await api.request('POST', '/v1/orders', {
      apiKey: testClients.shop.key,
      body: request,
    });
    assert.equal(submitted.status, 201, submitted.text);
    const workflowId = orderWorkflowId(request.ref);
    const handle = client.workflow.getHandle(workflowId);
    // The lean lifecycle polls in one activity: let it see HANDLING once before the order settles.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await sandbox.changeTopup(providerRefFor('shop', request.ref), { status: 'FULFILLED' });
    assert.equal(((await handle.result()) as OrderView).status, 'FULFILLED');

    const description = await handle.describe();
    const { entries } = await auditOrder(client, description, {
      ref: request.ref,
      client: 'shop',
      reveal: false,
    });
    const activities = entries.filter((e) => e.kind === 'activity');
    // The send is a local activity (a marker, which carries no metadata); the polling activity says what it is for.
    assert.deepEqual(
      activities.map((e) => [
        e.activityType,
        e.local === true ? 'local' : String(e.summary).replace(/[\d.]+ s/, 'N s'),
      ]),
      [
        ['sendInternetTopup', 'local'],
        // The test stack polls at the provider's pace, scaled.
        ['pollInternetTopup', 'status checks every N s until the order settles'],
      ],
    );
    assert.deepEqual(
      entries.filter((e) => e.kind === 'timer'),
      [],
      'no timer: the server retries the polling',
    );
    assert.equal(
      await description.staticSummary(),
      `Internet top-up ${request.ref} · value ${request.value} · ${request.lineType}`,
    );

    // In Temporal itself, the summaries (the workflow's, its timers' and activities') are encrypted
    // like any payload: the UI shows them through the codec server.
    const raw = await rawHistory(client.workflowService, temporal.namespace, workflowId);
    for (const text of ['until the order settles', 'Internet top-up'])
      assert.ok(!raw.bytes.includes(text), `"${text}" is stored encrypted`);
    const { workflowExecutionInfo, executionConfig } = await client.workflowService.describeWorkflowExecution(
      {
        namespace: temporal.namespace,
        execution: { workflowId },
      },
    );
    assert.ok(workflowExecutionInfo);
    const encoding = Buffer.from(executionConfig?.userMetadata?.summary?.metadata?.encoding ?? []).toString();
    assert.equal(encoding, ENCRYPTED_ENCODING);
  });
});
