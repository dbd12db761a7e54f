/**
 * Creating a Schedule of the service, or bringing an existing one up to date: `npm run
 * temporal:setup` (and the worker, for the sweep) call this at every start, so a changed time, zone,
 * interval or task queue reaches a Schedule created by an earlier version.
 */
import { ScheduleAlreadyRunning, type Client, type ScheduleOptions } from '@temporalio/client';

export type ScheduleDefinition = Required<
  Pick<ScheduleOptions, 'scheduleId' | 'spec' | 'action' | 'policies'>
> & {
  /** What the Schedule is for, shown in Temporal UI. */
  purpose: string;
};

/** Creates the Schedule, or updates its spec, action and policies; says which. */
export async function upsertSchedule(
  client: Client,
  { scheduleId, spec, action, policies, purpose }: ScheduleDefinition,
): Promise<'created' | 'updated'> {
  try {
    await client.schedule.create({ scheduleId, spec, action, policies, memo: { purpose } });
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await client.schedule
    .getHandle(scheduleId)
    .update((previous) => ({ ...previous, spec, action, policies: { ...previous.policies, ...policies } }));
  return 'updated';
}
