/**
 * Links into Temporal UI (TEMPORAL_UI_URL): an order's workflow, and the review queue. The UI's
 * routes: `/namespaces/<ns>/workflows/<workflowId>` opens the latest run (the UI redirects to
 * `…/<runId>`), and `/namespaces/<ns>/workflows?query=<visibility query>` lists what the query
 * matches, as typed into the UI's filter.
 */

/** The visibility query of the review queue, as operators type it in the UI. */
export const REVIEW_QUEUE_QUERY = 'OrderStatus="NEEDS_REVIEW"';

function namespaceUrl(uiBaseUrl: string, namespace: string): string {
  return `${uiBaseUrl.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(namespace)}`;
}

export function workflowUiUrl(uiBaseUrl: string, namespace: string, workflowId: string): string {
  return `${namespaceUrl(uiBaseUrl, namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}

/** …/workflows?query=OrderStatus%3D%22NEEDS_REVIEW%22 */
export function reviewQueueUiUrl(uiBaseUrl: string, namespace: string): string {
  return `${namespaceUrl(uiBaseUrl, namespace)}/workflows?query=${encodeURIComponent(REVIEW_QUEUE_QUERY)}`;
}
