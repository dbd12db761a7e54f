/**
 * Submitting the planned orders through the intake API on their schedule, with a bounded number
 * in flight, and reading them back until each is settled (final or in review).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pLimit from 'p-limit';
import type { OrderView } from '../../src/orders/order.service';
import type { IntakeAnswer, IntakeClient } from './intake';
import { conflictingBody, type PlannedOrder } from './orders';

/** Everything the run learned about one planned order. */
export interface OrderRecord {
  planned: PlannedOrder;
  /** The submission's answer (after retries): 201, or 200 when an earlier attempt had already started it. */
  status?: number;
  /** Why the submission got no answer at all. */
  error?: string;
  accepted: boolean;
  /** Problems with the answers themselves (wrong Location, wrong ref, ...). */
  answerProblems: string[];
  /** The deliberate same-body repeat's status and whether it answered the same order. */
  repeat?: { status: number; sameOrder: boolean };
  /** The deliberate different-body submission's status and problem type. */
  conflict?: { status: number; type?: string };
  /** The statuses of the two simultaneous submissions. */
  race?: number[];
  /** The last view read back through GET /v1/orders/{ref}. */
  view?: OrderView;
  /** The last status of that read when it was not 200. */
  readStatus?: number;
  /** When its first submission attempt was made, and when it was accepted (epoch ms). */
  submittedAt?: number;
  acceptedAt?: number;
  /** Resolves once the submission has its answer (repeats wait for it). */
  submitted: Promise<void>;
  markSubmitted: () => void;
}

export function newRecord(planned: PlannedOrder): OrderRecord {
  let markSubmitted!: () => void;
  const submitted = new Promise<void>((resolve) => (markSubmitted = resolve));
  return { planned, accepted: false, answerProblems: [], submitted, markSubmitted };
}

const settledStatuses = new Set(['FULFILLED', 'REFUNDED', 'FAILED', 'NEEDS_REVIEW']);

/**
 * Whether the order has settled and its view was read in full: a view rebuilt from Temporal's
 * records (`live: false`, the query went unanswered while workers were down) lacks what only the
 * workflow knows, such as the review reason, so it is read again.
 */
export function isSettled(record: OrderRecord): boolean {
  return record.view !== undefined && settledStatuses.has(record.view.status) && record.view.live !== false;
}

function viewOf(answer: IntakeAnswer): OrderView | undefined {
  const view = answer.body as Partial<OrderView> | undefined;
  return typeof view === 'object' && view !== null && typeof view.status === 'string'
    ? (view as OrderView)
    : undefined;
}

function problemType(answer: IntakeAnswer): string | undefined {
  const type = (answer.body as { type?: unknown } | undefined)?.type;
  return typeof type === 'string' ? type : undefined;
}

async function submitOriginal(intake: IntakeClient, record: OrderRecord): Promise<void> {
  const { request, race } = record.planned;
  record.submittedAt = Date.now();
  try {
    const answers = await Promise.all(
      race ? [intake.submit(request), intake.submit(request)] : [intake.submit(request)],
    );
    if (race) record.race = answers.map((a) => a.status);
    // With two at once, the one that created the order speaks for it.
    const answer = answers.find((a) => a.status === 201) ?? answers[0]!;
    record.status = answer.status;
    record.accepted = answers.every((a) => a.status === 200 || a.status === 201);
    if (record.accepted) record.acceptedAt = Date.now();
    for (const a of answers) {
      const view = viewOf(a);
      if (a.status === 201 && a.location !== `/v1/orders/${request.ref}`) {
        record.answerProblems.push(`201 with Location ${a.location ?? '(none)'}`);
      }
      if ((a.status === 200 || a.status === 201) && view?.ref !== request.ref) {
        record.answerProblems.push(`${a.status} answered the order ${view?.ref ?? '(none)'}`);
      }
    }
  } catch (err) {
    record.error = err instanceof Error ? err.message : String(err);
  } finally {
    record.markSubmitted();
  }
}

async function submitRepeat(intake: IntakeClient, record: OrderRecord): Promise<void> {
  await record.submitted;
  if (!record.accepted) return;
  const answer = await intake.submit(record.planned.request).catch(() => undefined);
  record.repeat = {
    status: answer?.status ?? 0,
    sameOrder: answer !== undefined && viewOf(answer)?.ref === record.planned.request.ref,
  };
}

async function submitConflict(intake: IntakeClient, record: OrderRecord): Promise<void> {
  await record.submitted;
  if (!record.accepted) return;
  const answer = await intake.submit(conflictingBody(record.planned.request)).catch(() => undefined);
  record.conflict = { status: answer?.status ?? 0, type: answer && problemType(answer) };
}

interface Task {
  atMs: number;
  run: () => Promise<void>;
}

/**
 * Submits each record at `startedAt + atMs` (repeats and conflicts some time after their order),
 * at most `concurrency` at once. Resolves when every submission has its answer.
 */
export async function submitAll(
  intake: IntakeClient,
  records: OrderRecord[],
  options: { concurrency: number; startedAt: number; signal: AbortSignal },
): Promise<void> {
  const tasks: Task[] = records.flatMap((record) => {
    const { atMs, repeatAfterMs, conflictAfterMs } = record.planned;
    const list: Task[] = [{ atMs, run: () => submitOriginal(intake, record) }];
    if (repeatAfterMs !== undefined)
      list.push({ atMs: atMs + repeatAfterMs, run: () => submitRepeat(intake, record) });
    if (conflictAfterMs !== undefined) {
      list.push({ atMs: atMs + conflictAfterMs, run: () => submitConflict(intake, record) });
    }
    return list;
  });
  tasks.sort((a, b) => a.atMs - b.atMs);
  // p-limit starts queued tasks in order, so a slot goes to the next task due.
  const limit = pLimit(options.concurrency);
  await Promise.all(
    tasks.map((task) =>
      limit(async () => {
        const wait = options.startedAt + task.atMs - Date.now();
        if (wait > 0) await sleep(wait, undefined, { signal: options.signal });
        await task.run();
      }),
    ),
  );
}

/**
 * Reads every accepted order back until it is settled or `deadline` passes; returns the ones
 * that are not. `progress` hears how many are left after each round.
 */
export async function settleAll(
  intake: IntakeClient,
  records: OrderRecord[],
  options: { deadline: number; signal: AbortSignal; progress: (left: OrderRecord[]) => void },
): Promise<OrderRecord[]> {
  const limit = pLimit(16);
  const readBack = async (record: OrderRecord) => {
    const answer = await intake.order(record.planned.request.ref, 10_000).catch(() => undefined);
    if (answer?.status === 200) record.view = viewOf(answer);
    else record.readStatus = answer?.status;
  };
  let pending = records.filter((r) => r.accepted && !isSettled(r));
  while (pending.length > 0 && Date.now() < options.deadline) {
    await Promise.all(pending.map((record) => limit(readBack, record)));
    pending = pending.filter((r) => !isSettled(r));
    options.progress(pending);
    if (pending.length > 0) await sleep(1_000, undefined, { signal: options.signal });
  }
  return pending;
}
