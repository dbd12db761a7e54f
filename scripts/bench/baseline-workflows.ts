/**
 * The bench's baseline workflows (workflow code: deterministic, no I/O).
 *
 * - `benchNoopWorkflow` does nothing: starting it is the ceiling for the intake API.
 * - `benchTopupShapeWorkflow` has the shape of a normal top-up (a send, a timer, a check, a timer,
 *   a check) with activities that do nothing: completing it is the ceiling for end to end.
 */
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { BaselineActivities } from './baseline-activities';

const { benchSend, benchCheck } = proxyActivities<BaselineActivities>({ startToCloseTimeout: '1 minute' });

export async function benchNoopWorkflow(): Promise<void> {}

export async function benchTopupShapeWorkflow(
  firstCheckMs: number,
  handlingCheckMs: number,
): Promise<string> {
  await benchSend();
  await sleep(firstCheckMs);
  await benchCheck();
  await sleep(handlingCheckMs);
  return benchCheck();
}
