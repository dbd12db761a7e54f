/**
 * The read path: `GET /v1/orders/{ref}` through the API against a raw `describe` of the same
 * workflows through a Temporal Client (the least a read can cost), measured back to back in the
 * same run — for closed orders (those of the API phase) and open ones (orders parked in
 * NEEDS_REVIEW), with the workers up and with them frozen (SIGSTOP: a worker that does not answer,
 * as a dead one does not). Each measurement reads the orders round-robin, in ABBA order with its
 * baseline so a drift in the machine's load hits both alike.
 */
import { temporal } from '@temporalio/proto';
import { Pool } from 'undici';
import { sandboxSpecialNumbers } from '../../src/provider/wire';
import { orderWorkflowId } from '../../contract/order';
import { waitClosed } from './histories';
import { apiSubmitter, closedLoop, directReader, type LoadResult } from './load';
import type { PhaseUsage } from './proc';
import { orderAt, refPrefix, workflowIdPrefix } from './orders';
import type { RunContext } from './run-normal';
import { ratio, type Summary } from './stats';

export interface ReadMeasurement {
  reads: number;
  ok: number;
  perSecond: number;
  latencyMs: Summary;
  failures: Record<string, number>;
  /** Answers marked `live: false` (rebuilt from Temporal's records). */
  notLive?: number;
  /** CPU ms per read of the API, the Temporal server and the bench (the describes' client). */
  cpuMsPerRead: Record<string, number>;
}

export interface ReadCase {
  name: string;
  orders: number;
  workers: 'up' | 'frozen';
  ours: ReadMeasurement;
  describe: ReadMeasurement;
  /** ours / describe, requests per second. */
  ratio: number;
  /** Frozen workers: the unmeasured reads that found out no worker answers (the first wait for the deadline). */
  discoveryS?: number;
}

export interface ReadReport {
  readsPerCase: number;
  cases: ReadCase[];
  /** Closed orders, workers frozen: single RPCs and the read without HTTP, for attribution. */
  diagnostics: { name: string; measurement: ReadMeasurement }[];
}

const CPU_OF = ['api', 'temporal', 'worker', 'bench'];

const CLOSE_EVENT = temporal.api.enums.v1.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT;

export const ANOTHER_UP = 'closed orders of another client, workers up';
export const ANOTHER_FROZEN = 'closed orders of another client, workers frozen';

/** Orders parked open for the read phase; each type reads the same, so top-ups only. */
const OPEN_ORDERS = 150;

function measurement(load: LoadResult, usage: Record<string, PhaseUsage>, notLive?: number): ReadMeasurement {
  const cpuMsPerRead = Object.fromEntries(
    CPU_OF.filter((name) => usage[name]).map((name) => [
      name,
      (usage[name]!.cpuSeconds * 1000) / Math.max(1, load.ok),
    ]),
  );
  return {
    reads: load.calls.length,
    ok: load.ok,
    perSecond: load.perSecond,
    latencyMs: load.latencyMs,
    failures: load.failures,
    ...(notLive !== undefined ? { notLive } : {}),
    cpuMsPerRead,
  };
}

function pooled(a: ReadMeasurement, b: ReadMeasurement): ReadMeasurement {
  const ok = a.ok + b.ok;
  const seconds = a.ok / a.perSecond + b.ok / b.perSecond;
  const failures = { ...a.failures };
  for (const [k, v] of Object.entries(b.failures)) failures[k] = (failures[k] ?? 0) + v;
  return {
    reads: a.reads + b.reads,
    ok,
    perSecond: ok / seconds,
    // Percentiles of the pooled samples are not recoverable from two summaries: the later half's.
    latencyMs: b.latencyMs,
    failures,
    ...(a.notLive !== undefined ? { notLive: a.notLive + (b.notLive ?? 0) } : {}),
    cpuMsPerRead: Object.fromEntries(
      Object.keys(a.cpuMsPerRead).map((name) => [
        name,
        ((a.cpuMsPerRead[name] ?? 0) * a.ok + (b.cpuMsPerRead[name] ?? 0) * b.ok) / Math.max(1, ok),
      ]),
    ),
  };
}

export async function runReads(ctx: RunContext, closedRefs: string[]): Promise<ReadReport> {
  const { options, stack, client, runId, log, monitor } = ctx;
  const reads = options.reads;
  const pool = new Pool(stack.apiUrl, {
    connections: options.concurrency,
    pipelining: 1,
    headersTimeout: 60_000,
    bodyTimeout: 60_000,
  });
  /** Whose orders a case reads: the default client's (`order-<ref>`) or another's (the ID names it). */
  interface Owner {
    apiKey: string;
    /** Undefined: the default client. */
    clientId?: string;
  }
  const defaultOwner: Owner = { apiKey: stack.apiKey };
  let notLive = 0;
  const getOrder = (owner: Owner) => async (ref: string) => {
    const headers = { authorization: `Bearer ${owner.apiKey}` };
    const response = await pool.request({ method: 'GET', path: `/v1/orders/${ref}`, headers });
    const text = await response.body.text();
    if (response.statusCode !== 200) return `HTTP ${response.statusCode}`;
    if (text.includes('"live":false')) notLive++;
    return 'ok';
  };
  const describe = (owner: Owner) => async (ref: string) => {
    await client.workflow.getHandle(orderWorkflowId(ref, owner.clientId)).describe();
    return 'ok';
  };

  /** ours, describe, describe, ours: half the reads each time, pooled. */
  const measure = async (
    name: string,
    refs: string[],
    workers: 'up' | 'frozen',
    owner = defaultOwner,
  ): Promise<ReadCase> => {
    log(`reads: ${name}, ${reads} GETs and ${reads} describes over ${refs.length} orders…`);
    const half = Math.ceil(reads / 2);
    const get = getOrder(owner);
    const run = async (call: (ref: string) => Promise<string>, offset: number) => {
      notLive = 0;
      const usage = await monitor.phase();
      const load = await closedLoop(half, options.concurrency, (i) =>
        call(refs[(i + offset) % refs.length]!),
      );
      return measurement(load, await usage.stop(), call === get ? notLive : undefined);
    };
    const ours1 = await run(get, 0);
    const describe1 = await run(describe(owner), 0);
    const describe2 = await run(describe(owner), half);
    const ours2 = await run(get, half);
    const ours = pooled(ours1, ours2);
    const baseline = pooled(describe1, describe2);
    const r = ratio(ours.perSecond, baseline.perSecond);
    log(
      `  ours ${ours.perSecond.toFixed(0)}/s, describe ${baseline.perSecond.toFixed(0)}/s: ${r.toFixed(2)}×`,
    );
    return { name, orders: refs.length, workers, ours, describe: baseline, ratio: r };
  };

  /** What each part of a closed read costs on its own: single RPCs, and the read without HTTP. */
  const diagnose = async (refs: string[]) => {
    const namespace = client.options.namespace;
    const history = (ref: string, request: object) =>
      client.workflowService.getWorkflowExecutionHistory({
        namespace,
        execution: { workflowId: orderWorkflowId(ref) },
        ...request,
      });
    const closeEvent = { historyEventFilterType: CLOSE_EVENT, waitNewEvent: false, skipArchival: true };
    const direct = directReader(client, stack);
    const lastEvent = (ref: string) =>
      client.workflowService.getWorkflowExecutionHistoryReverse({
        namespace,
        execution: { workflowId: orderWorkflowId(ref) },
        maximumPageSize: 1,
      });
    const calls: [string, (ref: string) => Promise<unknown>][] = [
      ['RPC: last event (what a closed read asks)', lastEvent],
      ['RPC: close event', (ref) => history(ref, closeEvent)],
      ['RPC: whole history', (ref) => history(ref, {})],
      [
        'RPC: describe, then close event',
        async (ref) => {
          await describe(defaultOwner)(ref);
          await history(ref, closeEvent);
        },
      ],
      ['OrderService.view in-process (no HTTP)', (ref) => direct(ref)],
    ];
    const out: ReadReport['diagnostics'] = [];
    for (const [name, call] of calls) {
      log(`reads: diagnostic ${name}…`);
      const half = Math.ceil(reads / 2);
      const usage = await monitor.phase();
      const load = await closedLoop(half, options.concurrency, async (i) => {
        await call(refs[i % refs.length]!);
        return 'ok';
      });
      out.push({ name, measurement: measurement(load, await usage.stop()) });
    }
    return out;
  };

  const api = apiSubmitter(stack.apiUrl, stack.apiKey, options.concurrency);
  const openPhase = 'readopen';
  const openRefs = Array.from({ length: OPEN_ORDERS }, (_, i) => `${refPrefix(runId, openPhase)}${i}`);
  try {
    // Open orders: top-ups the sandbox answers with an unknown error wait in NEEDS_REVIEW.
    log(`reads: parking ${OPEN_ORDERS} orders in NEEDS_REVIEW…`);
    await closedLoop(OPEN_ORDERS, options.concurrency, (i) =>
      api.submit({
        type: 'mobile_topup',
        ref: openRefs[i]!,
        planCode: 'PREPAID_MOBILIS',
        msisdn: sandboxSpecialNumbers.unknownError,
        amount: 500,
      }),
    );
    await waitClosed(client, workflowIdPrefix(runId, openPhase), OPEN_ORDERS, {
      timeoutS: options.waitTimeoutS,
      assertAlive: () => stack.assertAlive(),
    });

    // Another client's closed orders (its workflow IDs name it), when the stack has one.
    const another = stack.clients?.another;
    const anotherPhase = 'readanother';
    const anotherRefs = another
      ? Array.from({ length: options.orders }, (_, i) => orderAt(runId, anotherPhase, options.mix, i).ref)
      : [];
    const anotherOwner: Owner | undefined = another && { apiKey: another.apiKey, clientId: another.id };
    if (another) {
      log(`reads: ${anotherRefs.length} orders of another client, until they close…`);
      const submitter = apiSubmitter(stack.apiUrl, another.apiKey, options.concurrency);
      try {
        await closedLoop(anotherRefs.length, options.concurrency, (i) =>
          submitter.submit(orderAt(runId, anotherPhase, options.mix, i)),
        );
      } finally {
        await submitter.close();
      }
      await waitClosed(
        client,
        orderWorkflowId(refPrefix(runId, anotherPhase), another.id),
        anotherRefs.length,
        {
          timeoutS: options.waitTimeoutS,
          assertAlive: () => stack.assertAlive(),
        },
      );
    }

    const cases: ReadCase[] = [];
    const diagnostics: ReadReport['diagnostics'] = [];
    cases.push(await measure('closed orders, workers up', closedRefs, 'up'));
    if (anotherOwner) {
      cases.push(await measure(ANOTHER_UP, anotherRefs, 'up', anotherOwner));
    }
    cases.push(await measure('open orders, workers up', openRefs, 'up'));
    stack.freezeWorkers(true);
    try {
      cases.push(await measure('closed orders, workers frozen', closedRefs, 'frozen'));
      if (anotherOwner) {
        cases.push(await measure(ANOTHER_FROZEN, anotherRefs, 'frozen', anotherOwner));
      }
      // The first reads wait for the query deadline before the API stops asking: not measured.
      const t0 = Date.now();
      await closedLoop(options.concurrency, options.concurrency, (i) =>
        getOrder(defaultOwner)(openRefs[i % OPEN_ORDERS]!),
      );
      const discoveryS = (Date.now() - t0) / 1000;
      cases.push({ ...(await measure('open orders, workers frozen', openRefs, 'frozen')), discoveryS });
      diagnostics.push(...(await diagnose(closedRefs)));
    } finally {
      stack.freezeWorkers(false);
    }
    return { readsPerCase: reads, cases, diagnostics };
  } finally {
    await api.close();
    await pool.close();
    await Promise.all(
      openRefs.map((ref) =>
        client.workflow
          .getHandle(orderWorkflowId(ref))
          .terminate('bench done: read phase')
          .catch(() => {}),
      ),
    );
  }
}
