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

export const historiesDir = join(__dirname, '..', 'fixtures', 'histories');

/** Every recorded history, named after its file (the scenario). */
export function recordedHistories(): { name: string; history: History }[] {
  return readdirSync(historiesDir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => ({
      name: basename(file, '.json'),
      history: historyFromJson(JSON.parse(readFileSync(join(historiesDir, file), 'utf8'))),
    }));
}
