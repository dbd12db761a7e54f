/**
 * The OpenAPI 3.1 document, generated from the same zod schemas the routes validate with
 * (contract/schemas.ts, ./schemas.ts) — never written by hand, so it cannot promise what the
 * API does not accept. test/api/openapi.test.ts checks it against the routes.
 *
 * Components are named by the schemas' own zod `.meta({ id })` (zod-to-openapi reads it), not by
 * `registry.register`, whose `.openapi()` would need zod patched before any schema is created.
 */
import {
  OpenApiGeneratorV31,
  OpenAPIRegistry,
  type ResponseConfig,
  type RouteConfig,
} from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import type { Scope } from '../clients';
import { OrderRequest, ReviewRequest } from '../../contract/schemas';
import { GiftCardCatalogView } from '../orders';
import { BULK_REVIEW_MAX_ORDERS, BulkReviewAnswer, BulkReviewRequest } from '../reviews';
import { CSV, ExportOrdersQuery, ExportRowSchema, NDJSON } from '../statements';
import { MAX_RANGE_DAYS } from '../http';
import { Statement, StatementQuery } from '../statements';
import { ReconciliationAnswer, ReconciliationParams, ReconciliationQuery } from '../reconciliation';
import { problemKinds, type ProblemKey } from '../http';
import { PROBLEM_CONTENT_TYPE } from '../http';
import { REQUEST_ID_HEADER } from './logging';
import { loadConfig } from '../config';
import {
  AuditQuery,
  Health,
  ListOrdersQuery,
  OrderAddressQuery,
  OrderAudit,
  OrderList,
  OrderView,
  OrderViewQuery,
  OrderViewWithDeliveries,
  OrderWebhookDeliveries,
  ProblemSchema,
  Readiness,
  RedeliverParams,
  RedeliverQuery,
  RedeliveryAccepted,
  RefParams,
  WebhookEndpointList,
} from '../http';

const GiftCardCatalog = GiftCardCatalogView;

const BEARER = 'bearerAuth';

const requestIdHeader = {
  [REQUEST_ID_HEADER]: {
    description: 'The request ID (yours if you sent a safe one); quote it when reporting a problem.',
    schema: { type: 'string' as const },
  },
};

function ok(
  description: string,
  schema?: z.ZodType,
  headers: ResponseConfig['headers'] = {},
): ResponseConfig {
  return {
    description,
    headers: { ...requestIdHeader, ...headers },
    ...(schema ? { content: { 'application/json': { schema } } } : {}),
  };
}

const retryAfter = {
  'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer' as const } },
};
const headersByStatus: Record<number, ResponseConfig['headers']> = {
  401: { 'WWW-Authenticate': { description: 'Bearer challenge.', schema: { type: 'string' } } },
  403: {
    'WWW-Authenticate': {
      description: 'Bearer challenge naming the missing scope (insufficient_scope).',
      schema: { type: 'string' },
    },
  },
  429: {
    ...retryAfter,
    'RateLimit-Policy': {
      description: 'The budget refused (IETF draft RateLimit headers): `"orders";q=3000;w=60`.',
      schema: { type: 'string' },
    },
    RateLimit: {
      description: 'What is left of it and when its window starts again: `"orders";r=0;t=42`.',
      schema: { type: 'string' },
    },
  },
  503: retryAfter,
};

/** One problem+json response per status; problem types that share a status share its entry. */
function problems(...keys: ProblemKey[]): Record<string, ResponseConfig> {
  const byStatus = new Map<number, string[]>();
  for (const key of new Set(keys)) {
    const { status, title } = problemKinds[key];
    byStatus.set(status, [...(byStatus.get(status) ?? []), `${title} (/problems/${key})`]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, titles]) => [
      String(status),
      {
        description: titles.join('; '),
        headers: { ...requestIdHeader, ...headersByStatus[status] },
        content: { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema } },
      },
    ]),
  );
}

/**
 * A route's security requirement: a bearer key of a client with `scope` (OpenAPI 3.1 allows
 * scopes on any scheme). Said in the description too, where most readers look.
 */
function needs(scope: Scope, description: string): Pick<RouteConfig, 'security' | 'description'> {
  return {
    security: [{ [BEARER]: [scope] }],
    description: `${description}\n\nNeeds the scope \`${scope}\`.`,
  };
}
/** Every route refuses a query parameter it does not know (400 `unknown field`). */
const commonProblems: ProblemKey[] = [
  'validation-error',
  'unauthorized',
  'forbidden',
  'rate-limited',
  'internal-error',
  'temporarily-unavailable',
];
const bodyProblems: ProblemKey[] = [
  'validation-error',
  'malformed-request',
  'payload-too-large',
  'unsupported-media-type',
];

function jsonBody(schema: z.ZodType, description: string) {
  return { body: { required: true, description, content: { 'application/json': { schema } } } };
}

/** The batch limit the document states: the default (API_BATCH_MAX_ORDERS may set another). */
const BATCH_MAX_ORDERS = loadConfig({}).API_BATCH_MAX_ORDERS;

const OrderBatchRequest = z
  .object({
    orders: z
      .array(OrderRequest)
      .min(1)
      .max(BATCH_MAX_ORDERS)
      .meta({
        description:
          `1 to ${BATCH_MAX_ORDERS} orders (API_BATCH_MAX_ORDERS). Each is validated on its own: an invalid ` +
          'one is answered 400 in its place, and the others go on.',
      }),
  })
  .meta({ id: 'OrderBatchRequest' });

const BatchItemResult = z
  .union([
    z.object({
      status: z.literal(201),
      location: z.string().meta({ description: 'The new order’s URL (the single route’s Location header).' }),
      body: OrderView,
    }),
    z.object({ status: z.literal(200), body: OrderView }),
    z.object({ status: z.number().int().min(400).max(599), body: ProblemSchema }),
  ])
  .meta({
    id: 'BatchItemResult',
    description:
      'What POST /v1/orders would have answered for this order alone: 201 (new, with `location`), 200 ' +
      '(the same order again), or a problem — 400 naming its fields, 409, 503 (not submitted in time: submit it again).',
  });

const OrderBatchResults = z
  .object({ results: z.array(BatchItemResult).meta({ description: 'One per order, in the order sent.' }) })
  .meta({ id: 'OrderBatchResults' });

function buildRegistry(): OpenAPIRegistry {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', BEARER, {
    type: 'http',
    scheme: 'bearer',
    description:
      'A key of a client in the clients file (API_CLIENTS_FILE; or API_KEYS, the legacy single client). ' +
      'Each operation names the scope its client needs; without it the answer is 403.',
  });
  registry.registerPath({
    method: 'post',
    path: '/v1/orders',
    operationId: 'submitOrder',
    tags: ['orders'],
    summary: 'Submit an order (idempotent on your `ref`)',
    ...needs(
      'orders:write',
      'A new `ref` starts the order, yours: 201 with `Location`. The same `ref` with the same body again ' +
        'answers 200 with the same order; the same `ref` with a different body answers 409. Refs are ' +
        'unique per client: another client’s `ref` never meets yours.',
    ),
    request: jsonBody(OrderRequest, 'The order, discriminated by `type`.'),
    responses: {
      201: ok('The order was accepted.', OrderView, {
        Location: { description: 'The order’s URL.', schema: { type: 'string' } },
      }),
      200: ok('This order was already submitted with the same body; its current view.', OrderView),
      ...problems(...bodyProblems, 'ref-conflict', 'order-unacceptable', ...commonProblems),
    },
  });

  registry.registerPath({
    method: 'post',
    path: '/v1/orders/batch',
    operationId: 'submitOrderBatch',
    tags: ['orders'],
    summary: 'Submit many orders at once, answered one by one',
    ...needs(
      'orders:write',
      'Each order is answered exactly as `POST /v1/orders` would have answered it, in the order sent; one ' +
        'bad order never blocks the others. Orders with the same `ref` are submitted one after the other, ' +
        'as two single requests would be (the second answers 200 or 409). The batch itself answers 200; a ' +
        '400 for the whole batch means its envelope is wrong (no `orders`, too many).',
    ),
    request: jsonBody(OrderBatchRequest, 'The orders.'),
    responses: {
      200: ok('One result per order, in order.', OrderBatchResults),
      ...problems(...bodyProblems, ...commonProblems),
    },
  });

  registry.registerPath({
    method: 'get',
    path: '/v1/orders',
    operationId: 'listOrders',
    tags: ['orders'],
    summary: 'List the orders you reach, newest first (from Temporal visibility)',
    ...needs(
      'orders:read',
      'Your orders; with `audit:read` every client’s; with the operator role also every client’s ' +
        'orders in NEEDS_REVIEW. `client` narrows to one client (404 if you reach none of its orders). ' +
        'Date ranges (accepted, completed) include both bounds; a range backwards or over 366 days is a 400 naming its end.',
    ),
    request: { query: ListOrdersQuery },
    responses: {
      200: ok('A page of orders.', OrderList),
      ...problems('validation-error', 'client-not-found', ...commonProblems),
    },
  });

  registry.registerPath({
    method: 'get',
    path: '/v1/orders/{ref}',
    operationId: 'getOrder',
    tags: ['orders'],
    summary: 'An order’s status, request, result, review and timeline',
    ...needs(
      'orders:read',
      'Your order, or with `?client=` another client’s: with `audit:read` any, with the operator role ' +
        'one that is or was in review. Another client’s order reads masked: phone and line numbers, card codes ' +
        'and the digit runs in notes and the provider’s text, unless `reveal=true`, which needs the scope ' +
        '`audit:reveal` and is logged and counted. Any other order answers 404, as no order does.',
    ),
    request: { params: RefParams, query: OrderViewQuery },
    responses: {
      200: ok('The order.', OrderViewWithDeliveries),
      ...problems('validation-error', 'order-not-found', ...commonProblems),
    },
  });

  registry.registerPath({
    method: 'get',
    path: '/v1/orders/{ref}/audit',
    operationId: 'getOrderAudit',
    tags: ['orders'],
    summary:
      'An order’s whole story from its workflow history: calls, answers, statuses, decisions and who sent them',
    ...needs(
      'audit:read',
      'Any client’s order (`?client=`; default: yours), read from Temporal history — every run joined — ' +
        'not from the order’s current view. The owner needs audit:read too. Phone and line numbers, card ' +
        'codes and the digit runs in notes and the provider’s text are masked unless `reveal=true`, which ' +
        'needs the scope `audit:reveal` as well.',
    ),
    request: { params: RefParams, query: AuditQuery },
    responses: {
      200: ok('The order’s story.', OrderAudit),
      ...problems('validation-error', 'order-not-found', ...commonProblems),
    },
  });

  registry.registerPath({
    method: 'post',
    path: '/v1/orders/{ref}/review',
    operationId: 'reviewOrder',
    tags: ['orders'],
    summary: 'An operator’s decision on an order in NEEDS_REVIEW or DISPUTED, checked against the provider',
    ...needs(
      'reviews:write',
      'On your order, or as an operator on another client’s (`?client=`). Recorded under your client ' +
        'id (`decidedBy`); `operator` is a display name stored beside it. ' +
        'The order asks the provider before it applies FULFILLED or REFUNDED. A decision the provider ' +
        'contradicts or cannot confirm (REFUNDED while it answers UNKNOWN_ERROR, which it resolves itself ' +
        'within 1-24 h, is one) is refused (409 `decision-refused`, with what the provider said and ' +
        'whether `force: true` would apply it); one that cannot apply to this order is 422 `decision-invalid`. ' +
        'RECHECK asks the provider again and answers the view after it.',
    ),
    request: { params: RefParams, query: OrderAddressQuery, ...jsonBody(ReviewRequest, 'The decision.') },
    responses: {
      200: ok('The decision was applied (or the recheck done); the order’s view after it.', OrderView),
      202: ok(
        'The decision was accepted but is still being checked against the provider; the order’s view now. ' +
          'Its outcome will be in the timeline.',
        OrderView,
      ),
      ...problems(
        ...bodyProblems,
        'order-not-found',
        'order-not-in-review',
        'decision-refused',
        'decision-invalid',
        ...commonProblems,
      ),
    },
  });

  registry.registerPath({
    method: 'get',
    path: '/v1/orders/export',
    operationId: 'exportOrders',
    tags: ['orders'],
    summary: 'Every order accepted in a range, one row per order, as NDJSON or CSV (streamed)',
    ...needs(
      'orders:read',
      'The orders GET /v1/orders reaches, accepted between `from` and `to` (both required, at most ' +
        `${MAX_RANGE_DAYS} days apart), newest first, streamed page by page. \`Accept: text/csv\` for CSV ` +
        '(a header line first), otherwise NDJSON. Each row has its `position`: `after=<position>` resumes ' +
        'after that row. Phone and line numbers and card codes are columns only with `audit:reveal`. ' +
        'A download cut short (no final newline) is resumed from the last complete row.',
    ),
    request: { query: ExportOrdersQuery },
    responses: {
      200: {
        description: 'The rows.',
        headers: requestIdHeader,
        content: {
          [NDJSON]: { schema: ExportRowSchema },
          [CSV]: { schema: { type: 'string' } },
        },
      },
      ...problems('validation-error', 'client-not-found', 'not-acceptable', ...commonProblems),
    },
  });

  registry.registerPath({
    method: 'get',
    path: '/v1/statements',
    operationId: 'statement',
    tags: ['orders'],
    summary:
      'A client’s books for a range: per day, type and final status, orders and sums; open orders apart',
    ...needs(
      'orders:read',
      'Your statement; another client’s (`client=`) needs `audit:read` (404 otherwise). Orders are ' +
        'grouped by the UTC day they reached a final status; orders accepted by `to` and not yet final ' +
        '(in review, held, in flight) are counted apart by status. `from` and `to` are required, at most ' +
        `${MAX_RANGE_DAYS} days apart.`,
    ),
    request: { query: StatementQuery },
    responses: {
      200: ok('The statement.', Statement),
      ...problems('validation-error', 'client-not-found', ...commonProblems),
    },
  });

  registry.registerPath({
    method: 'get',
    path: '/v1/reconciliations/{date}',
    operationId: 'reconciliation',
    tags: ['orders'],
    summary:
      'The nightly reconciliation of one day against the provider’s ledger: counts, disputes, evidence',
    ...needs(
      'audit:read',
      'The report of the reconciliation of `date` (a Temporal Schedule runs it every night for the day ' +
        'before, docs/operators.md): final orders matched against the provider’s ledger, what did not match ' +
        're-checked at the provider (agreed, disputed — the order is then DISPUTED —, unreachable), and ledger ' +
        'rows no order explains, each checked by its id (foreign when no order of ours has it, second-top-up when the provider ' +
        'sent a second top-up under the ref of an order of ours). Every client’s ' +
        'orders: auditors only. While the run goes on, the report so far. The latest run of the day, with ' +
        'the list of its runs; `run` reads an earlier one.',
    ),
    request: { params: ReconciliationParams, query: ReconciliationQuery },
    responses: {
      200: ok('The report.', ReconciliationAnswer),
      ...problems('reconciliation-not-found', ...commonProblems),
    },
  });

  registry.registerPath({
    method: 'post',
    path: '/v1/reviews/bulk',
    operationId: 'bulkReview',
    tags: ['orders'],
    summary:
      'One decision (most often RECHECK) for every order in review a filter finds, one result per order',
    ...needs(
      'reviews:write',
      'Each order is decided exactly as `POST /v1/orders/{ref}/review` decides it (checked against the ' +
        'provider, refused when contradicted), by a workflow that decides a few at a time, up to ' +
        `${BULK_REVIEW_MAX_ORDERS} orders. The orders reached are the review route’s: your own, and as an ` +
        'operator every client’s (`filter.client` narrows; another client is a 404 unless you are an operator). ' +
        'Idempotent by `bulkId`: the same request again answers the same bulk (202 while it runs, then its ' +
        'results); the same `bulkId` with another request is 409 `bulk-conflict`. A filter that matches ' +
        'nothing answers 200 with no results.',
    ),
    request: jsonBody(BulkReviewRequest, 'The filter and the decision.'),
    responses: {
      200: ok('The bulk is done: one result per order it found.', BulkReviewAnswer),
      202: ok(
        'The bulk is still deciding; send the same request again to collect its results.',
        BulkReviewAnswer,
      ),
      ...problems(...bodyProblems, 'client-not-found', 'bulk-conflict', ...commonProblems),
    },
  });

  registry.registerPath({
    method: 'get',
    path: '/v1/webhooks',
    operationId: 'listWebhookEndpoints',
    tags: ['webhooks'],
    summary: 'Your webhook endpoints (never their secrets)',
    ...needs(
      'webhooks:read',
      'The endpoints your client receives order events at, as the clients file lists them: URL, event ' +
        'types, whether card codes are included, the secret’s version.',
    ),
    responses: { 200: ok('Your endpoints.', WebhookEndpointList), ...problems(...commonProblems) },
  });

  registry.registerPath({
    method: 'get',
    path: '/v1/orders/{ref}/webhooks',
    operationId: 'getOrderWebhooks',
    tags: ['webhooks'],
    summary: 'Every event of your order and its delivery at each endpoint',
    ...needs(
      'webhooks:read',
      'Your own order only (another client’s is a 404). Each event with its id, sequence and type, and per ' +
        'endpoint: state, attempts, last error, next attempt.',
    ),
    request: { params: RefParams },
    responses: {
      200: ok('The order’s events.', OrderWebhookDeliveries),
      ...problems('validation-error', 'order-not-found', ...commonProblems),
    },
  });

  registry.registerPath({
    method: 'post',
    path: '/v1/orders/{ref}/webhooks/{eventId}/redeliver',
    operationId: 'redeliverWebhook',
    tags: ['webhooks'],
    summary: 'Send one event of your order again',
    ...needs(
      'webhooks:write',
      'To every endpoint the event was for, or to `endpoint`: the same id and body, a new signature; its ' +
        'attempts and retry window start again.',
    ),
    request: { params: RedeliverParams, query: RedeliverQuery },
    responses: {
      202: ok('The redelivery is queued.', RedeliveryAccepted),
      ...problems('validation-error', 'order-not-found', 'webhook-event-not-found', ...commonProblems),
    },
  });

  registry.registerPath({
    method: 'get',
    path: '/v1/gift-cards/catalog',
    operationId: 'getGiftCardCatalog',
    tags: ['gift cards'],
    summary: 'The provider’s gift-card catalog (cached briefly)',
    ...needs('orders:write', 'What gift-card orders can name: products and their types.'),
    responses: {
      200: ok('The catalog.', GiftCardCatalog),
      ...problems('provider-unavailable', ...commonProblems),
    },
  });

  registry.registerPath({
    method: 'get',
    path: '/healthz',
    operationId: 'health',
    tags: ['operations'],
    summary: 'Liveness',
    responses: { 200: ok('The process is up.', Health), ...problems('validation-error') },
  });

  registry.registerPath({
    method: 'get',
    path: '/readyz',
    operationId: 'readiness',
    tags: ['operations'],
    summary:
      'Readiness: Temporal (frontend and history), the namespace, the search attributes, a polling worker and the provider',
    responses: { 200: ok('Ready.', Readiness), ...problems('validation-error', 'temporarily-unavailable') },
  });

  registry.registerPath({
    method: 'get',
    path: '/openapi.json',
    operationId: 'openApiDocument',
    tags: ['operations'],
    summary: 'This document',
    responses: {
      200: { description: 'The OpenAPI 3.1 document.', content: { 'application/json': { schema: {} } } },
      ...problems('validation-error'),
    },
  });
  return registry;
}

let document: object | undefined;

/** Generated once per process: the schemas do not change at run time. */
export function openApiDocument(): object {
  document ??= new OpenApiGeneratorV31(buildRegistry().definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Top-up and gift-card fulfillment — intake API',
      version: '1.0.0',
      description:
        'Back-office intake for mobile top-ups, internet top-ups and gift-card orders. Errors are ' +
        'application/problem+json (RFC 9457); validation problems list every bad field in `errors`. ' +
        'Every operation refuses a query parameter it does not document (400, `unknown field`). JSON ' +
        'bodies are UTF-8 (any other charset: 415) and name each member once per object (RFC 7493: a ' +
        'duplicate is a 400 naming it).',
    },
    tags: [{ name: 'orders' }, { name: 'webhooks' }, { name: 'gift cards' }, { name: 'operations' }],
  });
  return document;
}
