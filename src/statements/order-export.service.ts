/**
 * GET /v1/orders/export: every order accepted in a range, one row per order, as CSV or NDJSON
 * (by `Accept`), streamed a page at a time — the list's scan (order-list.ts) and each order's view
 * (orders.ts `view`, the read route's access and masking) — so memory stays one page whatever the
 * range. Each row carries its `position`: `after=<position>` resumes an interrupted download after
 * that row (a token sealed to the filters and caller, as page tokens are).
 *
 * Phone and line numbers and card codes are columns only for a caller with `audit:reveal`, and each
 * order so revealed is recorded as an audit reveal is. A failure mid-stream cannot change the
 * status line any more: the connection is cut, so the client sees an incomplete download (no final
 * newline / no end) and resumes from its last row's position.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import type { Response } from 'express';
import pLimit from 'p-limit';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Caller } from '../clients';
import { ClientId } from '../clients';
import { REVEAL_SCOPE } from '../audit';
import { OrderStatus, OrderType } from '../../contract/schemas';
import { ApiError } from '../http';
import type { OrderService, OrderView } from '../orders';
import type { ScannedOrder } from '../orders';
import { checkRange, MAX_RANGE_DAYS, RangeBound } from '../http';
import { ReadCache, readKey } from '../http';

export const ExportOrdersQuery = z
  .strictObject({
    from: RangeBound('Orders accepted at or after this time (RFC 3339). Required.'),
    to: RangeBound(
      `Orders accepted at or before this time; at most ${MAX_RANGE_DAYS} days after from. Required.`,
    ),
    status: OrderStatus.optional().meta({ description: 'Only orders in this status.' }),
    type: OrderType.optional().meta({ description: 'Only orders of this type.' }),
    client: ClientId.optional().meta({
      description: 'Only this client’s orders (reach as on GET /v1/orders; 404 if you reach none).',
    }),
    after: z
      .string()
      .max(4_096)
      .regex(/^[A-Za-z0-9_-]+$/, 'expected the position of an exported row')
      .optional()
      .meta({ description: 'Resume after this row: the `position` of the last row received.' }),
  })
  .superRefine((query, ctx) => checkRange(query, ctx, 'from', 'to', { required: true }));
export type ExportOrdersQuery = z.infer<typeof ExportOrdersQuery>;

export const NDJSON = 'application/x-ndjson';
export const CSV = 'text/csv';
/** Orders whose view is read at once. */
const VIEWS_AT_ONCE = 8;

/** The columns, in order; the revealing ones only with audit:reveal. */
const columns = [
  'position',
  'ref',
  'client',
  'type',
  'status',
  'amount',
  'value',
  'productId',
  'typeId',
  'quantity',
  'providerRef',
  'providerReference',
  'acceptedAt',
  'completedAt',
  'reviewDecision',
  'reviewDecidedBy',
  'reviewOperator',
] as const;
const revealedColumns = ['msisdn', 'lineNumber', 'cardCode', 'cardCodes'] as const;
type Column = (typeof columns)[number] | (typeof revealedColumns)[number];
export type ExportRow = Partial<Record<Column, string | number>>;

const text = z.string().optional();
/** One NDJSON row, for the OpenAPI document (CSV has the same columns, in this order). */
export const ExportRowSchema = z
  .object({
    position: z.string().meta({ description: 'Send as `after` to resume after this row.' }),
    ref: z.string(),
    client: text,
    type: OrderType,
    status: OrderStatus,
    amount: z.number().optional().meta({ description: 'Mobile: the dinars credited (or asked).' }),
    value: z.number().optional().meta({ description: 'Internet: the product value in dinars.' }),
    productId: text,
    typeId: text,
    quantity: z.number().optional(),
    providerRef: text,
    providerReference: text,
    acceptedAt: z.string(),
    completedAt: text,
    reviewDecision: text,
    reviewDecidedBy: text,
    reviewOperator: text,
    msisdn: text.meta({ description: 'Only with audit:reveal.' }),
    lineNumber: text.meta({ description: 'Only with audit:reveal.' }),
    cardCode: text.meta({ description: 'Only with audit:reveal.' }),
    cardCodes: text.meta({ description: 'Gift cards, space-separated; only with audit:reveal.' }),
  })
  .meta({ id: 'ExportRow' });

export function exportRow(view: OrderView, position: string, reveal: boolean): ExportRow {
  const { request } = view;
  const resolution = view.review?.resolution;
  const row: ExportRow = {
    position,
    ref: view.ref,
    client: view.client,
    type: view.type,
    status: view.status,
    amount: request.type === 'mobile_topup' ? (view.result?.amount ?? request.amount) : undefined,
    value: request.type === 'internet_topup' ? request.value : undefined,
    productId: request.type === 'gift_card' ? request.productId : undefined,
    typeId: request.type === 'gift_card' ? request.typeId : undefined,
    quantity: request.type === 'gift_card' ? request.quantity : undefined,
    providerRef: view.providerRef,
    providerReference: view.providerReference,
    acceptedAt: view.acceptedAt,
    completedAt: view.completedAt,
    reviewDecision: resolution?.decision,
    reviewDecidedBy: resolution?.decidedBy,
    reviewOperator: resolution?.operator,
  };
  if (reveal) {
    row.msisdn = request.type === 'mobile_topup' ? request.msisdn : undefined;
    row.lineNumber = request.type === 'internet_topup' ? request.number : undefined;
    row.cardCode = view.result?.cardCode;
    row.cardCodes = view.result?.cards?.map((card) => card.code).join(' ');
  }
  return row;
}

/**
 * One CSV cell (RFC 4180): quoted when it holds a separator, quote or line break; a text cell a
 * spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR first) is prefixed with `'`.
 */
export function csvCell(value: string | number | undefined): string {
  if (value === undefined) return '';
  if (typeof value === 'number') return String(value);
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

type ScannedPage = ScannedOrder[];

/**
 * What the export shares among the same caller's reads (read-cache.ts): each page's rows for a
 * moment (API_READ_CACHE_MS), and the view of each completed run it has read, which never changes
 * (for as long as its cache keeps it): so a page read again reads only its open orders again.
 */
export interface ExportCaches {
  pages: ReadCache;
  completedRuns: ReadCache;
}

const noExportCaches: ExportCaches = {
  pages: new ReadCache({ ttlMs: 0 }),
  completedRuns: new ReadCache({ ttlMs: 0 }),
};

/** A page's identity: a digest of its rows' positions, in order. */
function pageDigest(page: ScannedPage): string {
  const hash = createHash('sha256');
  for (const { position } of page) hash.update(position).update('\0');
  return hash.digest('base64url');
}

/** Streams the export to `res` in the format `Accept` asked for (NDJSON unless CSV is preferred). */
export async function streamExport(
  orders: OrderService,
  caller: Caller,
  query: ExportOrdersQuery,
  format: typeof NDJSON | typeof CSV,
  res: Response,
  log: Logger,
  caches: ExportCaches = noExportCaches,
): Promise<void> {
  const cache = caches.pages;
  const reveal = caller.scopes.has(REVEAL_SCOPE);
  const header: readonly Column[] = reveal ? [...columns, ...revealedColumns] : columns;
  const listQuery = {
    client: query.client,
    status: query.status,
    type: query.type,
    acceptedFrom: query.from,
    acceptedTo: query.to,
  };
  const pages = orders.scan(caller, listQuery, query.after);
  // The first page before the status line: a bad `after` or client is still a 4xx.
  let first = await pages.next();

  res.status(200).type(format === CSV ? 'text/csv; charset=utf-8' : NDJSON);
  if (format === CSV) res.setHeader('Content-Disposition', 'attachment; filename="orders.csv"');
  const write = async (chunk: string) => {
    if (!res.write(chunk)) await once(res, 'drain');
  };
  if (format === CSV) await write(`${header.join(',')}\r\n`);

  const views = pLimit(VIEWS_AT_ONCE);
  /** A page's rows as the caller gets them: each order's view, read at most VIEWS_AT_ONCE at a time. */
  const render = async (page: ScannedPage): Promise<string> => {
    const rows = await Promise.all(
      page.map(({ summary, position, runId }) =>
        views(async () => {
          const address = { client: summary.client ?? caller.id, ref: summary.ref };
          // The run the listing names as the order's latest, once completed, reads the same forever.
          const completed =
            !reveal && summary.workflowStatus === 'COMPLETED' && runId
              ? await caches.completedRuns.get(readKey('run', caller.id, summary.workflowId, runId), () =>
                  orders.completedRunView(caller, address, runId),
                )
              : undefined;
          const read = completed
            ? Promise.resolve(completed)
            : // With audit:reveal every row shows its numbers and codes: the view records each reveal.
              orders.view(caller, address, 'read', log, reveal ? 'export' : undefined);
          const view = await read.catch((err: unknown) => {
            // Gone since it was listed (deleted, out of retention): not a row any more.
            if (err instanceof ApiError && err.key === 'order-not-found') return undefined;
            throw err;
          });
          return view && exportRow(view, position, reveal);
        }),
      ),
    );
    let chunk = '';
    for (const row of rows) {
      if (!row) continue;
      chunk +=
        format === CSV ? `${header.map((c) => csvCell(row[c])).join(',')}\r\n` : `${JSON.stringify(row)}\n`;
    }
    return chunk;
  };
  try {
    while (!first.done) {
      const page = first.value;
      // The same caller's identical exports share a page's rows a moment (read-cache.ts): the
      // page's positions are sealed to the filters and the caller's reach, so they name the page.
      // A revealing export is each its own: every reveal is recorded.
      const chunk = reveal
        ? await render(page)
        : await cache.get(readKey('export', caller.id, format, page.length, pageDigest(page)), () =>
            render(page),
          );
      if (chunk) await write(chunk);
      if (res.destroyed) return;
      first = await pages.next();
    }
    res.end();
  } catch (err) {
    log.error({ err }, 'export cut short: the client resumes from the last row’s position');
    res.destroy(err instanceof Error ? err : new Error(String(err)));
  }
}
