/**
 * Where an order stands in Temporal's task queue against other orders (docs/deployers.md "Fair under
 * load"). Fairness across clients: every order's workflow carries its client as the fairness key,
 * weighted from the clients file, so while several clients have orders waiting, the workers serve
 * them in proportion to their weights instead of first come, first served. Priority within a
 * client: an order submitted on its own goes ahead of batch items, its owner's and everyone else's,
 * since a single submission is someone waiting at a counter and a batch is a back office's upload.
 *
 * Set once, on the workflow start. Everything the workflow schedules (the send, the status
 * polling, the review's re-check at the provider, the watch after a final answer, a continue-as-new
 * run) inherits it: all of that is the same order's work, owed to the same client, and an order
 * half done must not fall behind new ones of the same kind.
 */
import type { Priority } from '@temporalio/common';
import type { Client } from '../clients';

/** How the order reached the API: alone (POST /v1/orders) or as a batch item (POST /v1/orders/batch). */
export type OrderOrigin = 'single' | 'batch';

/**
 * Temporal's priority keys: 1 first, 5 last; a start without one gets 3. Singles above that default,
 * batch items below it, so anything else on the queue without a key sits between the two.
 */
export const orderPriorityKeys: Record<OrderOrigin, number> = { single: 2, batch: 4 };

export function orderPriority(client: Pick<Client, 'id' | 'fairnessWeight'>, origin: OrderOrigin): Priority {
  return {
    priorityKey: orderPriorityKeys[origin],
    fairnessKey: client.id,
    fairnessWeight: client.fairnessWeight,
  };
}
