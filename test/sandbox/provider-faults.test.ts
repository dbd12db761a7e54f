/**
 * The sandbox's faults that real providers have, each alone, over real HTTP: a send committed
 * after the client gave up (`late_commit`), no atomic ref uniqueness (`uniqueRefs: false`), reads
 * that lag behind commits (`lagging_reads`), the request log, and a state file that survives a
 * restart — even a SIGKILL.
 *
 * timeScale 0.05: PENDING lasts 250 ms, HANDLING until 1 s.
 */
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { freePort } from '../../src/temporal/dev-server';
import { waitForHttp } from '../../scripts/lib/processes';
import { startSandbox, type StartedSandbox } from '../../src/sandbox/server';
import type { RequestRecord, SandboxSettings } from '../../src/sandbox/state';

const ADMIN_TOKEN = 'admin';
const KEY = 'sandbox-key';
const TIME_SCALE = 0.05;

interface Answer {
  status: number;
  body: { success: boolean; data: Record<string, unknown>; error?: { code: string } };
}

let refCounter = 0;
const newRef = (prefix: string) => `${prefix}-${process.pid}-${++refCounter}`;

function client(sandbox: { url: string }) {
  const call = async (
    method: 'GET' | 'POST' | 'PATCH',
    path: string,
    options: { json?: unknown; admin?: boolean; giveUpAfterMs?: number } = {},
  ): Promise<Answer> => {
    const headers: Record<string, string> = options.admin
      ? { 'x-admin-token': ADMIN_TOKEN }
      : { 'x-access-token': KEY };
    if (options.json !== undefined) headers['content-type'] = 'application/json';
    const res = await request(new URL(path, sandbox.url), {
      method,
      headers,
      body: options.json === undefined ? undefined : JSON.stringify(options.json),
      // undici's own timeouts tick coarsely; a signal gives up when told to.
      signal: options.giveUpAfterMs ? AbortSignal.timeout(options.giveUpAfterMs) : undefined,
    });
    return { status: res.statusCode, body: (await res.body.json()) as Answer['body'] };
  };
  const admin = (method: 'GET' | 'POST' | 'PATCH', path: string, json?: unknown) =>
    call(method, path, { json, admin: true });
  return {
    call,
    admin,
    sendMobile: (ref: string, options: { giveUpAfterMs?: number; MSSIDN?: string } = {}) =>
      call('POST', '/v3/mobile/send', {
        json: { plan_code: 'PREPAID_DJEZZY', MSSIDN: options.MSSIDN ?? '0555123456', amount: 500, ref },
        giveUpAfterMs: options.giveUpAfterMs,
      }),
    sendInternet: (ref: string) =>
      call('POST', '/v3/internet/send', { json: { type: 'ADSL', number: '023123456', value: 1000, ref } }),
    placeOrder: (options: { giveUpAfterMs?: number } = {}) =>
      call('POST', '/v3/gift-cards/placeOrder', {
        json: { productId: 'GOOGLE_PLAY', typeId: 'GOOGLE_PLAY_1000', quantity: 2 },
        giveUpAfterMs: options.giveUpAfterMs,
      }),
    checkMobile: (ref: string) => call('GET', `/v3/mobile/check-ref/${ref}`),
    checkInternet: (ref: string) => call('GET', `/v3/internet/check-ref/${ref}`),
    checkOrder: (orderId: string) => call('GET', `/v3/gift-cards/checkOrder/${orderId}`),
    addFault: async (rule: unknown) => {
      const answer = await admin('POST', '/admin/faults', rule);
      assert.equal(answer.status, 201, JSON.stringify(answer.body));
    },
    sends: async (ref: string) => (await admin('GET', `/admin/sends/${ref}`)).body.data,
    report: async () => (await admin('GET', '/admin/sends')).body.data,
    settings: async (changes?: Partial<SandboxSettings>) =>
      (changes ? await admin('PATCH', '/admin/settings', changes) : await admin('GET', '/admin/settings'))
        .body.data as unknown as SandboxSettings,
    requests: async (route: string) =>
      (await admin('GET', `/admin/requests?route=${route}`)).body.data.requests as RequestRecord[],
  };
}

/** The undici error code (e.g. UND_ERR_SOCKET) or error name (TimeoutError) a request failed with, or 'answered'. */
async function transportFailure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'answered';
  } catch (err) {
    const { code, name } = err as { code?: unknown; name?: string };
    return typeof code === 'string' ? code : String(name);
  }
}

describe('sandbox faults of real providers', { timeout: 60_000 }, () => {
  let sandbox: StartedSandbox;
  let api: ReturnType<typeof client>;

  before(async () => {
    sandbox = await startSandbox({ port: 0, timeScale: TIME_SCALE, adminToken: ADMIN_TOKEN });
    api = client(sandbox);
  });
  beforeEach(async () => {
    assert.equal((await api.admin('POST', '/admin/reset')).status, 200);
  });
  after(() => sandbox.close());

  describe('late_commit', () => {
    it('commits a send commitDelayMs after the request although the client gave up; check-ref answers 404 until then', async () => {
      await api.addFault({ kind: 'late_commit', commitDelayMs: 600, times: 1 });
      const ref = newRef('late');
      const sentAt = Date.now();

      assert.equal(await transportFailure(api.sendMobile(ref, { giveUpAfterMs: 100 })), 'TimeoutError');
      assert.equal((await api.checkMobile(ref)).status, 404, 'not committed yet');
      assert.deepEqual(await api.sends(ref), { ref, accepted: 0, attempts: 0 });

      await sleep(Math.max(0, sentAt + 800 - Date.now()));
      const check = await api.checkMobile(ref);
      assert.equal(check.status, 200);
      assert.equal(check.body.data.status, 'PENDING', 'its timeline starts at the commit');
      assert.deepEqual(await api.sends(ref), { ref, accepted: 1, attempts: 1 });
      const [logged] = await api.requests('mobile.send');
      assert.equal(logged?.answered, false, 'the answer had nobody to go to');
    });

    it('answers a client that waits, after the commit', async () => {
      await api.addFault({ kind: 'late_commit', commitDelayMs: 300, routes: ['mobile.send'] });
      const ref = newRef('late-waiting');
      const start = Date.now();

      const sending = api.sendMobile(ref);
      await sleep(100);
      assert.equal((await api.checkMobile(ref)).status, 404);
      const answer = await sending;

      assert.equal(answer.status, 200);
      assert.equal(answer.body.data.topupRef, ref);
      assert.ok(Date.now() - start >= 290);
      assert.equal((await api.checkMobile(ref)).body.data._id, answer.body.data.topupId);
    });

    it('validates at once: a bad body is 400 without waiting and nothing is committed', async () => {
      await api.addFault({ kind: 'late_commit', commitDelayMs: 5_000 });
      const start = Date.now();
      const answer = await api.call('POST', '/v3/mobile/send', { json: { ref: newRef('bad') } });

      assert.equal(answer.status, 400);
      assert.ok(Date.now() - start < 2_000);
    });

    it('with unique refs, the uniqueness check happens at the commit: the later of two late sends answers 403 DUPLICATED_REF', async () => {
      await api.addFault({ kind: 'late_commit', commitDelayMs: 200, times: 2 });
      const ref = newRef('late-twice');
      const answers = await Promise.all([api.sendMobile(ref), sleep(50).then(() => api.sendMobile(ref))]);

      assert.deepEqual(
        answers.map((a) => a.status),
        [200, 403],
      );
      assert.deepEqual(await api.sends(ref), { ref, accepted: 1, attempts: 2 });
    });

    it('on placeOrder, the order is placed after the delay although nobody heard its id', async () => {
      await api.addFault({
        kind: 'late_commit',
        commitDelayMs: 400,
        routes: ['giftcards.placeOrder'],
        times: 1,
      });
      const placed = async () =>
        ((await api.report()) as { giftCardOrders: { placed: number } }).giftCardOrders.placed;

      assert.equal(await transportFailure(api.placeOrder({ giveUpAfterMs: 100 })), 'TimeoutError');
      assert.equal(await placed(), 0);
      await sleep(500);
      assert.equal(await placed(), 1);
    });

    it('targets send routes only: a rule naming a read route is 400', async () => {
      const answer = await api.admin('POST', '/admin/faults', {
        kind: 'late_commit',
        commitDelayMs: 10,
        routes: ['mobile.check'],
      });
      assert.equal(answer.status, 400);
      assert.match(JSON.stringify(answer.body), /routes/);
    });

    it('combines with an after-commit fault: committed late, then the connection is reset', async () => {
      await api.addFault({ kind: 'late_commit', commitDelayMs: 200, times: 1 });
      await api.addFault({ kind: 'drop_after_commit', routes: ['mobile.send'], times: 1 });
      const ref = newRef('late-dropped');

      assert.equal(await transportFailure(api.sendMobile(ref)), 'UND_ERR_SOCKET');
      assert.equal((await api.checkMobile(ref)).status, 200);
    });
  });

  describe('uniqueRefs', () => {
    it('is true by default: a second send of a ref is 403 DUPLICATED_REF', async () => {
      assert.equal((await api.settings()).uniqueRefs, true);
      const ref = newRef('unique');
      await api.sendMobile(ref);
      assert.equal((await api.sendMobile(ref)).status, 403);
    });

    it('false: every send is committed, /admin/sends shows 2 accepted, check-ref answers the first top-up', async () => {
      assert.equal((await api.settings({ uniqueRefs: false })).uniqueRefs, false);
      const ref = newRef('not-unique');
      const first = await api.sendMobile(ref);
      const second = await api.sendMobile(ref, { MSSIDN: '0555000000' });

      assert.equal(first.status, 200);
      assert.equal(second.status, 200);
      assert.notEqual(first.body.data.topupId, second.body.data.topupId);
      assert.deepEqual(await api.sends(ref), { ref, accepted: 2, attempts: 2 });
      const check = (await api.checkMobile(ref)).body.data;
      assert.equal(check._id, first.body.data.topupId);
      assert.equal(check.MSSIDN, '0555123456');
    });

    it('a bad setting is 400 naming it; a reset restores the default', async () => {
      const bad = await api.admin('PATCH', '/admin/settings', { uniqueRefs: 'no', other: 1 });
      assert.equal(bad.status, 400);
      assert.match(JSON.stringify(bad.body), /uniqueRefs/);
      assert.match(JSON.stringify(bad.body), /other/);

      await api.settings({ uniqueRefs: false });
      await api.admin('POST', '/admin/reset');
      assert.equal((await api.settings()).uniqueRefs, true);
    });
  });

  describe('backdateSendsMs', () => {
    const DAY_MS = 24 * 3_600_000;

    it('dates the top-ups sent while it is set that long ago (created_at, a settled status); 0 dates them now again', async () => {
      await api.settings({ backdateSendsMs: 90 * DAY_MS });
      const old = newRef('old');
      const oldInternet = newRef('old-internet');
      const sentAt = Date.now();
      assert.equal((await api.sendMobile(old)).status, 200);
      assert.equal((await api.sendInternet(oldInternet)).status, 200);
      assert.equal((await api.settings({ backdateSendsMs: 0 })).backdateSendsMs, 0);
      const fresh = newRef('fresh');
      assert.equal((await api.sendMobile(fresh)).status, 200);

      for (const check of [
        (await api.checkMobile(old)).body.data,
        (await api.checkInternet(oldInternet)).body.data,
      ]) {
        const agoMs = sentAt - Date.parse(String(check.created_at));
        assert.ok(
          agoMs >= 90 * DAY_MS - 1_000 && agoMs <= 90 * DAY_MS + 5_000,
          `created_at ${String(check.created_at)}`,
        );
        assert.equal(check.status, 'FULFILLED', 'settled long ago');
      }
      const recent = (await api.checkMobile(fresh)).body.data;
      assert.ok(Date.parse(String(recent.created_at)) >= sentAt - 1_000, 'a send after it is dated now');
      assert.deepEqual(await api.sends(old), { ref: old, accepted: 1, attempts: 1 });
    });

    it('is 0 by default; a negative or non-integer value is 400 naming it; a reset restores 0', async () => {
      assert.equal((await api.settings()).backdateSendsMs, 0);
      for (const bad of [-1, 1.5, 'long']) {
        const answer = await api.admin('PATCH', '/admin/settings', { backdateSendsMs: bad });
        assert.equal(answer.status, 400);
        assert.match(JSON.stringify(answer.body), /backdateSendsMs/);
      }
      await api.settings({ backdateSendsMs: DAY_MS });
      await api.admin('POST', '/admin/reset');
      assert.equal((await api.settings()).backdateSendsMs, 0);
    });
  });

  describe('lagging_reads', () => {
    it('check-ref sees a commit only lagMs after it, and its status as it was lagMs ago', async () => {
      await api.addFault({ kind: 'lagging_reads', lagMs: 400, routes: ['mobile.check'] });
      const ref = newRef('lag');
      const sentAt = Date.now();
      assert.equal((await api.sendMobile(ref)).status, 200);

      assert.equal((await api.checkMobile(ref)).status, 404, 'committed, but the read is behind');
      // 500 ms after the send the top-up is HANDLING (from 250 ms); 400 ms ago it was PENDING.
      await sleep(Math.max(0, sentAt + 500 - Date.now()));
      const lagged = await api.checkMobile(ref);
      assert.equal(lagged.status, 200);
      assert.equal(lagged.body.data.status, 'PENDING');
      await api.admin('POST', '/admin/reset');
    });

    it('applies to internet check-ref and checkOrder too, and only to the routes it names', async () => {
      await api.addFault({
        kind: 'lagging_reads',
        lagMs: 2_000,
        routes: ['internet.check', 'giftcards.checkOrder'],
      });
      const ref = newRef('lag-internet');
      await api.sendInternet(ref);
      const orderId = (await api.placeOrder()).body.data.orderId as string;
      const mobileRef = newRef('lag-mobile');
      await api.sendMobile(mobileRef);

      assert.equal((await api.checkInternet(ref)).status, 404);
      assert.equal((await api.checkOrder(orderId)).status, 404);
      assert.equal((await api.checkMobile(mobileRef)).status, 200, 'mobile reads are not lagging');
    });

    it('with probability, some reads lag and others do not (a replica pool)', async () => {
      await api.addFault({ kind: 'lagging_reads', lagMs: 10_000, probability: 0.5 });
      const ref = newRef('lag-some');
      await api.sendMobile(ref);
      const statuses = await Promise.all(Array.from({ length: 40 }, () => api.checkMobile(ref)));
      const found = statuses.filter((a) => a.status === 200).length;

      assert.ok(found > 0 && found < 40, `${found} of 40 found`);
    });

    it('targets read routes only: a rule naming a send route is 400', async () => {
      const answer = await api.admin('POST', '/admin/faults', {
        kind: 'lagging_reads',
        lagMs: 10,
        routes: ['mobile.send'],
      });
      assert.equal(answer.status, 400);
    });
  });

  describe('request log', () => {
    it('lists each request to a route with when it came, when its connection let go and whether it was answered', async () => {
      await api.addFault({ kind: 'hang', routes: ['internet.send'], times: 1 });
      const hung = await transportFailure(
        request(new URL('/v3/internet/send', sandbox.url), {
          method: 'POST',
          headers: { 'x-access-token': KEY, 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'ADSL', number: '023123456', value: 1000, ref: newRef('hung') }),
          headersTimeout: 300,
        }),
      );
      assert.equal(hung, 'UND_ERR_HEADERS_TIMEOUT');
      await api.sendInternet(newRef('answered'));
      await api.sendMobile(newRef('other-route'));

      const [first, second, ...rest] = await api.requests('internet.send');
      assert.deepEqual(rest, []);
      assert.equal(first?.answered, false);
      const openMs = (first?.endedAt ?? Number.NaN) - (first?.receivedAt ?? Number.NaN);
      assert.ok(openMs >= 250 && openMs < 2_000, `the hung request was open ${openMs} ms`);
      assert.equal(second?.answered, true);
      assert.equal(second?.route, 'internet.send');
    });

    it('records the page a list route was asked for', async () => {
      await api.call('GET', '/v3/account/transactions?page=2&pageSize=10');
      await api.call('GET', '/v3/account/transactions');
      const logged = await api.requests('account.transactions');
      assert.deepEqual(
        logged.slice(-2).map((r) => r.page),
        [2, undefined],
      );
    });

    it('an unknown route in the query is 400', async () => {
      assert.equal((await api.admin('GET', '/admin/requests?route=nope')).status, 400);
    });
  });
});

describe('sandbox state file', { timeout: 90_000 }, () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sandbox-state-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a sandbox started on the same file finds every order, counter, card code and setting of the last one', async () => {
    const stateFile = join(dir, 'state.jsonl');
    const first = await startSandbox({ port: 0, timeScale: TIME_SCALE, adminToken: ADMIN_TOKEN, stateFile });
    const before = client(first);
    const [mobileRef, internetRef] = [newRef('kept-mobile'), newRef('kept-internet')];
    await before.sendMobile(mobileRef);
    assert.equal((await before.sendMobile(mobileRef)).status, 403);
    await before.sendInternet(internetRef);
    const orderId = (await before.placeOrder()).body.data.orderId as string;
    await before.settings({ uniqueRefs: false });
    await sleep(1_100); // FULFILLED: card codes are shown
    const internetBefore = (await before.checkInternet(internetRef)).body.data;
    const orderBefore = (await before.checkOrder(orderId)).body.data;
    const reportBefore = await before.report();
    await first.close();

    const second = await startSandbox({ port: 0, timeScale: TIME_SCALE, adminToken: ADMIN_TOKEN, stateFile });
    try {
      const after = client(second);
      assert.deepEqual(await after.report(), reportBefore);
      assert.deepEqual(await after.sends(mobileRef), { ref: mobileRef, accepted: 1, attempts: 2 });
      assert.equal((await after.checkMobile(mobileRef)).body.data.status, 'FULFILLED');
      assert.deepEqual((await after.checkInternet(internetRef)).body.data, internetBefore);
      assert.deepEqual((await after.checkOrder(orderId)).body.data, orderBefore);
      assert.equal((await after.settings()).uniqueRefs, false);
      assert.equal(statSync(stateFile).mode & 0o777, 0o600, 'readable by its owner only');
    } finally {
      await second.close();
    }
  });

  it('a reset empties the file', async () => {
    const stateFile = join(dir, 'state.jsonl');
    const first = await startSandbox({ port: 0, adminToken: ADMIN_TOKEN, stateFile });
    await client(first).sendMobile(newRef('forgotten'));
    await client(first).admin('POST', '/admin/reset');
    await first.close();

    const second = await startSandbox({ port: 0, adminToken: ADMIN_TOKEN, stateFile });
    try {
      assert.deepEqual(await client(second).report(), { refs: {}, giftCardOrders: { placed: 0 } });
    } finally {
      await second.close();
    }
  });

  it('a torn last line (a crash mid-write) is dropped, and what comes after it is kept', async () => {
    const stateFile = join(dir, 'state.jsonl');
    const first = await startSandbox({ port: 0, adminToken: ADMIN_TOKEN, stateFile });
    const kept = newRef('before-tear');
    await client(first).sendMobile(kept);
    await first.close();
    appendFileSync(stateFile, '{"t":"topup","family":"mob');

    const second = await startSandbox({ port: 0, adminToken: ADMIN_TOKEN, stateFile });
    const later = newRef('after-tear');
    await client(second).sendMobile(later);
    await second.close();
    const third = await startSandbox({ port: 0, adminToken: ADMIN_TOKEN, stateFile });
    try {
      assert.equal((await client(third).checkMobile(kept)).status, 200);
      assert.equal((await client(third).checkMobile(later)).status, 200);
      assert.doesNotMatch(readFileSync(stateFile, 'utf8'), /"mob\n/);
    } finally {
      await third.close();
    }
  });

  it('npm run sandbox with SANDBOX_STATE_FILE, SIGKILLed right after answering a send, still has it when started again', async () => {
    const stateFile = join(dir, 'state.jsonl');
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const start = () => {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', resolve(__dirname, '..', '..', 'src', 'sandbox', 'main.ts')],
        {
          env: {
            ...process.env,
            SANDBOX_PORT: String(port),
            SANDBOX_ADMIN_TOKEN: ADMIN_TOKEN,
            SANDBOX_STATE_FILE: stateFile,
            LOG_LEVEL: 'silent',
          },
          stdio: 'ignore',
        },
      );
      return child;
    };
    const ref = newRef('killed');
    const firstChild = start();
    try {
      await waitForHttp(`${url}/v3/validate`, { timeoutMs: 30_000 });
      assert.equal((await client({ url }).sendMobile(ref)).status, 200);
    } finally {
      firstChild.kill('SIGKILL');
      await once(firstChild, 'exit');
    }
    const secondChild = start();
    try {
      await waitForHttp(`${url}/v3/validate`, { timeoutMs: 30_000 });
      assert.equal((await client({ url }).checkMobile(ref)).status, 200);
      assert.deepEqual(await client({ url }).sends(ref), { ref, accepted: 1, attempts: 1 });
    } finally {
      secondChild.kill('SIGKILL');
      await once(secondChild, 'exit');
    }
  });
});
