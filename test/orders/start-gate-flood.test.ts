/**
 * Issue 34, "another client's order waited during the flood": while one client floods the API with
 * batches, another client's single order and 5-order batch are all accepted — none refused 503
 * because Temporal was saturated by the flooder's starts (src/orders/start-gate.ts). A real API,
 * sandbox and a Temporal dev server of this file's own (the flood must not slow other files);
 * no worker: acceptance is the point, not how long fulfilment takes (the flood-latency script
 * measures that).
 *
 * Scaled for CI on 2 cores: the flooder's batches run many lanes each (API_BATCH_CONCURRENCY) and
 * Temporal calls have a short deadline, so without the gate its starts alone are more than the
 * dev server answers within that deadline.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { apiTestConfig, testClients, type TestApi } from '../helpers/api';
import { mobileTopupBody, startOrderStack, type OrderStack } from '../helpers/stack';

const run = randomUUID().slice(0, 8);
const FLOOD_LOOPS = 6;
const FLOOD_BATCH = 200;

type BatchAnswer = { results: { status: number; body: { detail?: string } }[] };

describe('another client during one client’s batch flood', { timeout: 300_000 }, () => {
  let stack: OrderStack<never>;
  let api: TestApi;

  before(async () => {
    stack = await startOrderStack({
      name: 'start-gate-flood',
      temporal: {},
      api: {
        config: apiTestConfig({
          API_TEMPORAL_TIMEOUT_MS: '1500',
          API_BATCH_CONCURRENCY: '64',
          API_BATCH_TIMEOUT_MS: '15000',
          API_ORDERS_PER_MINUTE: '100000',
          API_ORDERS_BURST: '0',
          LOG_LEVEL: 'error',
        }),
      },
    });
    ({ api } = stack);
  });
  after(() => stack?.stop());

  it('its single order and every item of its 5-order batch are accepted, none refused 503', async () => {
    let flooding = true;
    const flood = { batches: 0, items: new Map<number, number>() };
    const loops = Array.from({ length: FLOOD_LOOPS }, async (_, loop) => {
      for (let n = 0; flooding; n++) {
        const orders = Array.from({ length: FLOOD_BATCH }, (_, i) =>
          mobileTopupBody(`F-${run}-${loop}-${n}-${i}`),
        );
        const answer = await api.request<BatchAnswer>('POST', '/v1/orders/batch', {
          body: { orders },
          apiKey: testClients.acme.key,
        });
        flood.batches++;
        for (const item of answer.body.results ?? [])
          flood.items.set(item.status, (flood.items.get(item.status) ?? 0) + 1);
      }
    });
    try {
      // The flood under way: every loop's first batch is starting its orders.
      await sleep(2_000);
      const [single, batch] = await Promise.all([
        api.request<{ detail?: string }>('POST', '/v1/orders', { body: mobileTopupBody(`V-${run}-single`) }),
        api.request<BatchAnswer>('POST', '/v1/orders/batch', {
          body: { orders: Array.from({ length: 5 }, (_, i) => mobileTopupBody(`V-${run}-b${i}`)) },
        }),
      ]);
      assert.equal(single.status, 201, `the single order: ${single.status} ${single.body.detail ?? ''}`);
      assert.equal(batch.status, 200);
      assert.deepEqual(
        batch.body.results.map((item) => `${item.status} ${item.body.detail ?? ''}`.trim()),
        Array.from({ length: 5 }, () => '201'),
      );
    } finally {
      flooding = false;
      await Promise.all(loops);
      console.log(
        `flood: ${flood.batches} batches, items by answer ${JSON.stringify(Object.fromEntries(flood.items))}`,
      );
    }
  });
});
