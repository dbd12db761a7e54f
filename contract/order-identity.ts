/**
 * What the API adds to the workflow's view (contract/order.ts `OrderView`): whose order it is, its
 * names in Temporal and at the provider, how it was read. Shared by the orders' reads
 * (src/orders/order.service.ts) and the webhooks' messages (src/webhooks/message.ts), which carry
 * the same view.
 */

/** Temporal's execution statuses, as the SDK names them. */
export const workflowStatuses = [
  'RUNNING',
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TERMINATED',
  'CONTINUED_AS_NEW',
  'TIMED_OUT',
  'UNKNOWN',
] as const;

/** Temporal's execution status, as the API names it (the SDK's UNSPECIFIED and PAUSED read UNKNOWN). */
export type WorkflowStatusName = (typeof workflowStatuses)[number];

/** What the API adds to the workflow's view: whose order it is, its names in Temporal and at the provider, how it was read. */
export interface OrderIdentity {
  client: string;
  /** For Temporal UI and the CLI (`temporal workflow show --workflow-id …`). */
  workflowId: string;
  /** Top-ups: the ref the provider knows the order by (its support asks for it). */
  providerRef?: string;
  /** The workflow in Temporal UI, when TEMPORAL_UI_URL is configured. */
  temporalUiUrl?: string;
  /** The workflow's state in Temporal (FAILED, TERMINATED… for one that ended without its view). */
  workflowStatus: WorkflowStatusName;
  /**
   * `false`: the workflow could not give its view (no worker answered, or it ended without one),
   * so the view is rebuilt from Temporal's records (src/orders/order-read.service.ts). Absent when it is the workflow's own.
   */
  live?: false;
}
