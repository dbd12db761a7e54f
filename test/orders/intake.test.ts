/**
 * Intake against the provider as it documents itself (issue 25, item 4): real HTTP against
 * createApp, a real Temporal server, a worker and the sandbox. What the provider would refuse is
 * refused before a workflow starts, with a 4xx naming the field; what it takes (a 4G line as
 * documented) is accepted and fulfilled; the gift-card catalog is the provider's categories with
 * each product's types, price and stock.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import type { Problem } from '../../src/http/errors';
import type { GiftCardCatalogView } from '../../src/orders/catalog';
import { apiTestConfig, type TestApi } from '../helpers/api';
import { orderWorkflowId, type OrderView } from '../../contract/order';
import {
  ADMIN_TOKEN,
  mobileResultBesidesDebit,
  scaledTimings,
  type TestSandbox,
  refsPrefixed,
} from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const newRef = refsPrefixed('INTAKE');

describe('intake refuses what the provider would refuse', () => {
  let stack: OrderStack<'main'>;
  let sandbox: TestSandbox;
  let client: Client;
  let api: TestApi;

  const admin = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${sandbox.url}${path}`, {
      method,
      headers: { 'x-admin-token': ADMIN_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.ok(res.ok, await res.text());
  };

  before(async () => {
    stack = await startOrderStack({
      name: 'api-intake',
      workers: { main: {} },
      api: {
        timingsFor: () => scaledTimings(),
        // Next to no caching: each test sees the sandbox's offer as it sets it.
        config: apiTestConfig({ API_TEMPORAL_TIMEOUT_MS: '5000', CATALOG_CACHE_TTL_MS: '1' }),
      },
    });
    ({ sandbox, client, api } = stack);
  });
  afterEach(() =>
    fetch(`${sandbox.url}/admin/reset`, { method: 'POST', headers: { 'x-admin-token': ADMIN_TOKEN } }),
  );
  after(() => stack?.stop());

  async function pollUntilSettled(ref: string): Promise<OrderView> {
    for (let i = 0; i < 200; i++) {
      const res = await api.request<OrderView>('GET', `/v1/orders/${ref}`);
      if (!['ACCEPTED', 'SUBMITTED', 'PROCESSING'].includes(res.body.status)) return res.body;
      await sleep(100);
    }
    throw new Error(`order ${ref} did not settle`);
  }

  /** Refused with `status`, naming `field`, and no workflow was started. */
  async function refused(body: Record<string, unknown>, status: number, field: string): Promise<Problem> {
    const res = await api.request<Problem>('POST', '/v1/orders', { body });
    assert.equal(res.status, status, res.text);
    assert.ok(
      res.body.errors?.some((e) => e.field === field || e.field === `body.${field}`),
      `${field} is not named: ${res.text}`,
    );
    await assert.rejects(
      client.workflow.getHandle(orderWorkflowId(String(body.ref), 'shop')).describe(),
      WorkflowNotFoundError,
    );
    await assert.rejects(
      client.workflow.getHandle(orderWorkflowId(String(body.ref))).describe(),
      WorkflowNotFoundError,
    );
    return res.body;
  }

  const mobile = (extra: Record<string, unknown>) => ({
    type: 'mobile_topup',
    ref: newRef('m'),
    planCode: 'PREPAID_DJEZZY',
    msisdn: '0551234567',
    amount: 500,
    ...extra,
  });
  const internet = (extra: Record<string, unknown>) => ({
    type: 'internet_topup',
    ref: newRef('i'),
    lineType: '4G',
    number: '213472731602',
    value: 1000,
    ...extra,
  });
  const giftCard = (extra: Record<string, unknown>) => ({
    type: 'gift_card',
    ref: newRef('g'),
    productId: 'GOOGLE_PLAY',
    typeId: 'GOOGLE_PLAY_1000',
    quantity: 1,
    ...extra,
  });

  it('a 4G line as documented (213 and 9 digits) is accepted and FULFILLED (issue 25, failure 5)', async () => {
    const request = internet({});
    const res = await api.request<OrderView>('POST', '/v1/orders', { body: request });
    assert.equal(res.status, 201, res.text);
    const view = await pollUntilSettled(request.ref);
    assert.equal(view.status, 'FULFILLED', JSON.stringify(view.timeline));
  });

  it('GET /v1/gift-cards/catalog presents the categories, their products and each product’s types with price and stock (issue 25, failure 8)', async () => {
    await admin('PATCH', '/admin/gift-cards/GOOGLE_PLAY/types/GOOGLE_PLAY_500', { price: 515, quantity: 0 });
    const res = await api.request<GiftCardCatalogView>('GET', '/v1/gift-cards/catalog');
    assert.equal(res.status, 200, res.text);
    const products = res.body.categories.flatMap((c) => c.products);
    assert.ok(res.body.categories.length >= 2 && products.length >= 4);
    const googlePlay = products.find((p) => p.id === 'GOOGLE_PLAY');
    assert.equal(googlePlay?.title, 'Google Play');
    assert.deepEqual(
      googlePlay?.types.find((t) => t.id === 'GOOGLE_PLAY_500'),
      { id: 'GOOGLE_PLAY_500', name: 'Google Play 500 DZD', price: 515, quantity: 0 },
    );
  });

  it('a mobile number outside ^0[567][0-9]{8}$ is 400 naming msisdn', async () => {
    await refused(mobile({ msisdn: '0412345678' }), 400, 'msisdn');
  });

  it('an ADSL number of 4G form, or a 4G number of ADSL form, is 400 naming number', async () => {
    await refused(internet({ lineType: 'ADSL', number: '213472731602' }), 400, 'number');
    await refused(internet({ number: '021123456' }), 400, 'number');
  });

  it('plans: unknown or disabled → 422 naming planCode; an amount outside a dynamic plan’s bounds, or missing, → 422 naming amount', async () => {
    await refused(mobile({ planCode: 'PREPAID_NOBODY' }), 422, 'planCode');
    await refused(mobile({ planCode: 'PREPAID_MOBILIS', amount: 4_000 }), 422, 'amount');
    await refused(mobile({ planCode: 'PREPAID_MOBILIS', amount: undefined }), 422, 'amount');
    await admin('PATCH', '/admin/plans/PREPAID_OOREDOO', { isEnabled: false });
    const problem = await refused(mobile({ planCode: 'PREPAID_OOREDOO' }), 422, 'planCode');
    assert.equal(problem.type, '/problems/order-unacceptable');
  });

  it('a fixed plan takes no amount (422 naming amount with one) and, without, is sent for its own amount', async () => {
    await refused(mobile({ planCode: 'PIXX_500', amount: 500 }), 422, 'amount');
    const request = mobile({ planCode: 'PIXX_500', amount: undefined, msisdn: '0661234567' });
    const res = await api.request<OrderView>('POST', '/v1/orders', { body: request });
    assert.equal(res.status, 201, res.text);
    const view = await pollUntilSettled(String(request.ref));
    assert.equal(view.status, 'FULFILLED', JSON.stringify(view));
    assert.deepEqual(mobileResultBesidesDebit(view.result), { msisdn: '0661234567', amount: 500 });
  });

  it('an internet value the provider does not sell, or has run out of, is 422 naming value', async () => {
    await refused(internet({ value: 750 }), 422, 'value');
    await admin('PATCH', '/admin/internet-products/4G/1000', { available: false });
    await refused(internet({}), 422, 'value');
  });

  it('a gift-card product unknown or disabled is 422 naming productId; a type unknown or short of stock, naming typeId', async () => {
    await refused(giftCard({ productId: 'NOPE' }), 422, 'productId');
    await refused(giftCard({ typeId: 'NOPE' }), 422, 'typeId');
    await admin('PATCH', '/admin/gift-cards/GOOGLE_PLAY/types/GOOGLE_PLAY_1000', { quantity: 1 });
    await refused(giftCard({ quantity: 2 }), 422, 'typeId');
    await admin('PATCH', '/admin/gift-cards/STEAM', { enabled: false });
    await refused(giftCard({ productId: 'STEAM', typeId: 'STEAM_5_USD' }), 422, 'productId');
  });
});
