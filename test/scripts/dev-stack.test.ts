/**
 * The README's first command, run as a user would: `npm start` in a terminal, an order submitted to
 * the address it prints with the back-office key it prints (and the operator key tried), then
 * Ctrl-C (SIGINT to the whole process group, as a terminal sends it). Nothing may be left running. The restart test stops the stack while an
 * order is in flight and starts it again on the same data directory: the order finishes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import { freePort } from '../../src/temporal/dev-server';
import { rawHistory, toJsonPayload } from '../helpers/raw-history';
import { providerRefFor } from '../../src/orders/provider-ref';
import { startSandbox } from '../../src/sandbox/server';

const root = resolve(__dirname, '..', '..');
const STARTUP_TIMEOUT_MS = 240_000;

interface RunningStack {
  npm: ChildProcess;
  output: () => string;
  apiUrl: string;
  /** The back office's key, then the operator's: both printed by the banner. */
  apiKey: string;
  operatorKey: string;
  uiUrl: string;
  reviewQueueUrl: string;
  /** The API's, then the worker's. */
  metricsUrls: string[];
  temporalAddress: string;
  codecUrl: string;
  providerUrl: string;
}

async function stackEnv(dataDir: string, extra: NodeJS.ProcessEnv = {}): Promise<NodeJS.ProcessEnv> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // The test runner's own settings must not leak into the stack under test.
  for (const name of [
    'TEMPORAL_ADDRESS',
    'PROVIDER_BASE_URL',
    'PROVIDER_API_KEY',
    'API_KEYS',
    'API_CLIENTS_FILE',
    'TEMPORAL_UI_URL',
    'OTEL_EXPORTER_OTLP_ENDPOINT',
    'NODE_TEST_CONTEXT',
    'SANDBOX_ADMIN_TOKEN',
  ]) {
    delete env[name];
  }
  return {
    ...env,
    DEV_DATA_DIR: dataDir,
    DEV_TEMPORAL_PORT: String(await freePort()),
    DEV_TEMPORAL_UI_PORT: String(await freePort()),
    CODEC_PORT: String(await freePort()),
    SANDBOX_PORT: String(await freePort()),
    PORT: String(await freePort()),
    WEBHOOK_RECEIVER_PORT: String(await freePort()),
    API_METRICS_ADDRESS: `127.0.0.1:${await freePort()}`,
    WORKER_METRICS_ADDRESS: `127.0.0.1:${await freePort()}`,
    // A fast sandbox and polling to match, so an order finishes in about 5 s: slow enough that the
    // first check (the dev server fires timers on a ~1 s tick) finds it HANDLING, so it is PROCESSING.
    SANDBOX_TIME_SCALE: '0.25',
    POLL_FIRST_CHECK_MS: '1250',
    POLL_HANDLING_CHECK_MS: '3750',
    POLL_MAX_INTERVAL_MS: '5000',
    POLL_INTERVAL_MS: '1250',
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

function processTable(): { pid: number; ppid: number; pgid: number; args: string }[] {
  const ps = execFileSync('ps', ['-eo', 'pid=,ppid=,pgid=,args='], { encoding: 'utf8' });
  return ps
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields.length >= 4)
    .map(([pid, ppid, pgid, ...args]) => ({
      pid: Number(pid),
      ppid: Number(ppid),
      pgid: Number(pgid),
      args: args.join(' '),
    }));
}

/** The process groups of npm start and of everything below it (the stack starts each part in a group of its own). */
function stackGroups(pgid: number): Set<number> {
  const table = processTable();
  const groups = new Set([pgid]);
  const pids = new Set(table.filter((p) => p.pgid === pgid).map((p) => p.pid));
  for (let grew = true; grew;) {
    grew = false;
    for (const p of table)
      if (pids.has(p.ppid) && !pids.has(p.pid)) {
        pids.add(p.pid);
        groups.add(p.pgid);
        grew = true;
      }
  }
  return groups;
}

function processesInGroups(groups: Set<number>): string[] {
  return processTable()
    .filter((p) => groups.has(p.pgid))
    .map((p) => p.args);
}

async function startStack(env: NodeJS.ProcessEnv): Promise<RunningStack> {
  // detached: its own process group, like a shell job, so Ctrl-C can be sent to all of it.
  const npm = spawn('npm', ['start', '--silent'], {
    cwd: root,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  npm.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (!output.includes('Ctrl-C stops everything.')) {
    if (npm.exitCode !== null) throw new Error(`npm start exited early:\n${output}`);
    if (Date.now() > deadline) throw new Error(`npm start did not come up:\n${output}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const field = (label: string) => {
    const match = new RegExp(`${label}:\\s+(\\S+)`).exec(output);
    assert.ok(match, `the banner prints "${label}"`);
    return match[1]!;
  };
  return {
    npm,
    output: () => output,
    apiUrl: field('API'),
    apiKey: field('Back-office key'),
    operatorKey: field('Operator key'),
    uiUrl: field('Temporal UI'),
    reviewQueueUrl: field('Review queue'),
    metricsUrls: [...(/Metrics:\s+(\S+) \(API\), (\S+) \(worker\)/.exec(output) ?? [])].slice(1),
    temporalAddress: field('Temporal'),
    codecUrl: field('Codec server'),
    providerUrl: field('Provider'),
  };
}

/** Ctrl-C, then wait for npm start to end and check that nothing of the stack is left. */
async function stopStack(stack: RunningStack): Promise<void> {
  const pgid = stack.npm.pid!;
  const groups = stackGroups(pgid);
  const exited = new Promise<number | null>((done) => stack.npm.once('exit', (code) => done(code)));
  process.kill(-pgid, 'SIGINT');
  const code = await Promise.race([
    exited,
    new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 60_000)),
  ]);
  // Give the group's last members a moment to be reaped before looking.
  for (let i = 0; i < 20 && processesInGroups(groups).length > 0; i++)
    await new Promise((r) => setTimeout(r, 250));
  const leftovers = processesInGroups(groups);
  for (const group of leftovers.length > 0 ? groups : []) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  assert.notEqual(code, 'timeout', `npm start stops on Ctrl-C:\n${stack.output()}`);
  // Ctrl-C reaches every process of the group, and npm start forwards it to the stack once more:
  // the stack must outlive both until it has stopped each part, not leave a slow one behind.
  assert.match(stack.output(), /\[stack\] stopped/, 'the stack itself saw its parts stop');
  assert.deepEqual(leftovers, [], 'nothing is left running after Ctrl-C');
}

async function api(stack: RunningStack, path: string, body?: unknown, key = stack.apiKey) {
  const response = await fetch(`${stack.apiUrl}${path}`, {
    method: body ? 'POST' : 'GET',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  return {
    status: response.status,
    body: (await response.json()) as {
      status?: string;
      temporalUiUrl?: string;
      result?: { cards?: { code: string; serial: string }[] };
    },
  };
}

async function waitForStatus(stack: RunningStack, ref: string, wanted: string[], timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  let last: string | undefined;
  while (Date.now() < deadline) {
    const { status, body } = await api(stack, `/v1/orders/${ref}`);
    last = `${status} ${body.status}`;
    if (status === 200 && wanted.includes(body.status!)) return body;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`order ${ref} did not reach ${wanted.join('/')} (last: ${last})`);
}

describe('the dev stack (npm start)', { timeout: 600_000 }, () => {
  const dataDirs: string[] = [];
  after(() => dataDirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('when started as the README says, serves the printed API with the printed key until Ctrl-C, then leaves nothing running', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'dev-stack-'));
    dataDirs.push(dataDir);
    const stack = await startStack(await stackEnv(dataDir));
    try {
      const ui = await fetch(stack.uiUrl);
      assert.equal(ui.status, 200, 'the printed Temporal UI answers');
      await ui.body?.cancel();
      const submitted = await api(stack, '/v1/orders', {
        type: 'mobile_topup',
        ref: 'dev-stack-1',
        planCode: 'PREPAID_MOBILIS',
        msisdn: '0555123456',
        amount: 500,
      });
      assert.equal(submitted.status, 201);
      const fulfilled = await waitForStatus(stack, 'dev-stack-1', ['FULFILLED']);

      // The sandbox's admin surface takes the token generated into the data dir, not a constant.
      const faults = (token: string) =>
        fetch(`${stack.providerUrl}/admin/faults`, { headers: { 'x-admin-token': token } });
      assert.equal((await faults('dev-admin-token')).status, 403, 'the old constant is refused');
      const tokenFile = join(dataDir, 'sandbox-admin-token');
      assert.match(stack.output(), new RegExp(`Sandbox admin: X-Admin-Token from ${tokenFile}`));
      assert.equal(statSync(tokenFile).mode & 0o777, 0o600, 'readable by its owner only');
      const adminToken = readFileSync(tokenFile, 'utf8').trim();
      assert.ok(adminToken.length >= 40 && adminToken !== 'dev-admin-token');
      assert.equal((await faults(adminToken)).status, 200);

      // Links into Temporal UI: the review queue the banner prints, the workflow the view names.
      // The UI answers every route of its app with the app, so the shape is checked as well.
      assert.equal(
        stack.reviewQueueUrl,
        `${stack.uiUrl}/namespaces/default/workflows?query=OrderStatus%3D%22NEEDS_REVIEW%22`,
      );
      assert.equal(new URL(stack.reviewQueueUrl).searchParams.get('query'), 'OrderStatus="NEEDS_REVIEW"');
      assert.equal(fulfilled.temporalUiUrl, `${stack.uiUrl}/namespaces/default/workflows/order-dev-stack-1`);
      for (const link of [stack.reviewQueueUrl, fulfilled.temporalUiUrl!]) {
        const page = await fetch(link);
        assert.equal(page.status, 200, link);
        await page.body?.cancel();
      }

      // The metrics endpoints the banner prints carry the order.
      assert.equal(stack.metricsUrls.length, 2, 'the banner prints the API and worker metrics');
      // The worker's figures reach its endpoint as the workflow's last task completes: poll briefly.
      let apiMetrics = '';
      let workerMetrics = '';
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(250)) {
        [apiMetrics = '', workerMetrics = ''] = await Promise.all(
          stack.metricsUrls.map(async (url) => (await fetch(url)).text()),
        );
        if (/^topup_orders_finished_total/m.test(workerMetrics)) break;
      }
      assert.match(
        apiMetrics,
        /^topup_orders_accepted_total\{order_type="mobile_topup",client="backoffice"\} 1$/m,
      );
      assert.match(workerMetrics, /^topup_orders_finished_total\{.*outcome="FULFILLED".*\} 1$/m);
      assert.match(workerMetrics, /^temporal_workflow_completed_total\{/m, "the SDK's own metrics");

      // The back office's endpoint is the dev receiver: it verified and printed each event.
      for (const [sequence, type, status] of [
        [1, 'order.submitted', 'SUBMITTED'],
        [2, 'order.processing', 'PROCESSING'],
        [3, 'order.fulfilled', 'FULFILLED'],
      ] as const) {
        const line = `[webhook-receiver] ✔ ${type} #${sequence} order dev-stack-1 (backoffice) ${status} — signature verified`;
        for (let deadline = Date.now() + 30_000; !stack.output().includes(line) && Date.now() < deadline;)
          await new Promise((r) => setTimeout(r, 250));
        assert.ok(stack.output().includes(line), `the receiver printed: ${line}\n${stack.output()}`);
      }
      assert.doesNotMatch(stack.output(), /\[webhook-receiver\] ✘/, 'every signature verified');

      // The printed operator key reads the review queue of every client but submits nothing.
      const queue = await api(stack, '/v1/orders?status=NEEDS_REVIEW', undefined, stack.operatorKey);
      assert.equal(queue.status, 200);
      const refused = await api(stack, '/v1/orders', { type: 'gift_card' }, stack.operatorKey);
      assert.equal(refused.status, 403, 'the operator has no orders:write');
      // The clients file in the data directory holds hashes, never the keys it printed.
      const clientsFile = readFileSync(join(dataDir, 'clients.yaml'), 'utf8');
      assert.match(clientsFile, /defaultClient: backoffice/);
      for (const key of [stack.apiKey, stack.operatorKey]) assert.ok(!clientsFile.includes(key));

      // Secrets in Temporal: a finished gift-card order's card codes and serials, and a phone number,
      // are nowhere in the raw history, yet the codec endpoint the UI uses reveals them.
      assert.equal(
        (
          await api(stack, '/v1/orders', {
            type: 'gift_card',
            ref: 'dev-stack-2',
            productId: 'GOOGLE_PLAY',
            typeId: 'GOOGLE_PLAY_1000',
            quantity: 2,
          })
        ).status,
        201,
      );
      const giftCard = await waitForStatus(stack, 'dev-stack-2', ['FULFILLED']);
      const secrets = giftCard.result!.cards!.flatMap((card) => [card.code, card.serial]);
      assert.equal(secrets.length, 4);
      const connection = await Connection.connect({ address: stack.temporalAddress });
      try {
        const mobile = await rawHistory(connection.workflowService, 'default', 'order-dev-stack-1');
        assert.ok(!mobile.bytes.includes('0555123456'), 'the phone number is not in the raw history');
        const raw = await rawHistory(connection.workflowService, 'default', 'order-dev-stack-2');
        for (const secret of secrets)
          assert.ok(!raw.bytes.includes(secret), 'no card code or serial in clear');
        const decoded = await fetch(`${stack.codecUrl}/decode`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-namespace': 'default' },
          body: JSON.stringify({ payloads: raw.payloads.map(toJsonPayload) }),
        });
        assert.equal(decoded.status, 200, await decoded.clone().text());
        const plain = ((await decoded.json()) as { payloads: { data: string }[] }).payloads
          .map((p) => Buffer.from(p.data, 'base64').toString())
          .join('\n');
        for (const secret of secrets)
          assert.ok(plain.includes(secret), 'the codec endpoint decodes the cards');
      } finally {
        await connection.close();
      }
    } finally {
      await stopStack(stack);
    }
  });

  it('when stopped with an order in flight and started again on the same data, the order finishes', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'dev-stack-'));
    dataDirs.push(dataDir);
    // The provider lives outside the stack, as a real one does: it remembers the order across our restart.
    const provider = await startSandbox({ port: 0, timeScale: 0.5, adminToken: 'admin' });
    try {
      const env = await stackEnv(dataDir, {
        PROVIDER_BASE_URL: provider.url,
        PROVIDER_API_KEY: 'sandbox-key',
      });
      const first = await startStack(env);
      try {
        const submitted = await api(first, '/v1/orders', {
          type: 'internet_topup',
          ref: 'dev-stack-restart',
          lineType: 'ADSL',
          number: '021345678',
          value: 1000,
        });
        assert.equal(submitted.status, 201);
        // Sent to the provider, which needs 10 s more at this time scale: in flight.
        await waitForStatus(first, 'dev-stack-restart', ['SUBMITTED', 'PROCESSING'], 60_000);
      } finally {
        await stopStack(first);
      }
      const second = await startStack(env);
      try {
        const order = await waitForStatus(second, 'dev-stack-restart', ['FULFILLED'], 120_000);
        assert.equal(order.status, 'FULFILLED');
      } finally {
        await stopStack(second);
      }
      const sends = (await (
        await fetch(`${provider.url}/admin/sends/${providerRefFor('backoffice', 'dev-stack-restart')}`, {
          headers: { 'x-admin-token': 'admin' },
        })
      ).json()) as { data: { accepted: number } };
      assert.equal(sends.data.accepted, 1, 'the restart did not send the top-up again');
    } finally {
      await provider.close();
    }
  });
});
