/**
 * Clients' weights as Temporal task-queue config, on a real dev server: a weight set in the
 * clients file shows in the queues' config (DescribeTaskQueue with report_config), a changed one
 * replaces it, and it is removed when the client is — leaving other keys' overrides alone.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { testClientsFile } from '../helpers/api';
import type { ClientsFile } from '../../src/clients/model';
import { applyFairnessWeights, weightOverrides } from '../../src/clients/fairness-weights';
import { useTemporal, type TestTemporal } from '../helpers/temporal';

describe('fairness weights from the clients file', () => {
  let server: TestTemporal;
  let connection: Connection;
  const queues = { orders: `weights-orders-${randomUUID()}`, webhooks: `weights-hooks-${randomUUID()}` };

  before(async () => {
    server = await useTemporal();
    connection = await Connection.connect({ address: server.address });
  });
  after(async () => {
    await connection?.close();
    await server?.stop();
  });

  const withWeights = (weights: Record<string, number>): ClientsFile => ({
    ...testClientsFile,
    clients: testClientsFile.clients.map((c) => ({
      ...c,
      ...(c.id in weights ? { fairnessWeight: weights[c.id] } : {}),
      ...(c.id === 'acme' ? { webhooks: [{ id: 'erp', url: 'https://erp.example.com/hooks' }] } : {}),
    })),
  });
  const overrides = (queue: string, type: 'workflow' | 'activity') =>
    weightOverrides(connection, server.namespace, queue, type);
  const apply = (file: ClientsFile) =>
    applyFairnessWeights(connection, { namespace: server.namespace, queues, file });

  it('sets each weighted client on the order and webhook queues, replaces a changed weight, and removes a removed client', async () => {
    // An operator's own override of a key that is no client's stays.
    await connection.workflowService.updateTaskQueueConfig({
      namespace: server.namespace,
      identity: 'operator',
      taskQueue: queues.orders,
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      setFairnessWeightOverrides: { 'provider-account': 5 },
    });
    await apply(withWeights({ acme: 3, shop: 1 }));
    assert.deepEqual(await overrides(queues.orders, 'workflow'), { acme: 3, 'provider-account': 5 });
    assert.deepEqual(await overrides(queues.orders, 'activity'), { acme: 3 });
    assert.deepEqual(await overrides(queues.webhooks, 'workflow'), { acme: 3 });
    assert.deepEqual(await overrides(queues.webhooks, 'activity'), { 'acme:erp': 3 });

    await apply(withWeights({ acme: 2, writer: 0.5 }));
    assert.deepEqual(await overrides(queues.orders, 'activity'), { acme: 2, writer: 0.5 });

    const withoutAcme = withWeights({ writer: 0.5 });
    withoutAcme.clients = withoutAcme.clients.filter((c) => c.id !== 'acme');
    await apply(withoutAcme);
    assert.deepEqual(await overrides(queues.orders, 'workflow'), { writer: 0.5, 'provider-account': 5 });
    assert.deepEqual(await overrides(queues.orders, 'activity'), { writer: 0.5 });
    assert.deepEqual(await overrides(queues.webhooks, 'workflow'), { writer: 0.5 });
    assert.deepEqual(await overrides(queues.webhooks, 'activity'), {});
  });
});
