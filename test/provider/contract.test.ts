/**
 * Contract tests (issue 25): every answer the provider documents (shared/spec/provider-v3-documented.md),
 * each example and each ⚠ variant, as a fixture naming its source page, read by our client through
 * its real parsing (a MockAgent answers with the fixture); then the sandbox's own answers, over
 * real HTTP, validated against the same schemas. A sandbox that drifts from the documented provider
 * fails here, and so does a client that cannot read a documented form.
 */
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type MockAgent } from 'undici';
import type { z } from 'zod';
import { isProviderError, type ProviderClient } from '../../src/provider';
import {
  Balance,
  Catalog,
  envelope,
  FailureEnvelope,
  GiftCardOrderCheck,
  InternetCheck,
  InternetProducts,
  KeyInfo,
  MobileCheck,
  MobilePlans,
  NumberCheck,
  Ping,
  PlaceOrderResult,
  ProductDetails,
  SendResult,
  TransactionPage,
  MobileTopupPage,
} from '../../src/provider/wire';
import { startTestSandbox, testProvider, type TestSandbox } from '../helpers/orders';
import { mockedProvider } from '../helpers/mocked-provider';
import type { ProviderFailureKind } from '../../contract/provider';

const ORIGIN = 'http://provider.test';
const DOCS = 'https://docs.oneclickdz.com';

interface Fixture {
  /** The documented page the answer comes from. */
  source: string;
  what: string;
  path: string;
  method?: 'GET' | 'POST';
  status?: number;
  body: unknown;
  call(client: ProviderClient): Promise<unknown>;
  /** What the client must make of it. */
  expect(result: unknown): void;
}

const mobileBody = { plan_code: 'PREPAID_DJEZZY', MSSIDN: '0772123456', amount: 500, ref: 'order-1' };
const mobileCheckDoc = {
  _id: '6745a1b2c3d4e5f6a7b8c9d0',
  ref: 'order-1',
  status: 'FULFILLED',
  plan_code: 'PREPAID_DJEZZY',
  MSSIDN: '0772123456',
  topup_amount: 500,
  balance_amount: 490,
  created_at: '2024-11-26T10:00:00.000Z',
};
const refundedCheckDoc = {
  ...mobileCheckDoc,
  status: 'REFUNDED',
  MSSIDN: '0600000002',
  balance_amount: 0,
  refund_message: 'العرض غير متوافق مع هذا الرقم',
  suggested_offers: [{ typename: 'Facture', plan_code: 'FACTURE_DJEZZY', amount: 500 }],
};
const meta = { timestamp: '2024-11-26T10:00:00.000Z' };

/** A failure answer must come out as a ProviderError of `kind`. */
const failsAs = (kind: ProviderFailureKind, code?: string) => (result: unknown) => {
  assert.ok(isProviderError(result), `expected a ProviderError, got ${JSON.stringify(result)}`);
  assert.equal(result.kind, kind);
  if (code) assert.equal(result.code, code);
};

const fixtures: Fixture[] = [
  // ---- envelope (response-format) ----
  {
    source: '/api-reference/response-format',
    what: 'success with meta and requestId',
    path: '/v3/account/balance',
    body: { success: true, data: { balance: 1520.5 }, meta, requestId: 'req_1' },
    call: (c) => c.getBalance(),
    expect: (r) => assert.deepEqual(r, { balance: 1520.5 }),
  },
  {
    source: '/api-reference/response-format',
    what: '⚠ success without meta or requestId (many examples)',
    path: '/v3/account/balance',
    body: { success: true, data: { balance: 0, currency: 'DZD' } },
    call: (c) => c.getBalance(),
    expect: (r) => assert.deepEqual(r, { balance: 0, currency: 'DZD' }),
  },
  {
    source: '/api-reference/mobile/send-topup',
    what: '⚠ a send with an extra data.newBalance',
    path: '/v3/mobile/send',
    method: 'POST',
    body: {
      success: true,
      data: { topupId: '6745a1b2c3d4e5f6a7b8c9d0', topupRef: 'order-1', newBalance: 1010 },
    },
    call: (c) => c.sendMobileTopup(mobileBody),
    expect: (r) => assert.equal((r as { topupId: string }).topupId, '6745a1b2c3d4e5f6a7b8c9d0'),
  },
  // ---- errors (error-handling) ----
  ...(
    [
      [400, 'ERR_VALIDATION', { field: 'body/MSSIDN', value: '123' }, 'refused'],
      [400, 'ERR_PHONE', { number: '0211', type: 'ADSL', reason: 'invalid' }, 'refused'],
      [401, 'MISSING_ACCESS_TOKEN', undefined, 'access_denied'],
      [401, 'INVALID_ACCESS_TOKEN', { attemptsLeft: 3 }, 'access_denied'],
      [401, 'ERR_AUTH', { attemptsLeft: 3 }, 'access_denied'],
      [403, 'IP_BLOCKED', undefined, 'access_denied'],
      [429, 'IP_BLOCKED', undefined, 'access_denied'],
      [403, 'INSUFFICIENT_BALANCE', { required: 500, available: 120.5 }, 'insufficient_balance'],
      [403, 'NO_BALANCE', { required: 500, available: 0 }, 'insufficient_balance'],
      [403, 'DUPLICATED_REF', undefined, 'duplicate_ref'],
      [404, 'NOT_FOUND', undefined, 'not_found'],
    ] as const
  ).map(([status, code, details, kind]): Fixture => ({
    source: '/api-reference/error-handling',
    what: `${status} ${code}`,
    path: '/v3/mobile/send',
    method: 'POST',
    status,
    body: {
      success: false,
      error: { code, message: `documented ${code}`, ...(details && { details }) },
      requestId: 'r',
    },
    call: (c) => c.sendMobileTopup(mobileBody),
    expect: failsAs(kind, code),
  })),
  {
    source: '/api-reference/error-handling',
    what: '403 from an address outside the key’s whitelist (no code, maybe no JSON)',
    path: '/v3/mobile/send',
    method: 'POST',
    status: 403,
    body: 'Forbidden',
    call: (c) => c.sendMobileTopup(mobileBody),
    expect: failsAs('access_denied'),
  },
  ...([429, 500, 503] as const).map((status): Fixture => ({
    source: '/api-reference/error-handling',
    what: `${status} with no code shown`,
    path: '/v3/mobile/send',
    method: 'POST',
    status,
    body: '',
    call: (c) => c.sendMobileTopup(mobileBody),
    expect: failsAs(status === 429 ? 'rate_limited' : 'outcome_unknown'),
  })),
  // ---- account and health ----
  {
    source: '/api-reference/core/health-check',
    what: 'ping',
    path: '/v3/ping',
    body: {
      success: true,
      data: {
        api: 'ok',
        operators: { mobilis: 'up', ooredoo: 'down', djezzy: 'up', mobilisFixedPlans: 'up' },
      },
    },
    call: (c) => c.ping(),
    expect: (r) => assert.equal((r as { operators: Record<string, string> }).operators.ooredoo, 'down'),
  },
  {
    source: '/api-reference/core/validate-token',
    what: 'validate with key, allowedips and a READ-ONLY scope',
    path: '/v3/validate',
    body: {
      success: true,
      data: {
        username: '+213550000000',
        apiKey: {
          key: 'sk_…',
          isEnabled: true,
          type: 'PRODUCTION',
          allowedips: ['1.2.3.4'],
          scope: 'READ-ONLY',
        },
      },
    },
    call: (c) => c.validateKey(),
    expect: (r) => assert.equal((r as { apiKey: { type: string } }).apiKey.type, 'PRODUCTION'),
  },
  {
    source: '/api-reference/account/list-transactions',
    what: 'ledger rows in data.items with data.pagination',
    path: '/v3/account/transactions',
    body: {
      success: true,
      data: {
        items: [
          {
            _id: 't1',
            type: 'FLEXY',
            operation: 'debit',
            amount: 490,
            oldBalance: 1000,
            newBalance: 510,
            objid: '6745a1b2c3d4e5f6a7b8c9d0',
            note: '',
            time: '2024-11-26T10:00:00.000Z',
          },
        ],
        pagination: { page: 1, pageSize: 20, totalPages: 1, totalResults: 1 },
      },
    },
    call: (c) => c.listTransactions(),
    expect: (r) =>
      assert.deepEqual((r as { pagination: unknown }).pagination, {
        page: 1,
        pageSize: 20,
        totalPages: 1,
        totalResults: 1,
      }),
  },
  {
    source: '/api-reference/response-format',
    what: '⚠ pagination in meta.pagination',
    path: '/v3/mobile/list',
    body: {
      success: true,
      data: { items: [mobileCheckDoc] },
      meta: { ...meta, pagination: { page: 2, pageSize: 1, totalPages: 3, totalResults: 3 } },
    },
    call: (c) => c.listMobileTopups(),
    expect: (r) => {
      const page = r as { items: unknown[]; pagination: { page: number } };
      assert.equal(page.items.length, 1);
      assert.equal(page.pagination.page, 2);
    },
  },
  {
    source: '/api-reference/internet/list (French page)',
    what: '⚠ internet list rows in data.topups',
    path: '/v3/internet/list',
    body: {
      success: true,
      data: { topups: [{ _id: 'i1', ref: 'n1', status: 'QUEUED', type: 'ADSL', number: '036362608' }] },
    },
    call: (c) => c.listInternetTopups(),
    expect: (r) => assert.equal((r as { items: { status: string }[] }).items[0]?.status, 'QUEUED'),
  },
  // ---- mobile ----
  {
    source: '/api-reference/mobile/list-plans',
    what: 'dynamic and fixed plans, cost optional',
    path: '/v3/mobile/plans',
    body: {
      success: true,
      data: {
        dynamicPlans: [
          {
            code: 'PREPAID_DJEZZY',
            name: 'Djezzy',
            operator: 'djezzy',
            cost: 0.98,
            isEnabled: true,
            min_amount: 100,
            max_amount: 10000,
          },
          {
            code: 'GETMENU_Mobilis',
            name: 'Menu',
            operator: 'mobilis',
            isEnabled: false,
            min_amount: 50,
            max_amount: 5000,
          },
        ],
        fixedPlans: [
          { code: 'PIXX_500', name: 'Pixx 500', operator: 'mobilis', isEnabled: true, amount: 500 },
        ],
      },
    },
    call: (c) => c.getMobilePlans(),
    expect: (r) => assert.equal((r as { fixedPlans: { amount: number }[] }).fixedPlans[0]?.amount, 500),
  },
  {
    source: '/api-reference/mobile/check-by-ref',
    what: 'a FULFILLED check with _id and ref (not topupId)',
    path: '/v3/mobile/check-ref/order-1',
    body: { success: true, data: mobileCheckDoc },
    call: (c) => c.checkMobileTopup('order-1'),
    expect: (r) => assert.deepEqual(r, mobileCheckDoc),
  },
  {
    source: '/api-reference/mobile/check-by-id',
    what: 'check-id answers alike',
    path: '/v3/mobile/check-id/6745a1b2c3d4e5f6a7b8c9d0',
    body: { success: true, data: mobileCheckDoc },
    call: (c) => c.checkMobileTopupById('6745a1b2c3d4e5f6a7b8c9d0'),
    expect: (r) => assert.equal((r as { _id: string })._id, mobileCheckDoc._id),
  },
  {
    source: '/api-reference/mobile/list (sandbox example)',
    what: 'REFUNDED with refund_message and suggested_offers',
    path: '/v3/mobile/check-ref/order-1',
    body: { success: true, data: refundedCheckDoc },
    call: (c) => c.checkMobileTopup('order-1'),
    expect: (r) =>
      assert.deepEqual((r as typeof refundedCheckDoc).suggested_offers, refundedCheckDoc.suggested_offers),
  },
  {
    source: '/api-reference/mobile/check-by-ref',
    what: 'UNKNOWN_ERROR with refund_message, follow_orderid and retry_orderid',
    path: '/v3/mobile/check-ref/order-1',
    body: {
      success: true,
      data: {
        ...mobileCheckDoc,
        status: 'UNKNOWN_ERROR',
        refund_message: 'غير معروف',
        follow_orderid: 'f1',
        retry_orderid: 'r1',
      },
    },
    call: (c) => c.checkMobileTopup('order-1'),
    expect: (r) => assert.equal((r as { status: string }).status, 'UNKNOWN_ERROR'),
  },
  // ---- internet ----
  {
    source: '/api-reference/internet/list-products',
    what: 'products with type in data',
    path: '/v3/internet/products?type=ADSL',
    body: { success: true, data: { type: 'ADSL', products: [{ value: 500, cost: 490, available: true }] } },
    call: (c) => c.getInternetProducts('ADSL'),
    expect: (r) => assert.equal((r as { products: unknown[] }).products.length, 1),
  },
  {
    source: '/api-reference/internet/list-products',
    what: '⚠ type in meta',
    path: '/v3/internet/products?type=4G',
    body: {
      success: true,
      data: { products: [{ value: 1000, cost: 980, available: false }] },
      meta: { type: '4G' },
    },
    call: (c) => c.getInternetProducts('4G'),
    expect: (r) => assert.equal((r as { products: { available: boolean }[] }).products[0]?.available, false),
  },
  {
    source: 'Arabic internet guide',
    what: '⚠ data as a bare array of products',
    path: '/v3/internet/products?type=ADSL',
    body: { success: true, data: [{ value: 500, cost: 490, available: true }] },
    call: (c) => c.getInternetProducts('ADSL'),
    expect: (r) => assert.deepEqual(r, { products: [{ value: 500, cost: 490, available: true }] }),
  },
  {
    source: '/api-reference/internet/validate-number',
    what: '⚠ type 4GLTE for a 4G request',
    path: '/v3/internet/check-number?type=4G&number=213472731602',
    body: { success: true, data: { ncli: '213472731602', type: '4GLTE' } },
    call: (c) => c.checkInternetNumber('4G', '213472731602'),
    expect: (r) => assert.equal((r as { type: string }).type, '4GLTE'),
  },
  {
    source: '/api-reference/internet/check-by-ref',
    what: 'FULFILLED with card_code, num_trans and date_traitement',
    path: '/v3/internet/check-ref/n1',
    body: {
      success: true,
      data: {
        _id: 'i1',
        ref: 'n1',
        status: 'FULFILLED',
        type: 'ADSL',
        number: '036362608',
        topup_amount: 1000,
        card_code: '123456789012',
        num_trans: 'AT-1',
        date_traitement: '2024-11-26T10:01:00.000Z',
        created_at: '2024-11-26T10:00:00.000Z',
      },
    },
    call: (c) => c.checkInternetTopup('n1'),
    expect: (r) => assert.equal((r as { card_code: string }).card_code, '123456789012'),
  },
  {
    source: '/api-reference/internet/check-by-ref',
    what: 'QUEUED (delivery within 12–48 h)',
    path: '/v3/internet/check-id/i1',
    body: {
      success: true,
      data: {
        _id: 'i1',
        ref: 'n1',
        status: 'QUEUED',
        type: '4G',
        number: '213472731602',
        topup_amount: 1000,
        created_at: '2024-11-26T10:00:00.000Z',
      },
    },
    call: (c) => c.checkInternetTopupById('i1'),
    expect: (r) => assert.equal((r as { status: string }).status, 'QUEUED'),
  },
  // ---- gift cards ----
  {
    source: '/api-reference/gift-cards/get-catalog',
    what: 'categories with title, totals beside data',
    path: '/v3/gift-cards/catalog',
    body: {
      success: true,
      data: {
        categories: [
          { title: 'Games', products: [{ id: 'p1', title: 'PUBG', enabled: true, region: 'global' }] },
        ],
      },
      totalCategories: 1,
      totalProducts: 1,
    },
    call: (c) => c.getGiftCardCatalog(),
    expect: (r) => assert.equal((r as z.infer<typeof Catalog>).categories[0]?.products[0]?.title, 'PUBG'),
  },
  {
    source: 'gift-card guide',
    what: '⚠ name instead of title, totals in meta',
    path: '/v3/gift-cards/catalog',
    body: {
      success: true,
      data: { categories: [{ name: 'Games', products: [{ id: 'p1', name: 'PUBG', enabled: false }] }] },
      meta: { totalCategories: 1, totalProducts: 1 },
    },
    call: (c) => c.getGiftCardCatalog(),
    expect: (r) => {
      const category = (r as z.infer<typeof Catalog>).categories[0];
      assert.deepEqual([category?.title, category?.products[0]?.title], ['Games', 'PUBG']);
    },
  },
  {
    source: '/api-reference/gift-cards/check-product',
    what: 'types with id, price and quantity',
    path: '/v3/gift-cards/checkProduct/p1',
    body: {
      success: true,
      data: {
        productId: 'p1',
        productTitle: 'PUBG',
        types: [{ id: 't1', name: '60 UC', price: 250, quantity: 0 }],
      },
    },
    call: (c) => c.checkGiftCardProduct('p1'),
    expect: (r) =>
      assert.deepEqual((r as z.infer<typeof ProductDetails>).types[0], {
        id: 't1',
        name: '60 UC',
        price: 250,
        quantity: 0,
      }),
  },
  {
    source: 'Arabic gift-card guide',
    what: '⚠ _id for the product and the types',
    path: '/v3/gift-cards/checkProduct/p1',
    body: {
      success: true,
      data: {
        _id: 'p1',
        productTitle: 'PUBG',
        types: [{ _id: 't1', name: '60 UC', price: 250, quantity: 4 }],
      },
    },
    call: (c) => c.checkGiftCardProduct('p1'),
    expect: (r) => {
      const product = r as z.infer<typeof ProductDetails>;
      assert.deepEqual([product.productId, product.types[0]?.id], ['p1', 't1']);
    },
  },
  {
    source: '/api-reference/gift-cards/place-order',
    what: 'an orderId',
    path: '/v3/gift-cards/placeOrder',
    method: 'POST',
    body: { success: true, data: { orderId: 'g1' } },
    call: (c) => c.placeGiftCardOrder({ productId: 'p1', typeId: 't1', quantity: 2 }),
    expect: (r) => assert.deepEqual(r, { orderId: 'g1' }),
  },
  {
    source: '/api-reference/gift-cards/check-order',
    what: 'PARTIALLY_FILLED with the delivered cards (sandbox form)',
    path: '/v3/gift-cards/checkOrder/g1',
    body: {
      success: true,
      data: {
        _id: 'g1',
        status: 'PARTIALLY_FILLED',
        quantity: 2,
        fulfilled_quantity: 1,
        fulfilled_amount: 0,
        price_per_card: 0,
        cards: [{ value: 'SANDBOX-CARD-1', serial: 'SANDBOX-1' }],
        product: 'p1',
        type: 't1',
        time: '2024-11-26T10:00:00.000Z',
      },
    },
    call: (c) => c.checkGiftCardOrder('g1'),
    expect: (r) => assert.equal((r as z.infer<typeof GiftCardOrderCheck>).cards?.length, 1),
  },
  {
    source: '/api-reference/gift-cards/check-order',
    what: 'REFUNDED, product and type as objects',
    path: '/v3/gift-cards/checkOrder/g1',
    body: {
      success: true,
      data: {
        _id: 'g1',
        status: 'REFUNDED',
        quantity: 2,
        fulfilled_quantity: 0,
        product: { id: 'p1' },
        type: { id: 't1' },
        time: 'x',
      },
    },
    call: (c) => c.checkGiftCardOrder('g1'),
    expect: (r) => assert.equal((r as { status: string }).status, 'REFUNDED'),
  },
];

describe('the client reads every documented answer (fact sheet fixtures)', () => {
  let agent: MockAgent;
  let client: ProviderClient;
  let mocked: ReturnType<typeof mockedProvider>;
  beforeEach(() => {
    ({ agent, client } = mocked = mockedProvider(ORIGIN, 'k'));
  });
  afterEach(() => mocked.close());

  for (const fixture of fixtures) {
    it(`${fixture.source}: ${fixture.what}`, async () => {
      agent
        .get(ORIGIN)
        .intercept({ path: fixture.path, method: fixture.method ?? 'GET' })
        .reply(
          fixture.status ?? 200,
          typeof fixture.body === 'string' ? fixture.body : JSON.stringify(fixture.body),
        );
      const result = await fixture.call(client).catch((err: unknown) => err);
      if (!(fixture.status && fixture.status >= 400)) {
        assert.ok(!(result instanceof Error), `${DOCS}${fixture.source}: ${String(result)}`);
      }
      fixture.expect(result);
    });
  }
});

describe('the sandbox answers as the documents do (its answers through the same schemas)', () => {
  let sandbox: TestSandbox;
  let provider: ReturnType<typeof testProvider>;
  before(async () => {
    sandbox = await startTestSandbox();
    provider = testProvider(sandbox.url);
  });
  after(async () => {
    await provider.close();
    await sandbox.close();
  });

  const raw = async (method: string, path: string, body?: unknown, key = 'sandbox-key') => {
    const res = await fetch(`${sandbox.url}${path}`, {
      method,
      headers: {
        'x-access-token': key,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  /** A strict reading: the schema must accept the sandbox's whole answer. */
  const conforms = <T extends z.ZodType>(schema: T, json: unknown) => {
    const parsed = envelope(schema).safeParse(json);
    assert.ok(parsed.success, `${JSON.stringify(json)}: ${parsed.success ? '' : parsed.error.message}`);
  };

  it('every success answer parses with the client’s schema', async () => {
    const ref = `contract-${Date.now()}`;
    conforms(KeyInfo, (await raw('GET', '/v3/validate')).json);
    conforms(Ping, (await raw('GET', '/v3/ping')).json);
    conforms(Balance, (await raw('GET', '/v3/account/balance')).json);
    conforms(MobilePlans, (await raw('GET', '/v3/mobile/plans')).json);
    const sent = await raw('POST', '/v3/mobile/send', { ...mobileBody, MSSIDN: '0600000002', ref });
    conforms(SendResult, sent.json);
    const check = await raw('GET', `/v3/mobile/check-ref/${ref}`);
    conforms(MobileCheck, check.json);
    assert.deepEqual(
      Object.keys((check.json.data as object) ?? {}).sort(),
      [
        '_id',
        'balance_amount',
        'created_at',
        'MSSIDN',
        'plan_code',
        'ref',
        'refund_message',
        'status',
        'suggested_offers',
        'topup_amount',
      ].sort(),
    );
    conforms(
      MobileCheck,
      (await raw('GET', `/v3/mobile/check-id/${(sent.json.data as { topupId: string }).topupId}`)).json,
    );
    conforms(MobileTopupPage, (await raw('GET', '/v3/mobile/list')).json);
    conforms(TransactionPage, (await raw('GET', '/v3/account/transactions')).json);
    conforms(InternetProducts, (await raw('GET', '/v3/internet/products?type=4G')).json);
    conforms(NumberCheck, (await raw('GET', '/v3/internet/check-number?type=ADSL&number=036362608')).json);
    await raw('POST', '/v3/internet/send', { type: 'ADSL', number: '036362608', value: 1000, ref });
    conforms(InternetCheck, (await raw('GET', `/v3/internet/check-ref/${ref}`)).json);
    const catalog = await raw('GET', '/v3/gift-cards/catalog');
    conforms(Catalog, catalog.json);
    assert.equal(typeof catalog.json.totalProducts, 'number', 'totals beside data');
    conforms(ProductDetails, (await raw('GET', '/v3/gift-cards/checkProduct/GOOGLE_PLAY')).json);
    const placed = await raw('POST', '/v3/gift-cards/placeOrder', {
      productId: 'GOOGLE_PLAY',
      typeId: 'TEST_PARTIAL',
      quantity: 2,
    });
    conforms(PlaceOrderResult, placed.json);
    conforms(
      GiftCardOrderCheck,
      (await raw('GET', `/v3/gift-cards/checkOrder/${(placed.json.data as { orderId: string }).orderId}`))
        .json,
    );
  });

  it('every failure answer is the documented failure envelope: no data, no meta, a code, details where documented', async () => {
    const ref = `contract-dup-${Date.now()}`;
    await raw('POST', '/v3/mobile/send', { ...mobileBody, ref });
    const answers = [
      await raw('POST', '/v3/mobile/send', { ...mobileBody, ref }),
      await raw('POST', '/v3/mobile/send', { ...mobileBody, MSSIDN: '0412345678', ref: `${ref}-x` }),
      await raw('GET', '/v3/internet/check-number?type=4G&number=021123456'),
      await raw('GET', '/v3/mobile/check-ref/never-sent'),
      await raw('GET', '/v3/account/balance', undefined, 'disabled-key'),
    ];
    assert.deepEqual(
      answers.map((a) => [a.status, (a.json.error as { code: string }).code]),
      [
        [403, 'DUPLICATED_REF'],
        [400, 'ERR_VALIDATION'],
        [400, 'ERR_PHONE'],
        [404, 'NOT_FOUND'],
        [403, 'KEY_DISABLED'],
      ],
    );
    for (const { json } of answers) {
      assert.ok(FailureEnvelope.safeParse(json).success, JSON.stringify(json));
      assert.equal(json.data, undefined);
      assert.equal(json.meta, undefined);
    }
    assert.deepEqual((answers[1]?.json.error as { details: unknown }).details, {
      field: 'body/MSSIDN',
      value: '0412345678',
    });
  });
});
