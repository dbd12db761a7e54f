/**
 * Workflow histories ⇄ the JSON format of Temporal UI and `temporal workflow show --output json`.
 *
 * Why not the SDK's historyToJSON/historyFromJSON: in this install @temporalio/common and
 * @temporalio/proto each get their own copy of protobufjs 8 (a top-level protobufjs 7 blocks
 * hoisting), and protojson then rejects the proto package's types ("type must be a Type"). Using
 * the protojson of the protobufjs that @temporalio/proto itself loads does the same conversion.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import * as proto from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root';

type History = proto.temporal.api.history.v1.IHistory;

interface MessageType {
  fromObject(object: unknown): unknown;
}
interface ProtoJson {
  toJson(type: MessageType, message: unknown): unknown;
  fromJson(type: MessageType, json: unknown, options: { ignoreUnknownFields: boolean }): History | null;
}

const protoJson = createRequire(require.resolve('@temporalio/proto'))(
  'protobufjs/ext/protojson',
) as ProtoJson;
const historyType = (
  patchProtobufRoot(proto) as unknown as { lookupType(name: string): MessageType }
).lookupType('temporal.api.history.v1.History');

export function historyToJson(history: History): string {
  return JSON.stringify(protoJson.toJson(historyType, historyType.fromObject(history)), null, 2);
}

export function historyFromJson(json: unknown): History {
  const history = protoJson.fromJson(historyType, json, { ignoreUnknownFields: true });
  if (!history) throw new TypeError('not a workflow history');
  return history;
}

/**
 * The order lifecycle whose histories the fixtures hold. Orders are pinned to the worker version
 * that started them, so each lifecycle's histories are replayed only by its own code: a workflow
 * change that alters a history ships as a new version, raises this, and records its own fixtures
 * (test/tools/record-histories.ts --overwrite) into a folder of its own.
 */
export const LIFECYCLE_VERSION = 2;

export const historiesDir = join(__dirname, '..', 'fixtures', 'histories', `lifecycle-${LIFECYCLE_VERSION}`);

/** Every recorded history of LIFECYCLE_VERSION, named after its file (the scenario). */
export function recordedHistories(): { name: string; history: History }[] {
  return readdirSync(historiesDir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => ({
      name: basename(file, '.json'),
      history: historyFromJson(JSON.parse(readFileSync(join(historiesDir, file), 'utf8'))),
    }));
}

interface JsonEvent {
  eventId: string;
  eventTime: string;
  eventType: string;
  [attributes: string]: unknown;
}

/**
 * The same history as if its first workflow task had been completed by a heartbeat (the SDK does
 * so at 80 % of the task timeout while a local activity runs, e.g. on a loaded worker): a
 * completed task with no commands and a new one scheduled and started right after it, before the
 * task that records the send. On replay the SDK reads both as one task, whose history length is
 * that of the second.
 */
export function withFirstTaskHeartbeat(json: { events: JsonEvent[] }): History {
  const [started, scheduled, taskStarted, ...rest] = json.events as [JsonEvent, JsonEvent, JsonEvent];
  const inserted = 3;
  const shift = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(shift);
    if (value === null || typeof value !== 'object') return value;
    return Object.fromEntries(
      Object.entries(value).map(([key, field]) =>
        (key === 'eventId' || key.endsWith('EventId')) && typeof field === 'string' && Number(field) >= 4
          ? [key, String(Number(field) + inserted)]
          : [key, shift(field)],
      ),
    );
  };
  const later = shift(rest) as JsonEvent[];
  const firstCompleted = later[0]?.workflowTaskCompletedEventAttributes as Record<string, string>;
  Object.assign(firstCompleted, { scheduledEventId: '5', startedEventId: '6' });
  const at = taskStarted.eventTime;
  const heartbeat: JsonEvent[] = [
    {
      eventId: '4',
      eventTime: at,
      eventType: 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
      workflowTaskCompletedEventAttributes: { scheduledEventId: '2', startedEventId: '3' },
    },
    { ...scheduled, eventId: '5', eventTime: at },
    {
      ...taskStarted,
      eventId: '6',
      workflowTaskStartedEventAttributes: {
        ...(taskStarted.workflowTaskStartedEventAttributes as object),
        scheduledEventId: '5',
      },
    },
  ];
  return historyFromJson({ events: [started, scheduled, taskStarted, ...heartbeat, ...later] });
}

/** The completions of the order's polling activity (an activity named `poll…`) in `events`, in order. */
export function pollCompletions(
  events: readonly proto.temporal.api.history.v1.IHistoryEvent[],
): proto.temporal.api.history.v1.IActivityTaskCompletedEventAttributes[] {
  const pollIds = new Set(
    events
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name?.startsWith('poll'))
      .map((e) => String(e.eventId)),
  );
  return events.flatMap((e) => {
    const done = e.activityTaskCompletedEventAttributes;
    return done && pollIds.has(String(done.scheduledEventId)) ? [done] : [];
  });
}
