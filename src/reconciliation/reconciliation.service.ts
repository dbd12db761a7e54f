/**
 * GET /v1/reconciliations/{date}: the nightly reconciliation's report of one day (workflows/
 * reconciliation.ts), read from the day's workflow (`reconciliation:<date>`): its result once it
 * finished, its `report` query while it runs (or after it closed without one). Each run of the day
 * (the Schedule's, one by hand) is a run of that ID: the latest is answered with the list of the
 * day's runs, and `?run=<runId>` reads an earlier one.
 *
 * Needs `audit:read`: the provider's ledger is the account's, one for every client, and the report
 * names every client's orders, so no client key reads it (docs/operators.md "Statements and reconciliation").
 */
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { z } from 'zod';
import {
  reconciliationReportQuery,
  reconciliationWorkflowId,
  type ReconciliationReport as Report,
} from '../../contract/reconciliation';
import { OrderStatus } from '../../contract/schemas';
import { ApiError } from '../http';

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

export const ReconciliationQuery = z.strictObject({
  run: z
    .uuid()
    .optional()
    .meta({ description: 'One run of the day (its `runs[].runId`); the latest when absent.' }),
});

const IsoTime = z.iso.datetime({ offset: true });
const LedgerRow = z.object({
  id: z.string(),
  type: z.string(),
  amount: z.number(),
  time: z.string(),
  objid: z.string().optional(),
});
const TopUpSeen = z.object({
  providerReference: z.string().meta({ description: 'The provider’s topupId.' }),
  status: z.string().optional().meta({ description: 'As the provider’s check by id reports it.' }),
  amount: z.number().optional().meta({ description: 'What was sent (DZD), as the provider reports it.' }),
});
const Item = z.object({
  kind: z.enum([
    'fulfilled-without-debit',
    'refund-of-fulfilled',
    'debit-without-refund',
    'reopened',
    'unexplained-row',
  ]),
  ref: z.string().meta({ description: 'The order’s ref; empty for a row no order of ours explains.' }),
  client: z.string().optional(),
  workflowId: z.string(),
  status: OrderStatus.optional(),
  row: LedgerRow.optional().meta({ description: '`unexplained-row`: the ledger row checked by its id.' }),
  outcome: z.enum(['agreed', 'disputed', 'unreachable', 'open', 'foreign', 'second-top-up']),
  evidence: z.string(),
  secondTopUp: z.object({ order: TopUpSeen, second: TopUpSeen }).optional().meta({
    description:
      '`second-top-up`: the order’s own top-up and a second one the provider sent under its ref (money sent twice).',
  }),
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
    disputed: z.number().int().meta({
      description:
        'Re-checked orders the provider contradicts, now DISPUTED, and orders found DISPUTED already (by this or an earlier reconciliation, or the watch).',
    }),
    unreachable: z.number().int().meta({ description: 'Re-checks the provider could not answer.' }),
    open: z
      .number()
      .int()
      .meta({ description: 'Re-checked orders whose workflow was running again: left to it.' }),
    foreign: z.number().int().optional().meta({
      description: 'Unexplained rows the provider knows under an id or ref no order of ours has.',
    }),
    secondTopUps: z.number().int().optional().meta({
      description:
        'Unexplained rows of a second top-up the provider sent under the ref of an order of ours (money sent twice).',
    }),
    unexplained: z
      .array(LedgerRow)
      .meta({ description: 'Debits and refunds of the day no order explains (the first 100).' }),
    unexplainedRows: z
      .number()
      .int()
      .optional()
      .meta({ description: 'How many rows no order explains (each re-checked by its id).' }),
    ledgerRows: z.number().int(),
    items: z.array(Item).meta({
      description:
        'One entry per re-check that did not agree (disputed, unreachable, open, foreign, second-top-up), with the evidence; the first 500.',
    }),
    itemsOmitted: z
      .number()
      .int()
      .optional()
      .meta({ description: 'Entries beyond the first 500, counted only.' }),
    startedAt: IsoTime,
    finishedAt: IsoTime.optional(),
  })
  .meta({ id: 'ReconciliationReport' });

const RunState = z.enum(['running', 'completed', 'closed']);

export const ReconciliationAnswer = z
  .object({
    date: z.string(),
    workflowId: z.string(),
    state: RunState.meta({
      description:
        '`running`: the report so far; `completed`: the run’s report; `closed`: the run ended without one ' +
        '(terminated, failed) and `report` is what it had reached, when it could be read.',
    }),
    runId: z.string().meta({ description: 'The run answered.' }),
    report: ReconciliationReport.optional(),
    runs: z
      .array(
        z.object({
          runId: z.string(),
          state: RunState,
          startedAt: IsoTime,
          closedAt: IsoTime.optional(),
        }),
      )
      .meta({
        description:
          'Every run of the day Temporal still holds (its retention), newest first; `?run=` reads one.',
      }),
  })
  .meta({ id: 'Reconciliation' });
export type ReconciliationAnswer = z.infer<typeof ReconciliationAnswer>;

export class ReconciliationService {
  constructor(private readonly client: Client) {}

  async read(date: string, runId?: string): Promise<ReconciliationAnswer> {
    const workflowId = reconciliationWorkflowId(date);
    const handle = this.client.workflow.getHandle(workflowId, runId);
    let described;
    try {
      described = await handle.describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) {
        throw new ApiError(
          'reconciliation-not-found',
          runId === undefined
            ? `No reconciliation of ${date} has run.`
            : `No run ${runId} of the reconciliation of ${date}.`,
        );
      }
      throw err;
    }
    const run = this.client.workflow.getHandle(workflowId, described.runId);
    const [answered, runs] = await Promise.all([
      this.#report(run, described.status.name),
      this.#runs(workflowId),
    ]);
    return { date, workflowId, runId: described.runId, ...answered, runs };
  }

  async #report(
    run: WorkflowHandle,
    status: string,
  ): Promise<Pick<ReconciliationAnswer, 'state' | 'report'>> {
    if (status === 'COMPLETED') return { state: 'completed', report: (await run.result()) as Report };
    // A running run answers its query at once; a closed one replays on a worker, which may be away.
    const report: Report | undefined = await run.query(reconciliationReportQuery).catch(() => undefined);
    return { state: stateOf(status), ...(report && { report }) };
  }

  /** The day's runs, newest first: each chain's latest run (a long day's earlier ones continued as new). */
  async #runs(workflowId: string): Promise<ReconciliationAnswer['runs']> {
    const runs: ReconciliationAnswer['runs'] = [];
    const query = `WorkflowId = '${workflowId}' AND ExecutionStatus != 'ContinuedAsNew'`;
    for await (const execution of this.client.workflow.list({ query })) {
      runs.push({
        runId: execution.runId,
        state: stateOf(execution.status.name),
        startedAt: execution.startTime.toISOString(),
        ...(execution.closeTime && { closedAt: execution.closeTime.toISOString() }),
      });
    }
    return runs.sort((a, b) => (a.startedAt < b.startedAt ? 1 : a.startedAt > b.startedAt ? -1 : 0));
  }
}

function stateOf(status: string): ReconciliationAnswer['state'] {
  if (status === 'COMPLETED') return 'completed';
  return status === 'RUNNING' ? 'running' : 'closed';
}
