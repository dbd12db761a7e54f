/**
 * The intake API's own schemas: path and query parameters, and the response bodies. A `.meta` id
 * names the schema's component in the OpenAPI document.
 *
 * Request bodies come from contract/schemas.ts, and the order's view from contract/order-view.ts
 * (the workflow's own, which the API's OrderView extends); a type assertion in order.service.ts
 * keeps the view the API builds and the documented one identical.
 */
import { z } from 'zod';
import { allWebhookEventTypes, ClientId, WEBHOOK_ENDPOINT_ID_PATTERN } from '../clients';
import {
  GiftCardRequest,
  InternetTopupRequest,
  MobileTopupRequest,
  OrderRef,
  OrderStatus,
  OrderType,
} from '../../contract/schemas';
import { MASKED } from '../audit';
import { auditEntryKinds } from '../audit';
import { IsoTime, ProviderAnswer, WorkflowOrderView } from '../../contract/order-view';
import { workflowStatuses } from '../../contract/order-identity';

// ---- parameters ----

export const RefParams = z.strictObject({
  ref: OrderRef,
});

export const WebhookEventId = z
  .string()
  .regex(/^evt_[A-Za-z0-9_-]{1,64}$/, 'expected an event id (evt_…)')
  .meta({
    description: 'An event’s id, as in its `webhook-id` header and its body.',
    example: 'evt_3q2l0f1bX8yNw9kQ0pZr7tAa',
  });
export const WebhookEndpointId = z
  .string()
  .regex(WEBHOOK_ENDPOINT_ID_PATTERN, 'an endpoint id: lowercase letters, digits, "_" and "-"')
  .meta({ description: 'An endpoint’s id, as GET /v1/webhooks lists it.', example: 'erp' });

export const RedeliverParams = z.strictObject({ ref: OrderRef, eventId: WebhookEventId });
export const RedeliverQuery = z.strictObject({
  endpoint: WebhookEndpointId.optional().meta({
    description: 'Only this endpoint; default: every endpoint the event was for.',
  }),
});

/** Whose order: only callers with audit:read or the operator role may name another client. */
const ClientParam = ClientId.optional().meta({
  description:
    'The client that owns the order; default: yours. Another client’s orders are reachable with ' +
    'audit:read (reading) or the operator role (orders in review); otherwise the answer is 404.',
});

export const OrderAddressQuery = z.strictObject({ client: ClientParam });

/** Another client's order in clear (src/audit/mask.ts says what is masked otherwise, reveal.ts how a reveal is recorded). */
const RevealParam = z
  .enum(['true', 'false'])
  .default('false')
  .transform((v) => v === 'true')
  .meta({
    description:
      'true: phone and line numbers, card codes and the digits in notes and the provider’s text in clear. ' +
      'Needs the scope `audit:reveal` (403 otherwise, whoever owns the order); every reveal is logged and ' +
      'counted. Default: masked for any reader but the order’s owner.',
  });

export const OrderViewQuery = z.strictObject({ client: ClientParam, reveal: RevealParam });

export const AuditQuery = z.strictObject({
  client: ClientId.optional().meta({
    description: 'The client that owns the order; default: yours. audit:read reaches every client’s orders.',
  }),
  reveal: RevealParam,
});

/** Page sizes above this make one visibility call too slow to answer within the request timeout. */
export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;

/**
 * The longest date range a list, export or statement takes (docs/integrators.md "Listing orders"): a
 * year and a day, so a calendar year in any zone fits and no request reads the whole history.
 */
export const MAX_RANGE_DAYS = 366;
const MAX_RANGE_MS = MAX_RANGE_DAYS * 24 * 60 * 60_000;

export const RangeBound = (description: string) =>
  z.iso
    .datetime({ offset: true })
    .transform((value) => new Date(value))
    .refine((date) => date.getUTCFullYear() >= 1970 && date.getUTCFullYear() <= 9999, 'out of range')
    .optional()
    .meta({ description, format: 'date-time' });

/**
 * A range `from`..`to` (both inclusive, either may be missing) is forwards and at most
 * MAX_RANGE_DAYS long; otherwise an issue naming the upper bound (the lower one when it is alone).
 */
export function checkRange(
  value: Record<string, unknown>,
  ctx: z.core.$RefinementCtx<Record<string, unknown>>,
  fromField: string,
  toField: string,
  { required = false }: { required?: boolean } = {},
): void {
  // A bound that failed its own check stays the caller's text (zod runs this check all the same):
  // that field's issue is the answer, not a comparison.
  const boundAt = (field: string) => (value[field] instanceof Date ? value[field] : undefined);
  const from = boundAt(fromField);
  const to = boundAt(toField);
  if (required) {
    for (const field of [fromField, toField]) {
      if (value[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: 'is required' });
    }
  }
  if (!from || !to) return;
  if (to.getTime() < from.getTime()) {
    ctx.addIssue({ code: 'custom', path: [toField], message: `is before ${fromField}` });
  } else if (to.getTime() - from.getTime() > MAX_RANGE_MS) {
    ctx.addIssue({
      code: 'custom',
      path: [toField],
      message: `more than ${MAX_RANGE_DAYS} days after ${fromField}`,
    });
  }
}

export const ListOrdersQuery = z
  .strictObject({
    client: ClientId.optional().meta({
      description:
        'Only this client’s orders; default: every order you reach (yours; with audit:read every ' +
        'client’s; as an operator also every client’s orders in NEEDS_REVIEW). Another client you ' +
        'reach no order of answers 404.',
    }),
    status: OrderStatus.optional().meta({ description: 'Only orders in this status.' }),
    type: OrderType.optional().meta({ description: 'Only orders of this type.' }),
    pageSize: z.coerce
      .number()
      .int()
      .min(1)
      .max(MAX_PAGE_SIZE)
      .default(DEFAULT_PAGE_SIZE)
      .meta({ description: 'Orders per page.' }),
    pageToken: z
      .string()
      .max(4_096)
      .regex(/^[A-Za-z0-9_-]+$/, 'expected the nextPageToken of a previous page')
      .optional()
      .meta({ description: 'The `nextPageToken` of the previous page.' }),
    acceptedFrom: RangeBound('Only orders accepted at or after this time (RFC 3339).'),
    acceptedTo: RangeBound(
      `Only orders accepted at or before this time; at most ${MAX_RANGE_DAYS} days after acceptedFrom.`,
    ),
    completedFrom: RangeBound(
      'Only orders that reached a final status at or after this time (orders still open, or completed ' +
        'before the CompletedAt search attribute existed, are left out).',
    ),
    completedTo: RangeBound(
      `Only orders that reached a final status at or before this time; at most ${MAX_RANGE_DAYS} days after completedFrom.`,
    ),
  })
  .superRefine((query, ctx) => {
    checkRange(query, ctx, 'acceptedFrom', 'acceptedTo');
    checkRange(query, ctx, 'completedFrom', 'completedTo');
  });
export type ListOrdersQuery = z.infer<typeof ListOrdersQuery>;

// ---- responses ----

/**
 * The order's request as a reader sees it: its owner as it sent it; any other reader with the
 * phone or line number "[masked]" (src/audit/mask.ts). The intake's rules stay the request
 * schema's own (contract/schemas.ts); a view only describes what was accepted.
 */
const Masked = z.literal(MASKED).meta({ description: 'Masked: you are not the order’s owner.' });
export const OrderRequestAsRead = z
  .discriminatedUnion('type', [
    z.strictObject({ ...MobileTopupRequest.shape, msisdn: MobileTopupRequest.shape.msisdn.or(Masked) }),
    z.strictObject({ ...InternetTopupRequest.shape, number: InternetTopupRequest.shape.number.or(Masked) }),
    GiftCardRequest,
  ])
  .meta({
    id: 'OrderRequestAsRead',
    description:
      'The order as submitted (OrderRequest); to a reader other than its owner, `msisdn` and `number` read "[masked]".',
  });

export { workflowStatuses };

/**
 * The order as the API answers it: the workflow's own view (contract/order-view.ts), its owner
 * always named, its request masked for other readers, and what the API adds of Temporal's.
 */
export const OrderView = WorkflowOrderView.extend({
  client: z.string().meta({ description: 'The client that submitted the order and owns it.' }),
  request: OrderRequestAsRead,
  workflowId: z.string().meta({ description: 'The order’s workflow in Temporal (UI and CLI).' }),
  providerRef: z
    .string()
    .optional()
    .meta({ description: 'Top-ups: the ref the provider knows the order by.' }),
  temporalUiUrl: z.url().optional().meta({
    description:
      'The order’s workflow in Temporal UI (its latest run), when the API is configured with TEMPORAL_UI_URL.',
  }),
  workflowStatus: z.enum(workflowStatuses).meta({
    description:
      'The order’s workflow in Temporal: RUNNING until the order is final (and any watch over), then COMPLETED; ' +
      'FAILED, TERMINATED, CANCELLED or TIMED_OUT when it ended without its view (see `live`).',
  }),
  live: z
    .literal(false)
    .optional()
    .meta({
      description:
        'Absent when the view is the workflow’s own (its answer while it runs, its result once completed). ' +
        'false: no worker answered, or the workflow ended without a view, so it is rebuilt from Temporal’s ' +
        'records: `status` is the last the workflow published; the rest is as of its current run’s start ' +
        '(the request, and what a continue-as-new carried over), so the timeline and provider details may lag.',
    }),
}).meta({ id: 'OrderView', description: 'An order as the workflow sees it now.' });

export const WebhookEventType = z.enum(allWebhookEventTypes).meta({ id: 'WebhookEventType' });

const deliveryStates = ['pending', 'delivered', 'failed', 'skipped'] as const;

export const EndpointDelivery = z
  .object({
    endpoint: z.string(),
    state: z.enum(deliveryStates).meta({
      description:
        'pending: not delivered yet (retrying); delivered: the endpoint answered 2xx; failed: given up ' +
        'after the retry window (a redelivery sends it again); skipped: the endpoint was removed.',
    }),
    attempts: z.number().int().meta({
      description: 'Attempts since the event (or its last redelivery) became due; a deferral is not one.',
    }),
    dueSince: IsoTime,
    deferrals: z
      .number()
      .int()
      .optional()
      .meta({
        description:
          'Times an attempt was not made because your endpoint already had as many in flight as a worker ' +
          'allows (WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT): no attempt, no error; tried again soon.',
      }),
    nextAttemptAt: IsoTime.optional(),
    lastAttemptAt: IsoTime.optional(),
    lastError: z.string().optional().meta({ description: 'Why the last attempt failed (never a body).' }),
    lastStatus: z
      .number()
      .int()
      .optional()
      .meta({ description: 'Your endpoint’s HTTP status on the last attempt.' }),
    deliveredAt: IsoTime.optional(),
    redeliveries: z.number().int().optional(),
  })
  .meta({ id: 'EndpointDelivery', description: 'One event at one endpoint.' });

export const EndpointDeliverySummary = z
  .object({
    endpoint: z.string(),
    events: z.number().int(),
    delivered: z.number().int(),
    pending: z.number().int(),
    failed: z.number().int(),
    skipped: z.number().int(),
    attempts: z.number().int(),
    lastAttemptAt: IsoTime.optional(),
    lastDeliveredAt: IsoTime.optional(),
    lastError: z.string().optional(),
    nextAttemptAt: IsoTime.optional(),
  })
  .meta({ id: 'EndpointDeliverySummary', description: 'How this order’s events fared at one endpoint.' });

export const WebhookEndpointView = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z
      .array(WebhookEventType)
      .optional()
      .meta({ description: 'The event types sent; absent: every type, including any added later.' }),
    cardCodes: z.boolean().meta({ description: 'Card codes in clear in the events (otherwise "[masked]").' }),
    secretVersion: z.number().int(),
    previousSecretVersion: z
      .number()
      .int()
      .optional()
      .meta({ description: 'A rotation is under way: events are signed with this version’s secret too.' }),
  })
  .meta({ id: 'WebhookEndpoint', description: 'An endpoint of yours (its secret is never shown here).' });

export const WebhookEndpointList = z
  .object({ endpoints: z.array(WebhookEndpointView) })
  .meta({ id: 'WebhookEndpointList' });

export const OrderWebhookDeliveries = z
  .object({
    ref: z.string(),
    events: z.array(
      z.object({
        id: z.string(),
        sequence: z.number().int(),
        type: WebhookEventType,
        timestamp: IsoTime,
        deliveries: z.array(EndpointDelivery),
      }),
    ),
  })
  .meta({
    id: 'OrderWebhookDeliveries',
    description: 'Every event of the order, and its delivery at each endpoint.',
  });

export const RedeliveryAccepted = z
  .object({
    eventId: z.string(),
    sequence: z.number().int(),
    type: WebhookEventType,
    endpoints: z.array(z.string()),
  })
  .meta({ id: 'RedeliveryAccepted' });

/** GET /v1/orders/{ref}: the view, and for the owner of a client with webhook endpoints, their deliveries. */
export const OrderViewWithDeliveries = OrderView.extend({
  webhooks: z
    .array(EndpointDeliverySummary)
    .optional()
    .meta({
      description:
        'Your own order, when your client has webhook endpoints: per endpoint, how this order’s events fared ' +
        '(details: GET /v1/orders/{ref}/webhooks).',
    }),
}).meta({ id: 'OrderViewWithDeliveries' });

export const OrderSummary = z
  .object({
    ref: z.string(),
    client: z
      .string()
      .optional()
      .meta({ description: 'The owner (absent only for old orders when no default client is set).' }),
    workflowId: z.string(),
    type: OrderType.optional(),
    status: OrderStatus.optional(),
    workflowStatus: z.enum(workflowStatuses),
    acceptedAt: IsoTime,
    completedAt: IsoTime.optional().meta({
      description:
        'When the order reached its final status (absent while open, and on orders completed before this was recorded).',
    }),
    closedAt: IsoTime.optional(),
  })
  .meta({ id: 'OrderSummary', description: 'One order as Temporal visibility lists it.' });

export const OrderList = z
  .object({
    orders: z.array(OrderSummary),
    nextPageToken: z.string().optional().meta({ description: 'Absent on the last page.' }),
  })
  .meta({ id: 'OrderList' });

const AuditEntry = z
  .object({
    at: IsoTime.meta({ description: 'When it happened (an activity: when its outcome was recorded).' }),
    kind: z.enum(auditEntryKinds),
    run: z.number().int().meta({ description: '1 for the first run, +1 at each continue-as-new.' }),
    eventId: z.number().int().meta({ description: 'The history event of its run it stands at.' }),
  })
  .catchall(z.unknown())
  .meta({
    id: 'AuditEntry',
    description:
      'One step of the order’s story; the fields beside `kind` are listed per kind in docs/operators.md ' +
      '(“Audit export”). Highlights: `activity` has `activityType`, `input`, `outcome`, `result` or ' +
      '`failure`, `providerStatus`, `worker`, timing, and `repeats`/`lastAt` when identical answers ' +
      'were folded; `signal` and `update` have `name`, `identity` (as Temporal recorded the sender) ' +
      'and, for a decision, `decision` {decision, operator, decidedBy, note}; `status` has `status` ' +
      'and `previous`.',
  });

export const OrderAudit = z
  .object({
    ref: z.string(),
    client: z.string(),
    workflowId: z.string(),
    temporalUiUrl: z.url().optional(),
    type: OrderType.optional(),
    status: OrderStatus.optional().meta({ description: 'The order’s status now (its OrderStatus).' }),
    secrets: z.enum(['masked', 'revealed']),
    runs: z.array(
      z.object({
        runId: z.string(),
        startedAt: IsoTime.optional(),
        closedAt: IsoTime.optional(),
        events: z.number().int(),
      }),
    ),
    entries: z.array(AuditEntry),
  })
  .meta({
    id: 'OrderAudit',
    description: 'The order’s story from its workflow history, every run joined, oldest first.',
  });

export const Health = z.object({ status: z.literal('ok') }).meta({ id: 'Health' });
export const Readiness = z
  .object({
    status: z.literal('ready'),
    checks: z.object({
      temporal: z.literal('up').meta({ description: "Temporal's frontend and history service answer." }),
      namespace: z.literal('up').meta({ description: 'TEMPORAL_NAMESPACE exists.' }),
      searchAttributes: z
        .literal('up')
        .meta({ description: 'Every search attribute an order sets is registered.' }),
      worker: z
        .literal('up')
        .meta({ description: 'A worker polled the order task queue in the last 2 minutes.' }),
      provider: z.literal('up').meta({ description: 'The provider accepts our key.' }),
    }),
    fairness: z.enum(['on', 'off', 'unknown']).meta({
      description:
        'Whether Temporal honours task-queue fairness (one client’s backlog does not hold another’s orders), ' +
        'as the fairness probe last found it (re-probed hourly; `unknown` until the first answer). ' +
        '`off` does not make the API unready: orders still run, first come, first served.',
    }),
    deployment: z
      .object({
        name: z.string().meta({ description: 'The Worker Deployment (WORKER_DEPLOYMENT_NAME).' }),
        state: z.enum(['known', 'none', 'unknown']).meta({
          description: '`none`: no worker of it has polled yet; `unknown`: Temporal did not answer in time.',
        }),
        current: z.string().optional().meta({ description: 'The build ID new orders start on.' }),
        ramping: z
          .object({ buildId: z.string(), percentage: z.number() })
          .optional()
          .meta({ description: 'A build taking this share of new orders while it is ramped.' }),
        versions: z
          .array(
            z.object({
              buildId: z.string(),
              status: z.enum(['inactive', 'current', 'ramping', 'draining', 'drained']),
            }),
          )
          .optional()
          .meta({
            description:
              'Every build of the deployment: `draining` still runs orders pinned to it, `drained` none (its workers may be retired).',
          }),
      })
      .meta({
        description:
          'Which worker build runs new orders (docs/deployers.md "Deploying a new version"). An order runs on the build that started it; one in a long wait (review, QUEUED, HELD, watched) moves to the current build at its next wake-up. Never a reason to be unready.',
      }),
    notices: z
      .array(z.string())
      .optional()
      .meta({ description: 'What is not as it should be, although orders still run (e.g. fairness off).' }),
    account: z
      .object({
        held: z
          .object({
            balance: z.number().int(),
            operator: z.number().int(),
            byOperator: z
              .record(z.string(), z.number().int())
              .optional()
              .meta({ description: 'The orders held for an operator, by operator.' }),
          })
          .optional()
          .meta({
            description:
              'Orders HELD now: waiting for the account’s balance, or for an operator the provider reports down. ' +
              'The API stays ready: it keeps taking orders, which wait too.',
          }),
        operators: z
          .record(z.string(), z.enum(['up', 'down']))
          .optional()
          .meta({ description: 'Each operator’s state as the provider’s /v3/ping reports it.' }),
        api: z
          .enum(['ok', 'error'])
          .optional()
          .meta({
            description:
              'The provider’s own API as its /v3/ping reports it. `error` is reported, not acted on: the API ' +
              'stays ready and sends go on, each call’s own answer deciding (docs/operators.md).',
          }),
      })
      .meta({ description: 'The provider account (parts that could not be read are left out).' }),
  })
  .meta({ id: 'Readiness' });

export const FieldErrorSchema = z.object({ field: z.string(), message: z.string() });

export const ProblemSchema = z
  .object({
    type: z
      .string()
      .meta({ description: 'Stable identifier of the problem type, e.g. /problems/validation-error.' }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    requestId: z.string().optional(),
    errors: z
      .array(FieldErrorSchema)
      .optional()
      .meta({ description: 'Validation problems: one entry per bad field.' }),
    refusal: z.enum(['contradicted', 'unconfirmed', 'invalid']).optional().meta({
      description:
        'A refused decision: the provider contradicts it, cannot confirm it, or it cannot apply to this order.',
    }),
    provider: ProviderAnswer.optional(),
    forceable: z
      .boolean()
      .optional()
      .meta({ description: 'A refused decision: whether `force: true` (with a note) would apply it.' }),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details.' });
