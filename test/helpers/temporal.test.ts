import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Connection } from '@temporalio/client';
import { useTemporal, type TestTemporal } from './temporal';

describe('the Temporal test helper', () => {
  let temporal: TestTemporal;
  before(async () => {
    temporal = await useTemporal();
  });
  after(async () => {
    await temporal.stop();
  });

  it('when started, a client connects and finds the project search attributes registered', async () => {
    const connection = await Connection.connect({ address: temporal.address });
    try {
      const client = new Client({ connection, namespace: temporal.namespace });
      const attributes = await client.connection.operatorService.listSearchAttributes({
        namespace: temporal.namespace,
      });
      assert.ok(attributes.customAttributes?.OrderType, 'OrderType is registered');
      assert.ok(attributes.customAttributes?.OrderStatus, 'OrderStatus is registered');
    } finally {
      await connection.close();
    }
  });
});
