/**
 * Where an order's webhook deliveries are recorded (docs/integrators.md "Delivery, retries, and what
 * never waits"): an event its announcement delivered itself lives in the order's own history — the
 * `announceOrderEvent` local activity's marker, whose result is the event and its settled
 * deliveries — and whatever was handed off lives in the order's delivery workflow. This reads the
 * first and merges the two into one state, as the routes show it.
 */
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import { finalStatuses } from '../../contract/order';
import {
  webhookDeliveriesQuery,
  webhookDeliveryWorkflowId,
  type AnnounceOutcome,
  type EndpointDelivery,
  type EventDeliveries,
  type WebhookDeliveryState,
} from '../../contract/webhooks';
import { untimed, type Timed } from '../temporal';

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

/** One run's state: queried while it runs, its result once completed, its state when Temporal stopped it. */
async function runState(handle: WorkflowHandle, status: string, timed: Timed): Promise<WebhookDeliveryState> {
  if (status === 'COMPLETED') return await timed(() => handle.result() as Promise<WebhookDeliveryState>);
  // A closed run answers the query too (a worker replays it): its state when it stopped.
  const state = await timed(() => handle.query(webhookDeliveriesQuery));
  return status === 'RUNNING' ? state : stoppedRunState(state, status);
}

/** The order's delivery workflow's latest run (nothing if there is none) and its state. */
export async function latestDeliveryRun(
  client: Client,
  orderWorkflowId: string,
  timed: Timed = untimed,
): Promise<{ runId: string; state: WebhookDeliveryState } | undefined> {
  const handle = client.workflow.getHandle(webhookDeliveryWorkflowId(orderWorkflowId));
  try {
    const description = await timed(() => handle.describe());
    const run = client.workflow.getHandle(handle.workflowId, description.runId, { followRuns: false });
    return { runId: description.runId, state: await runState(run, description.status.name, timed) };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

/**
 * The states of the delivery workflow's runs before `latestRunId`, newest first. A run closes once
 * its order is final and everything is settled; a late event of the order then starts a new run
 * with nothing carried over, and what the earlier runs did stays in them. (A run that continued as
 * new carried its state into the next: only the last of such a chain is read.)
 */
export async function earlierDeliveryRuns(
  client: Client,
  orderWorkflowId: string,
  latestRunId: string,
  timed: Timed = untimed,
): Promise<WebhookDeliveryState[]> {
  const workflowId = webhookDeliveryWorkflowId(orderWorkflowId);
  const query = `WorkflowId = '${workflowId.replace(/'/g, "\\'")}' AND ExecutionStatus != 'ContinuedAsNew'`;
  const runs = await timed(async () => {
    const found: { runId: string; startTime: Date }[] = [];
    for await (const run of client.workflow.list({ query })) {
      if (run.runId !== latestRunId) found.push({ runId: run.runId, startTime: run.startTime });
    }
    return found;
  });
  runs.sort((a, b) => b.startTime.getTime() - a.startTime.getTime());
  return Promise.all(
    runs.map(async ({ runId }) => {
      const handle = client.workflow.getHandle(workflowId, runId, { followRuns: false });
      // The run's own status: the list (visibility) may lag behind it.
      const { status } = await timed(() => handle.describe());
      return runState(handle, status.name, timed);
    }),
  );
}

/**
 * Every event of the order and its deliveries, as the routes show them: those its announcements
 * settled themselves (the order's history) merged with its delivery workflow's. `workflow` is the
 * latest run's own state (what a redelivery carries into a new run, and what a running one knows).
 */
export async function orderDeliveryRecords(
  client: Client,
  orderWorkflowId: string,
  timed: Timed = untimed,
): Promise<{ merged: WebhookDeliveryState | undefined; workflow: WebhookDeliveryState | undefined }> {
  const [outcomes, latest] = await Promise.all([
    timed(() => announcedOutcomes(client, orderWorkflowId)),
    latestDeliveryRun(client, orderWorkflowId, timed),
  ]);
  const workflow = latest?.state;
  // Only when the latest run lacks something handed off are the earlier runs read (a listing).
  const earlier =
    latest && unrecorded(outcomes, workflow).length > 0
      ? await earlierDeliveryRuns(client, orderWorkflowId, latest.runId, timed)
      : [];
  const owner = outcomes[0]?.event?.client ?? workflow?.client ?? '';
  return { merged: mergedState(outcomes, workflow, orderWorkflowId, owner, earlier), workflow };
}

/** The handed-off (event id, endpoint) pairs `workflow` has no record of. */
function unrecorded(
  outcomes: AnnounceOutcome[],
  workflow: WebhookDeliveryState | undefined,
): { id: string; endpoint: string }[] {
  const recorded = new Set(
    (workflow?.events ?? []).flatMap((r) => r.deliveries.map((d) => `${r.event.id} ${d.endpoint}`)),
  );
  return outcomes.flatMap((o) =>
    o.handedOff
      .filter((endpoint) => !recorded.has(`${o.event!.id} ${endpoint}`))
      .map((endpoint) => ({ id: o.event!.id, endpoint })),
  );
}

/**
 * One state from both places. Per event and endpoint the delivery workflow's record wins: it has the
 * endpoint because the direct try failed, or because a redelivery gave it the event since. What was
 * handed off and the latest run lacks comes from the newest of the `earlier` runs that has it.
 */
export function mergedState(
  outcomes: AnnounceOutcome[],
  workflow: WebhookDeliveryState | undefined,
  orderWorkflowId: string,
  client: string,
  earlier: WebhookDeliveryState[] = [],
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
  const inEarlierRun = (id: string, endpoint: string): EndpointDelivery | undefined => {
    for (const run of earlier) {
      const found = run.events
        .find((r) => r.event.id === id)
        ?.deliveries.find((d) => d.endpoint === endpoint);
      if (found) return found;
    }
    return undefined;
  };
  for (const [id, endpoints] of handedOff) {
    const record = records.get(id)!;
    for (const endpoint of endpoints) {
      if (record.deliveries.some((d) => d.endpoint === endpoint)) continue;
      // Handed off, and no run of the delivery workflow still kept has a record of it: none will send it.
      record.deliveries.push(
        inEarlierRun(id, endpoint) ?? {
          endpoint,
          state: 'failed',
          attempts: 0,
          dueSince: record.event.timestamp,
          lastError: `${NOT_SENT}: no run of its delivery workflow has a record of it (the run it went to is past retention, or was stopped before it took the event); ${REDELIVER}`,
        },
      );
    }
    record.deliveries.sort(
      (a, b) => record.event.targets.indexOf(a.endpoint) - record.event.targets.indexOf(b.endpoint),
    );
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
