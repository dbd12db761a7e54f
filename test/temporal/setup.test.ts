/**
 * `npm run temporal:setup` / the worker's start-up check (src/temporal/setup.ts) against a real
 * Temporal server: it creates what is missing, changes nothing the second time, converges the
 * retention, and stops with a clear message when a search attribute has the wrong type. The
 * search attributes come from the one list in contract/order.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { SearchAttributeType } from '@temporalio/common';
import {
  AcceptedAtAttribute,
  OrderStatusAttribute,
  OrderTypeAttribute,
  searchAttributeDefinitions,
} from '../../contract/order';
import { ensureTemporalSetup, formatRetention, TemporalSetupError } from '../../src/temporal/setup';
import { loadConfig } from '../../src/config';
import { useTemporal, type TestTemporal } from '../helpers/temporal';

const DAY_MS = 86_400_000;
const { IndexedValueType } = proto.api.enums.v1;

describe('Temporal setup (namespace, retention, search attributes)', () => {
  let temporal: TestTemporal;
  let connection: Connection;

  before(async () => {
    temporal = await useTemporal();
    connection = await Connection.connect({ address: temporal.address });
  });

  after(async () => {
    await connection?.close();
    await temporal?.stop();
  });

  const retentionOf = async (namespace: string) => {
    const { config } = await connection.workflowService.describeNamespace({ namespace });
    return Number(config?.workflowExecutionRetentionTtl?.seconds ?? 0) * 1000;
  };

  it('the list in contract/order.ts names every search attribute key the code sets, with its type', () => {
    const typeNames: Record<string, string> = {
      [SearchAttributeType.KEYWORD]: 'Keyword',
      [SearchAttributeType.DATETIME]: 'Datetime',
    };
    for (const key of [OrderTypeAttribute, OrderStatusAttribute, AcceptedAtAttribute]) {
      assert.equal(
        (searchAttributeDefinitions as Record<string, string>)[key.name],
        typeNames[key.type],
        key.name,
      );
    }
  });

  it('on a fresh namespace: creates it with the retention and registers every search attribute; a second run changes nothing', async () => {
    const namespace = `setup-${randomUUID().slice(0, 8)}`;
    const lines: string[] = [];
    const first = await ensureTemporalSetup(connection, {
      namespace,
      retentionMs: 3 * DAY_MS,
      log: (l) => lines.push(l),
    });
    assert.deepEqual(first, {
      namespaceCreated: true,
      retentionChanged: false,
      searchAttributesAdded: Object.keys(searchAttributeDefinitions),
    });
    assert.equal(await retentionOf(namespace), 3 * DAY_MS);
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
    assert.equal(customAttributes?.OrderType, IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD);
    assert.equal(customAttributes?.AcceptedAt, IndexedValueType.INDEXED_VALUE_TYPE_DATETIME);
    assert.ok(lines.some((l) => l.includes(`created namespace ${namespace} (retention 3d)`)));

    const second = await ensureTemporalSetup(connection, { namespace, retentionMs: 3 * DAY_MS });
    assert.deepEqual(second, { namespaceCreated: false, retentionChanged: false, searchAttributesAdded: [] });
  });

  it('an existing namespace gets the configured retention, and keeps its search attributes', async () => {
    const namespace = `setup-${randomUUID().slice(0, 8)}`;
    await ensureTemporalSetup(connection, { namespace, retentionMs: DAY_MS });
    const result = await ensureTemporalSetup(connection, { namespace, retentionMs: 30 * DAY_MS });
    assert.equal(result.retentionChanged, true);
    assert.equal(await retentionOf(namespace), 30 * DAY_MS);
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
    assert.deepEqual(
      Object.keys(customAttributes ?? {}).sort(),
      Object.keys(searchAttributeDefinitions).sort(),
    );
  });

  it('a search attribute registered with another type stops the setup with a message that says so', async () => {
    const namespace = `setup-${randomUUID().slice(0, 8)}`;
    await ensureTemporalSetup(connection, { namespace, retentionMs: DAY_MS, searchAttributes: {} });
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: { OrderType: IndexedValueType.INDEXED_VALUE_TYPE_TEXT },
    });
    await assert.rejects(
      ensureTemporalSetup(connection, { namespace, retentionMs: DAY_MS }),
      (err: unknown) =>
        err instanceof TemporalSetupError &&
        /OrderType is INDEXED_VALUE_TYPE_TEXT, the service needs Keyword/.test(err.message),
    );
  });

  it('the dev server runs with the configured retention (TEMPORAL_NAMESPACE_RETENTION, 30d by default)', async () => {
    assert.equal(formatRetention(loadConfig({}).TEMPORAL_NAMESPACE_RETENTION), '30d');
    if (process.env.TEST_TEMPORAL_SERVER === 'cluster') return; // the setup job set the cluster's
    assert.equal(await retentionOf(temporal.namespace), loadConfig({}).TEMPORAL_NAMESPACE_RETENTION);
  });
});
