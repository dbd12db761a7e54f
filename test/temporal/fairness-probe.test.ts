/**
 * The worker's fairness probe against real dev servers: the tests' own (fairness on, as every
 * server we start) and one started with fairness off, where keyed tasks are still all served.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Connection } from '@temporalio/client';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import {
  probeFairness,
  readFairnessReport,
  reportFairness,
  startFairnessReports,
} from '../../src/temporal/fairness-probe';
import { useTemporal, type TestTemporal } from '../helpers/temporal';

function recordingLog() {
  const lines: { level: string; message: string }[] = [];
  return {
    lines,
    info: (message: string) => lines.push({ level: 'info', message }),
    warn: (message: string) => lines.push({ level: 'warn', message }),
  };
}

describe('the fairness probe', { timeout: 180_000 }, () => {
  let temporal: TestTemporal;
  let off: DevServer;
  let onConnection: Connection;
  let offConnection: Connection;
  let onClient: Client;
  let offClient: Client;

  before(async () => {
    [temporal, off] = await Promise.all([useTemporal(), startDevServer({ uiPort: false, fairness: false })]);
    onConnection = await Connection.connect({ address: temporal.address });
    offConnection = await Connection.connect({ address: off.address });
    onClient = new Client({ connection: onConnection, namespace: temporal.namespace });
    offClient = new Client({ connection: offConnection, namespace: off.namespace });
  });
  after(async () => {
    await onConnection?.close();
    await offConnection?.close();
    await Promise.allSettled([temporal?.stop(), off?.stop()]);
  });

  it('on our servers (matching.enableFairness on): honoured, the lone keys served early', async () => {
    const log = recordingLog();
    const result = await reportFairness(onClient, 'probe-on', log);
    assert.equal(result?.honoured, true, JSON.stringify(result));
    assert.match(log.lines[0]?.message ?? '', /honours task-queue fairness/);
    assert.equal(log.lines[0]?.level, 'info');
  });

  it('with fairness off: not honoured, said in a warning with what to set; every keyed task is still served', async () => {
    const log = recordingLog();
    const result = await reportFairness(offClient, 'probe-off', log);
    assert.equal(result?.honoured, false, JSON.stringify(result));
    assert.equal(log.lines[0]?.level, 'warn');
    assert.match(
      log.lines[0]?.message ?? '',
      /does not honour task-queue fairness.*matching\.enableFairness=true/,
    );
    // Eight lone tasks, each found among the 40 polled (the slots of missing ones would repeat 40).
    assert.equal(new Set(result?.positions).size, 8, JSON.stringify(result));
  });

  it('leaves nothing running: every probe workflow is terminated', async () => {
    await probeFairness(onClient, { taskQueue: 'probe-cleanup', busyTasks: 4, loneTasks: 2 });
    const running = async () => {
      let count = 0;
      for await (const _ of onClient.workflow.list({
        query: `WorkflowType = "FairnessProbe" AND ExecutionStatus = "Running"`,
      }))
        count++;
      return count;
    };
    // Visibility lags behind (SQL visibility on the cluster tier by a second or two).
    const deadline = Date.now() + 15_000;
    let left = await running();
    while (left > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      left = await running();
    }
    assert.equal(left, 0);
  });

  it('each probe is recorded for the API: its reader finds none before, then the latest answer', async () => {
    assert.equal(await readFairnessReport(offClient, 'probe-report'), undefined);
    const reports = startFairnessReports(offClient, 'probe-report', recordingLog(), { everyMs: 60_000 });
    let report = await readFairnessReport(offClient, 'probe-report');
    const deadline = Date.now() + 60_000;
    while (!report && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      report = await readFairnessReport(offClient, 'probe-report');
    }
    await reports.stop();
    assert.equal(report?.honoured, false, JSON.stringify(report));
    assert.ok(Date.now() - Date.parse(report!.probedAt) < 120_000, report?.probedAt);
    // A later report (another worker, the next hour, a server whose config changed) replaces it.
    const honoured = async () => ({ honoured: true, positions: [1, 2, 3, 4, 5, 6, 7, 8], tasks: 40 });
    await reportFairness(offClient, 'probe-report', recordingLog(), { probe: honoured });
    assert.equal((await readFairnessReport(offClient, 'probe-report'))?.honoured, true);
  });

  it('an unreachable server: a warning, no throw', async () => {
    const log = recordingLog();
    const dead = new Client({ connection: offConnection, namespace: 'no-such-namespace' });
    assert.equal(await reportFairness(dead, 'probe-dead', log), undefined);
    assert.match(log.lines[0]?.message ?? '', /could not probe/);
  });
});
