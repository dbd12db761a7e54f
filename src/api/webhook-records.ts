/**
 * Where an order's webhook deliveries are recorded (docs/integrators.md "Delivery, retries, and what
 * never waits"): an event its announcement delivered itself lives in the order's own history — the
 * `announceOrderEvent` local activity's marker, whose result is the event and its settled
 * deliveries — and whatever was handed off lives in the order's delivery workflow. This reads the
 * first and merges the two into one state, as the routes show it.
 */
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import { finalStatuses } from '../../contract/order';
import {
  type AnnounceOutcome,
  type EndpointDelivery,
  type EventDeliveries,
  type WebhookDeliveryState,
} from '../../contract/webhooks';

const LOCAL_ACTIVITY_MARKER = 'core_local_activity';
const ANNOUNCE_ACTIVITY = 'announceOrderEvent';

/** The announcements' outcomes in the order's history (every run of it), oldest first. */
export async function announcedOutcomes(client: Client, orderWorkflowId: string): Promise<AnnounceOutcome[]> {
  const converter = client.options.loadedDataConverter;
  const outcomes: AnnounceOutcome[] = [];
  let runId: string | undefined;
  // Continue-as-new chains: each run's history has the announcements made in it.
  for (;;) {
    const history = await client.workflow.getHandle(orderWorkflowId, runId).fetchHistory();
    const runOutcomes: AnnounceOutcome[] = [];
    let previousRunId: string | undefined;
    for (const event of history.events ?? []) {
      const started = event.workflowExecutionStartedEventAttributes;
      if (started?.continuedExecutionRunId) previousRunId = started.continuedExecutionRunId;
      const marker = event.markerRecordedEventAttributes;
      if (marker?.markerName !== LOCAL_ACTIVITY_MARKER || marker.failure) continue;
      const [data] = await decodeArrayFromPayloads(
        converter,
        (marker.details?.data?.payloads ?? []) as Payload[],
      );
      if ((data as { activity_type?: unknown } | undefined)?.activity_type !== ANNOUNCE_ACTIVITY) continue;
      const [result] = await decodeArrayFromPayloads(
        converter,
        (marker.details?.result?.payloads ?? []) as Payload[],
      );
      const outcome = result as AnnounceOutcome | undefined;
      if (outcome?.event) runOutcomes.push(outcome);
    }
    outcomes.unshift(...runOutcomes);
    if (!previousRunId) return outcomes;
    runId = previousRunId;
  }
}

/**
 * One state from both places. Per event and endpoint the delivery workflow's record wins: it has the
 * endpoint because the direct try failed, or because a redelivery gave it the event since.
 */
export function mergedState(
  outcomes: AnnounceOutcome[],
  workflow: WebhookDeliveryState | undefined,
  orderWorkflowId: string,
  client: string,
): WebhookDeliveryState | undefined {
  if (outcomes.length === 0) return workflow;
  const records = new Map<string, EventDeliveries>();
  const handedOff = new Map<string, string[]>();
  for (const outcome of outcomes) {
    const event = outcome.event!;
    records.set(event.id, { event, deliveries: [...outcome.deliveries] });
    handedOff.set(event.id, outcome.handedOff);
  }
  for (const record of workflow?.events ?? []) {
    const direct = records.get(record.event.id);
    if (!direct) {
      records.set(record.event.id, record);
      continue;
    }
    const fromWorkflow = new Set(record.deliveries.map((d) => d.endpoint));
    direct.deliveries = [
      ...direct.deliveries.filter((d) => !fromWorkflow.has(d.endpoint)),
      ...record.deliveries,
    ].sort((a, b) => direct.event.targets.indexOf(a.endpoint) - direct.event.targets.indexOf(b.endpoint));
  }
  // Handed off, yet the delivery workflow's current run has no record of it: that run never got it.
  for (const [id, endpoints] of handedOff) {
    const record = records.get(id)!;
    for (const endpoint of endpoints) {
      if (record.deliveries.some((d) => d.endpoint === endpoint)) continue;
      record.deliveries.push({
        endpoint,
        state: 'failed',
        attempts: 0,
        dueSince: record.event.timestamp,
        lastError: `${NOT_SENT}: the delivery workflow has no record of it (the run it went to was terminated, or is past retention); ${REDELIVER}`,
      });
    }
  }
  const events = [...records.values()].sort((a, b) => a.event.sequence - b.event.sequence);
  const policy = workflow?.policy ?? outcomes.find((o) => o.policy)?.policy;
  if (!policy) return workflow;
  return {
    orderWorkflowId,
    client: workflow?.client ?? client,
    policy,
    events,
    orderFinal:
      (workflow?.orderFinal ?? false) || events.some((e) => finalStatuses.includes(e.event.view.status)),
    backoffMs: workflow?.backoffMs ?? {},
  };
}

const NOT_SENT = 'not sent and not retried';
const REDELIVER = 'redeliver the event to send it';

/**
 * The state of a delivery workflow that stopped before it had settled everything (terminated, timed
 * out, failed, cancelled: Temporal's buttons, not its own code): what it left pending will never be
 * tried again, so it is shown `failed`, saying why and what sends it. Its attempts so far, its
 * deferrals and its ids stay as they were; a redelivery starts a new run from this state.
 */
export function stoppedRunState(state: WebhookDeliveryState, status: string): WebhookDeliveryState {
  const lastError = `${NOT_SENT}: its delivery workflow was ${status.toLowerCase().replace('_', ' ')}; ${REDELIVER}`;
  return {
    ...state,
    events: state.events.map((record) => ({
      ...record,
      deliveries: record.deliveries.map((d): EndpointDelivery => {
        if (d.state !== 'pending') return d;
        const { nextAttemptAt: _never, ...rest } = d;
        return { ...rest, state: 'failed', lastError };
      }),
    })),
  };
}
