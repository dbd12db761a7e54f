/**
 * The OpenAPI document against the API it describes: it is valid OpenAPI 3.1 (checked by a real
 * validator), every documented operation is routed and every route is documented, and the
 * documented request schemas agree with zod — their examples are accepted, each documented
 * required field is really required, and extra fields are really refused.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Express } from 'express';
import type { Client } from '@temporalio/client';
import pino from 'pino';
import { type z } from 'zod';
import { createApp } from '../../src/api/app';
import type { Problem } from '../../src/http/errors';
import {
  AuditQuery,
  ListOrdersQuery,
  OrderAddressQuery,
  OrderViewQuery,
  RefParams,
} from '../../src/http/schemas';
import { apiTestConfig, testClients, type TestApi } from '../helpers/api';
import {
  GiftCardRequest,
  InternetTopupRequest,
  MobileTopupRequest,
  ReviewRequest,
} from '../../contract/schemas';
import type { ProviderPort } from '../../src/api/health';
import { startOrderStack, type OrderStack } from '../helpers/stack';

interface Operation {
  description?: string;
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string; required?: boolean; schema: { example?: unknown } }[];
  requestBody?: { required?: boolean; content: Record<string, { schema: { $ref?: string } }> };
  responses: Record<string, { content?: Record<string, unknown>; headers?: Record<string, unknown> }>;
}
interface SchemaObject {
  type?: string;
  properties?: Record<string, unknown>;
  required?: string[];
  additionalProperties?: boolean;
  examples?: Record<string, unknown>[];
  oneOf?: { $ref: string }[];
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, SchemaObject>;
    securitySchemes: Record<string, { type: string; scheme: string }>;
  };
}

const provider: ProviderPort = {
  getGiftCardCatalog: async () => ({ categories: [] }),
  validateKey: async () => ({ username: 'u', apiKey: { type: 'SANDBOX', scope: 'all', isEnabled: true } }),
};

/** The request schemas the document names, and the zod schemas they come from. */
const bodySchemas: Record<string, z.ZodObject> = {
  MobileTopupRequest,
  InternetTopupRequest,
  GiftCardRequest,
  ReviewRequest,
};

const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** Every route Express knows, as `METHOD /path/{param}` (routes are registered with full paths). */
function expressRoutes(app: Express): string[] {
  interface Layer {
    route?: { path: string; methods: Record<string, boolean> };
    handle?: { stack?: Layer[] };
  }
  const walk = (stack: Layer[]): string[] =>
    stack.flatMap((layer) => {
      if (layer.route) {
        const path = layer.route.path.replace(/:(\w+)/g, '{$1}');
        return Object.keys(layer.route.methods).map((m) => `${m.toUpperCase()} ${path}`);
      }
      return layer.handle?.stack ? walk(layer.handle.stack) : [];
    });
  return walk((app as unknown as { router: { stack: Layer[] } }).router.stack).sort();
}

function requiredKeys(schema: z.ZodObject): string[] {
  return Object.entries(schema.shape)
    .filter(([, field]) => !(field as z.ZodType).safeParse(undefined).success)
    .map(([key]) => key)
    .sort();
}

describe('the OpenAPI document', () => {
  let stack: OrderStack;
  let client: Client;
  let api: TestApi;
  let doc: Document;
  // No worker: orders started here only need to be accepted.
  const taskQueue = `api-openapi-${randomUUID()}`;

  before(async () => {
    stack = await startOrderStack({ name: 'api-openapi', sandbox: false, api: { taskQueue, provider } });
    client = stack.client;
    api = stack.api;
    const res = await api.request<Document>('GET', '/openapi.json', { apiKey: null });
    assert.equal(res.status, 200);
    doc = res.body;
  });
  after(async () => {
    await stack?.stop();
  });

  it('is valid OpenAPI 3.1 according to @seriousme/openapi-schema-validator', async () => {
    const { Validator } = await import('@seriousme/openapi-schema-validator');
    const validator = new Validator();
    const result = await validator.validate(doc as unknown as Record<string, unknown>);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    assert.equal(validator.version, '3.1');
  });

  it('declares bearer authentication, and every /v1 operation requires it while health and docs are public', () => {
    const scheme = doc.components.securitySchemes.bearerAuth!;
    assert.equal(scheme.type, 'http');
    assert.equal(scheme.scheme, 'bearer');
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        const secured = op.security?.some((s) => 'bearerAuth' in s) ?? false;
        assert.equal(secured, path.startsWith('/v1/'), `${method} ${path}`);
        if (secured) assert.ok(op.responses['401'], `${method} ${path} documents 401`);
      }
    }
  });

  it('states the one scope each /v1 operation needs, in its security requirement and its description, and documents the 403', () => {
    const expected: Record<string, string> = {
      'post /v1/orders': 'orders:write',
      'post /v1/orders/batch': 'orders:write',
      'get /v1/orders': 'orders:read',
      'get /v1/webhooks': 'webhooks:read',
      'get /v1/orders/{ref}/webhooks': 'webhooks:read',
      'post /v1/orders/{ref}/webhooks/{eventId}/redeliver': 'webhooks:write',
      'get /v1/orders/{ref}': 'orders:read',
      'get /v1/orders/{ref}/audit': 'audit:read',
      'post /v1/orders/{ref}/review': 'reviews:write',
      'post /v1/reviews/bulk': 'reviews:write',
      'get /v1/orders/export': 'orders:read',
      'get /v1/statements': 'orders:read',
      'get /v1/reconciliations/{date}': 'audit:read',
      'get /v1/gift-cards/catalog': 'orders:write',
    };
    const documented: Record<string, string> = {};
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        if (!op.security) continue;
        assert.equal(op.security.length, 1, `${method} ${path}: one requirement`);
        const scopes = op.security[0]!.bearerAuth!;
        assert.equal(scopes.length, 1, `${method} ${path}: one scope`);
        documented[`${method} ${path}`] = scopes[0]!;
        assert.ok(
          op.description?.includes(`\`${scopes[0]}\``),
          `${method} ${path}: the description names it`,
        );
        assert.ok(op.responses['403'], `${method} ${path} documents 403`);
      }
    }
    assert.deepEqual(documented, expected);
  });

  it('documents every error response as application/problem+json', () => {
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          assert.deepEqual(
            Object.keys(response.content ?? {}),
            ['application/problem+json'],
            `${method} ${path} ${status}`,
          );
        }
      }
    }
  });

  it('documents exactly the routes the app serves', () => {
    const app = createApp({
      client,
      taskQueue,
      provider,
      config: apiTestConfig(),
      logger: pino({ level: 'silent' }),
    });
    const documented = Object.entries(doc.paths)
      .flatMap(([path, operations]) =>
        Object.keys(operations)
          .filter((m) => (HTTP_METHODS as readonly string[]).includes(m))
          .map((m) => `${m.toUpperCase()} ${path}`),
      )
      .sort();
    assert.deepEqual(documented, expressRoutes(app));
  });

  it('every documented operation is answered by a route (never the unknown-route 404)', async () => {
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        const concrete = path.replace(/\{(\w+)\}/g, () => `NO-SUCH-${randomUUID().slice(0, 8)}`);
        const res = await api.request(method.toUpperCase(), concrete, op.requestBody ? { body: {} } : {});
        const type = (res.body as Partial<Problem> | undefined)?.type;
        assert.notEqual(type, '/problems/not-found', `${method} ${path} is routed`);
        // No server error — but a documented 503 (/readyz here: no worker polls this test's queue).
        assert.ok(
          res.status < 500 || (res.status === 503 && '503' in op.responses),
          `${method} ${path}: ${res.status} ${res.text}`,
        );
      }
    }
  });

  it('every documented operation refuses a query parameter it does not document: 400 naming it, and documents that 400', async () => {
    const keyWith = (scope: string) =>
      Object.values(testClients).find((c) => (c.scopes as readonly string[]).includes(scope))!.key;
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        const scope = op.security?.[0]?.bearerAuth?.[0];
        // Well-formed path parameters, so the only thing wrong is the parameter.
        const concrete = path
          .replace('{ref}', `NO-SUCH-${randomUUID().slice(0, 8)}`)
          .replace('{eventId}', 'evt_nosuch')
          .replace('{date}', '1999-12-31');
        assert.doesNotMatch(concrete, /\{/, `${path}: a path parameter this test does not know`);
        const documented = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
        const unknown = 'notAParameter';
        assert.ok(!documented.includes(unknown));
        const res = await api.request<Problem>(method.toUpperCase(), `${concrete}?${unknown}=1`, {
          apiKey: scope ? keyWith(scope) : null,
          ...(op.requestBody ? { body: {} } : {}),
        });
        const context = `${method.toUpperCase()} ${path}: ${res.status} ${res.text.slice(0, 300)}`;
        assert.equal(res.status, 400, context);
        assert.equal(res.body.type, '/problems/validation-error', context);
        assert.ok(
          res.body.errors?.some((e) => e.field === unknown && e.message === 'unknown field'),
          context,
        );
        assert.ok(op.responses['400'], `${method} ${path} documents its 400`);
      }
    }
  });

  it('names the parameters zod validates: the ref path parameter, the client and every list query parameter', () => {
    const names = (op: Operation, where: string) =>
      (op.parameters ?? [])
        .filter((p) => p.in === where)
        .map((p) => p.name)
        .sort();
    assert.deepEqual(
      names(doc.paths['/v1/orders']!.get!, 'query'),
      Object.keys(ListOrdersQuery.shape).sort(),
    );
    const view = doc.paths['/v1/orders/{ref}']!.get!;
    assert.deepEqual(names(view, 'path'), Object.keys(RefParams.shape));
    assert.deepEqual(names(view, 'query'), Object.keys(OrderViewQuery.shape).sort());
    const review = doc.paths['/v1/orders/{ref}/review']!.post!;
    assert.deepEqual(names(review, 'path'), Object.keys(RefParams.shape));
    assert.deepEqual(names(review, 'query'), Object.keys(OrderAddressQuery.shape));
    const audit = doc.paths['/v1/orders/{ref}/audit']!.get!;
    assert.deepEqual(names(audit, 'path'), Object.keys(RefParams.shape));
    assert.deepEqual(names(audit, 'query'), Object.keys(AuditQuery.shape).sort());
  });

  it('describes the order body as a oneOf of the three order types, discriminated by type', () => {
    const ref = doc.paths['/v1/orders']!.post!.requestBody!.content['application/json']!.schema.$ref;
    assert.equal(ref, '#/components/schemas/OrderRequest');
    const union = doc.components.schemas.OrderRequest!;
    assert.deepEqual(
      union.oneOf?.map((s) => s.$ref),
      ['MobileTopupRequest', 'InternetTopupRequest', 'GiftCardRequest'].map(
        (n) => `#/components/schemas/${n}`,
      ),
    );
  });

  for (const [name, schema] of Object.entries(bodySchemas)) {
    it(`${name}: the documented properties, required fields and additionalProperties match zod`, () => {
      const documented = doc.components.schemas[name]!;
      assert.deepEqual(Object.keys(documented.properties ?? {}).sort(), Object.keys(schema.shape).sort());
      assert.deepEqual([...(documented.required ?? [])].sort(), requiredKeys(schema));
      assert.equal(documented.additionalProperties, false);
      assert.ok(documented.examples?.length, 'has an example');
    });
  }

  for (const name of ['MobileTopupRequest', 'InternetTopupRequest', 'GiftCardRequest']) {
    it(`${name}: the documented example is accepted (201); without each documented required field → 400 naming it; with an extra field → 400`, async () => {
      const documented = doc.components.schemas[name]!;
      const example = { ...documented.examples![0]!, ref: `DOC-${randomUUID().slice(0, 8)}` };
      const accepted = await api.request('POST', '/v1/orders', { body: example });
      assert.equal(accepted.status, 201, accepted.text);

      for (const field of documented.required ?? []) {
        // A fresh ref each time, so a body that were wrongly accepted could not pass as a repeat.
        const body: Record<string, unknown> = { ...example, ref: `DOC-${randomUUID().slice(0, 8)}` };
        delete body[field];
        const res = await api.request('POST', '/v1/orders', { body });
        assert.equal(res.status, 400, `${name} without ${field}`);
        const fields = (res.body as Problem).errors?.map((e) => e.field) ?? [];
        assert.ok(fields.includes(field), `${name} without ${field} names it: ${JSON.stringify(fields)}`);
      }
      const extra = await api.request('POST', '/v1/orders', { body: { ...example, unexpected: 1 } });
      assert.deepEqual(
        (extra.body as Problem).errors?.map((e) => e.field),
        ['unexpected'],
      );
    });
  }

  it('ReviewRequest: the documented example passes validation (404 for an unknown order, not 400)', async () => {
    const example = doc.components.schemas.ReviewRequest!.examples![0]!;
    const res = await api.request('POST', `/v1/orders/NO-SUCH-${randomUUID().slice(0, 8)}/review`, {
      body: example,
    });
    assert.equal(res.status, 404, res.text);
    assert.equal((res.body as Problem).type, '/problems/order-not-found');
  });

  it('the Problem schema describes what the API really answers', async () => {
    const problem = (await api.request<Problem>('POST', '/v1/orders', { body: { type: 'x' } })).body;
    const documented = doc.components.schemas.Problem!;
    for (const key of documented.required ?? []) assert.ok(key in problem, `${key} present`);
    for (const key of Object.keys(problem))
      assert.ok(key in (documented.properties ?? {}), `${key} documented`);
  });
});
