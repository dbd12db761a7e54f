/**
 * GET /v1/reconciliations/{date}: the nightly reconciliation's report of one day (workflows/
 * reconciliation.ts), read from the day's workflow (`reconciliation:<date>`): its result once it
 * finished, its `report` query while it runs (or after it closed without one).
 *
 * Needs `audit:read`: the provider's ledger is the account's, one for every client, and the report
 * names every client's orders, so no client key reads it (docs/operators.md "Statements and reconciliation").
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { z } from 'zod';
import {
  reconciliationReportQuery,
  reconciliationWorkflowId,
  type ReconciliationReport as Report,
} from '../../contract/reconciliation';
import { OrderStatus } from '../../contract/schemas';
import { ApiError } from './errors';

export const ReconciliationParams = z.strictObject({
  date: z.iso
    .date()
    // 2001-02-30 passes the pattern: the day must exist. (Refinements run after a failed pattern too.)
    .refine((d) => {
      const at = Date.parse(`${d}T00:00:00Z`);
      return Number.isFinite(at) && new Date(at).toISOString().startsWith(d);
    }, 'no such day')
    .meta({ description: 'The reconciled day, YYYY-MM-DD (in the time zone the reconciliation ran in).' }),
});

const IsoTime = z.iso.datetime({ offset: true });
const LedgerRow = z.object({
  id: z.string(),
  type: z.string(),
  amount: z.number(),
  time: z.string(),
  objid: z.string().optional(),
});
const Item = z.object({
  kind: z.enum(['fulfilled-without-debit', 'refund-of-fulfilled', 'debit-without-refund']),
  ref: z.string(),
  client: z.string().optional(),
  workflowId: z.string(),
  status: OrderStatus,
  outcome: z.enum(['agreed', 'disputed', 'unreachable', 'open']),
  evidence: z.string(),
});

export const ReconciliationReport = z
  .object({
    date: z.string(),
    timeZone: z.string(),
    from: IsoTime,
    to: IsoTime,
    orders: z.number().int().meta({ description: 'Final orders of the day matched against the ledger.' }),
    matched: z.number().int().meta({ description: 'Orders whose ledger rows say what their status says.' }),
    checked: z.number().int().meta({ description: 'Mismatched orders re-checked at the provider.' }),
    agreed: z.number().int().meta({ description: 'Re-checked orders the provider agreed with after all.' }),
    disputed: z
      .number()
      .int()
      .meta({ description: 'Re-checked orders the provider contradicts: now DISPUTED.' }),
    unreachable: z.number().int().meta({ description: 'Re-checks the provider could not answer.' }),
    open: z
      .number()
      .int()
      .meta({ description: 'Re-checked orders whose workflow was running again: left to it.' }),
    unexplained: z.array(LedgerRow).meta({ description: 'Debits and refunds of the day no order explains.' }),
    ledgerRows: z.number().int(),
    items: z.array(Item).meta({ description: 'One entry per re-checked order, with the evidence.' }),
    startedAt: IsoTime,
    finishedAt: IsoTime.optional(),
  })
  .meta({ id: 'ReconciliationReport' });

export const ReconciliationAnswer = z
  .object({
    date: z.string(),
    workflowId: z.string(),
    state: z.enum(['running', 'completed', 'closed']).meta({
      description:
        '`running`: the report so far; `completed`: the run’s report; `closed`: the run ended without one ' +
        '(terminated, failed) and `report` is what it had reached, when it could be read.',
    }),
    report: ReconciliationReport.optional(),
  })
  .meta({ id: 'Reconciliation' });
export type ReconciliationAnswer = z.infer<typeof ReconciliationAnswer>;

export class ReconciliationService {
  constructor(private readonly client: Client) {}

  async read(date: string): Promise<ReconciliationAnswer> {
    const workflowId = reconciliationWorkflowId(date);
    const handle = this.client.workflow.getHandle(workflowId);
    let status: string;
    try {
      status = (await handle.describe()).status.name;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) {
        throw new ApiError('reconciliation-not-found', `No reconciliation of ${date} has run.`);
      }
      throw err;
    }
    if (status === 'COMPLETED')
      return { date, workflowId, state: 'completed', report: await handle.result() };
    // A running run answers its query at once; a closed one replays on a worker, which may be away.
    const report: Report | undefined = await handle.query(reconciliationReportQuery).catch(() => undefined);
    return {
      date,
      workflowId,
      state: status === 'RUNNING' ? 'running' : 'closed',
      ...(report && { report }),
    };
  }
}
