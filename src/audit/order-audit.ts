/**
 * An order's audit from its workflow, for the API route and the CLI alike: every run's history,
 * the story built from it (./story.ts), masked unless secrets were asked for (./mask.ts). Who may
 * read it is the caller's business (the route: audit:read and the order's recorded owner).
 */
import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import {
  OrderStatusAttribute,
  OrderTypeAttribute,
  type OrderStatus,
  type OrderType,
} from '../../contract/order';
import { fetchRuns } from './history';
import { maskSecrets } from './mask';
import { buildOrderStory, type OrderStory } from './story';
import type { Timed } from '../temporal';

export interface OrderAudit extends OrderStory {
  ref: string;
  client: string;
  workflowId: string;
  temporalUiUrl?: string;
  type?: OrderType;
  /** The order's status now, as its OrderStatus search attribute says. */
  status?: OrderStatus;
  secrets: 'masked' | 'revealed';
}

export interface AuditOptions {
  ref: string;
  /** The order's owner (already checked by the caller). */
  client: string;
  reveal: boolean;
  temporalUiUrl?: string;
  /** Each Temporal call under a deadline (the API's); default: none. */
  timed?: Timed;
}

export async function auditOrder(
  client: Client,
  description: WorkflowExecutionDescription,
  { ref, client: owner, reveal, temporalUiUrl, timed }: AuditOptions,
): Promise<OrderAudit> {
  const runs = await fetchRuns(client, description.workflowId, description.runId, timed);
  const story = await buildOrderStory(runs, client.options.loadedDataConverter);
  const type = description.typedSearchAttributes.get(OrderTypeAttribute) as OrderType | undefined;
  const status = description.typedSearchAttributes.get(OrderStatusAttribute) as OrderStatus | undefined;
  return {
    ref,
    client: owner,
    workflowId: description.workflowId,
    ...(temporalUiUrl ? { temporalUiUrl } : {}),
    ...(type ? { type } : {}),
    ...(status ? { status } : {}),
    secrets: reveal ? 'revealed' : 'masked',
    ...(reveal ? story : maskSecrets(story)),
  };
}
