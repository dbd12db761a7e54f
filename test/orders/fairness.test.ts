/**
 * Every order's workflow start carries its client as the fairness key, with the weight from the
 * clients file, and its origin as the priority: a single submission ahead of batch items (src/orders/priority.ts).
 * Read back from Temporal's own description of the workflow (a real dev server; no worker).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { apiTestConfig, testClients, testClientsFile, type TestApi } from '../helpers/api';
import { ClientRegistry } from '../../src/clients/registry';
import { orderWorkflowId } from '../../contract/order';
import { idleProvider, mobileTopupBody, startOrderStack, type OrderStack } from '../helpers/stack';

const taskQueue = `api-fairness-${randomUUID()}`;
const run = randomUUID().slice(0, 8);
const provider = idleProvider;
const topUp = mobileTopupBody;

describe('the fairness key, weight and priority of an order’s workflow', { timeout: 120_000 }, () => {
  let stack: OrderStack<never>;
  let client: Client;
  let api: TestApi;

  before(async () => {
    // acme weighs 3 in this clients file; shop has no weight (1).
    const clients = new ClientRegistry({
      ...testClientsFile,
      clients: testClientsFile.clients.map((c) => (c.id === 'acme' ? { ...c, fairnessWeight: 3 } : c)),
    });
    stack = await startOrderStack({
      name: 'api-fairness',
      sandbox: false,
      api: { taskQueue, provider, clients, config: apiTestConfig() },
    });
    ({ client, api } = stack);
  });
  after(() => stack?.stop());

  const priorityOf = async (ref: string, owner?: string) =>
    (await client.workflow.getHandle(orderWorkflowId(ref, owner)).describe()).priority;

  it('a single order: its client as fairness key, weight 1 by default, priority 2', async () => {
    const ref = `F-${run}-single`;
    assert.equal((await api.request('POST', '/v1/orders', { body: topUp(ref) })).status, 201);
    assert.deepEqual(await priorityOf(ref), { priorityKey: 2, fairnessKey: 'shop', fairnessWeight: 1 });
  });

  it('a batch item: its client and weight from the clients file, priority 4 (behind singles)', async () => {
    const ref = `F-${run}-batch`;
    const answer = await api.request<{ results: { status: number }[] }>('POST', '/v1/orders/batch', {
      body: { orders: [topUp(ref)] },
      apiKey: testClients.acme.key,
    });
    assert.equal(answer.body.results[0]?.status, 201);
    assert.deepEqual(await priorityOf(ref, 'acme'), {
      priorityKey: 4,
      fairnessKey: 'acme',
      fairnessWeight: 3,
    });
  });

  it('the same client singly: the same key and weight, priority 2', async () => {
    const ref = `F-${run}-acme-single`;
    const answer = await api.request('POST', '/v1/orders', {
      body: topUp(ref),
      apiKey: testClients.acme.key,
    });
    assert.equal(answer.status, 201);
    assert.deepEqual(await priorityOf(ref, 'acme'), {
      priorityKey: 2,
      fairnessKey: 'acme',
      fairnessWeight: 3,
    });
  });
});
