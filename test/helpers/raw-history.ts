/**
 * A workflow's history exactly as Temporal Server stores it (no data converter applied), and its
 * payloads in the JSON form the remote codec protocol (/encode, /decode) speaks: for tests that
 * prove secrets are stored only encrypted and that an operator's codec endpoint can reveal them.
 */
import type { Payload } from '@temporalio/common';
import type { WorkflowService } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

export type RawPayload = temporal.api.common.v1.IPayload;
export interface JsonPayload {
  metadata: Record<string, string>;
  data: string;
}

/** Every Payload message anywhere in a raw history. */
export function payloadsIn(value: unknown, found: RawPayload[] = []): RawPayload[] {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return found;
  if (Array.isArray(value)) {
    for (const item of value) payloadsIn(item, found);
    return found;
  }
  const record = value as Record<string, unknown>;
  const metadata = record.metadata as Record<string, unknown> | undefined;
  if (metadata?.encoding instanceof Uint8Array) found.push(record as RawPayload);
  else for (const field of Object.values(record)) payloadsIn(field, found);
  return found;
}

/** The raw history's bytes and payloads. */
export async function rawHistory(
  service: WorkflowService,
  namespace: string,
  workflowId: string,
): Promise<{ bytes: Buffer; payloads: RawPayload[]; eventCount: number }> {
  const { history } = await service.getWorkflowExecutionHistory({ namespace, execution: { workflowId } });
  const events = history?.events ?? [];
  const bytes = Buffer.from(temporal.api.history.v1.History.encode(history ?? {}).finish());
  return { bytes, payloads: payloadsIn(events), eventCount: events.length };
}

export function toJsonPayload(payload: Payload | RawPayload): JsonPayload {
  const metadata = Object.entries(payload.metadata ?? {}).map(([k, v]) => [
    k,
    Buffer.from(v).toString('base64'),
  ]);
  return { metadata: Object.fromEntries(metadata), data: Buffer.from(payload.data ?? []).toString('base64') };
}
