/**
 * Idle connections from one source against the API's file descriptors (issue 36, finding 3), on
 * the real stack: a Temporal dev server, a worker and the sandbox in this process, and the API as
 * `npm run api` runs it, in a process of its own with an open-file limit of 600 — small, so that a
 * few hundred connections do here what 20,000 did to an API with a limit of 20,000.
 *
 * The attack: from 127.0.0.2, 700 connections opened and left idle, each opened again a second
 * after the API closes it, for as long as another caller's order takes. Without caps the API ran
 * out of descriptors and every other caller's connection failed, /healthz included. Now:
 * connections beyond the per-address cap are answered 429 and closed, the held ones close within
 * a few seconds, another caller (from 127.0.0.1) and both health endpoints answer throughout, and
 * that caller's order is final within 1.5× its time on the idle stack.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { TEST_API_KEY } from '../helpers/api';
import { connectionCap, openFileLimit } from '../../src/api/server';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/temporal/dev-server';
import { freshRequest, startApiProcessStack, type ApiProcessStack } from '../helpers/api-process';

const SCALE = 0.2;
const OPEN_FILES = 600;
const PER_ADDRESS = 64;
const HEADERS_TIMEOUT_MS = 2_000;
/** More than the API's open-file limit: without caps they take every descriptor it has. */
const ATTACK_CONNECTIONS = 700;
const ATTACKER_ADDRESS = '127.0.0.2';
/** Bounds of the attack, whatever happens: it stops by itself. */
const ATTACK_MAX_MS = 40_000;
const ATTACK_MAX_OPENS = 25_000;

/** What the attack saw. */
interface AttackStats {
  opened: number;
  connectFailed: number;
  /** Answered 429 (over the per-address cap), then closed. */
  refused429: number;
  /** Accepted, then closed by the API (408 or silently) after this long idle, ms. */
  idleLifetimesMs: number[];
  /** The most connections open at once that the API had accepted (no answer yet, open 300 ms or more). */
  maxHeld: number;
}

/** Holds `count` idle connections from `localAddress`, each opened again 1 s after it closed, until stopped. */
function idleConnectionAttack(port: number, localAddress: string, count: number) {
  const stats: AttackStats = { opened: 0, connectFailed: 0, refused429: 0, idleLifetimesMs: [], maxHeld: 0 };
  const open = new Map<Socket, { connectedAt?: number; answered: boolean }>();
  let stopping = false;
  const started = Date.now();
  let opens = 0;

  const openOne = () => {
    if (stopping || opens >= ATTACK_MAX_OPENS || Date.now() - started > ATTACK_MAX_MS) return;
    opens++;
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    const state: { connectedAt?: number; answered: boolean; firstBytes: string } = {
      answered: false,
      firstBytes: '',
    };
    open.set(socket, state);
    socket.on('connect', () => {
      state.connectedAt = Date.now();
      stats.opened++;
    });
    socket.on('data', (chunk: Buffer) => {
      if (!state.answered) state.firstBytes = chunk.toString('latin1', 0, 16);
      state.answered = true;
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      open.delete(socket);
      if (stopping) return;
      if (state.connectedAt === undefined) stats.connectFailed++;
      else if (state.firstBytes.startsWith('HTTP/1.1 429')) stats.refused429++;
      else stats.idleLifetimesMs.push(Date.now() - state.connectedAt);
      setTimeout(openOne, 1_000).unref();
    });
  };
  for (let i = 0; i < count; i++) openOne();
  const sampler = setInterval(() => {
    const now = Date.now();
    let held = 0;
    for (const state of open.values()) {
      if (state.connectedAt !== undefined && !state.answered && now - state.connectedAt >= 300) held++;
    }
    stats.maxHeld = Math.max(stats.maxHeld, held);
  }, 100);
  return {
    stats,
    stop() {
      stopping = true;
      clearInterval(sampler);
      for (const socket of open.keys()) socket.destroy();
    },
  };
}

describe(
  'idle connections from one address cannot take the API from everyone else',
  { timeout: 300_000 },
  () => {
    let target: ApiProcessStack;
    let healthUrl: string;
    const orderFinal = () => target.orderFinal();

    before(async () => {
      const healthPort = await freePort();
      healthUrl = `http://127.0.0.1:${healthPort}`;
      target = await startApiProcessStack({
        name: 'conn-flood',
        refPrefix: 'FLOOD',
        scale: SCALE,
        openFiles: OPEN_FILES,
        env: {
          PROVIDER_POOL_CONNECTIONS: '16',
          API_HEALTH_ADDRESS: `127.0.0.1:${healthPort}`,
          API_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
          API_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
        },
      });
    });
    after(() => target?.stop());

    const bearer = { authorization: `Bearer ${TEST_API_KEY}` };

    it(`${ATTACK_CONNECTIONS} idle connections from one address: over the cap refused, the rest closed within seconds; another caller and the health endpoints answer; its order stays within 1.5× its idle final`, async () => {
      const { api } = target;
      const idleMs = await orderFinal();
      const attack = idleConnectionAttack(api.port, ATTACKER_ADDRESS, ATTACK_CONNECTIONS);
      try {
        // Every attacking connection is open, accepted or refused, by then.
        await sleep(1_500);
        const answers: string[] = [];
        const ask = async (what: string, url: string, headers: Record<string, string> = {}) => {
          const answer = await freshRequest(url, { headers }).then(
            (res) => `${res.status}`,
            (err: Error) => err.message,
          );
          answers.push(`${what}: ${answer}`);
          return answer;
        };
        // Its failure is reported with the other answers, after the attack's figures.
        const underAttack = orderFinal().catch((err: unknown) =>
          err instanceof Error ? err : new Error(String(err)),
        );
        for (let round = 0; round < 5; round++) {
          await ask('another caller GET /v1/orders', `${api.url}/v1/orders?pageSize=1`, bearer);
          await ask('API port /healthz', `${api.url}/healthz`);
          await ask('health listener /healthz', `${healthUrl}/healthz`);
          await ask('health listener /readyz', `${healthUrl}/readyz`);
          await sleep(500);
        }
        const attackResult = await underAttack;
        attack.stop();
        const attackMs = typeof attackResult === 'number' ? attackResult : Number.NaN;
        if (typeof attackResult !== 'number')
          answers.push(`the order under the attack: ${attackResult.message}`);
        const { stats } = attack;
        const lifetimes = stats.idleLifetimesMs;
        console.log(
          `attack: ${stats.opened} opened, ${stats.refused429} answered 429, ${lifetimes.length} closed idle ` +
            `(longest ${Math.max(0, ...lifetimes)} ms), ${stats.connectFailed} failed to connect, at most ` +
            `${stats.maxHeld} held at once; order final in ${idleMs} ms idle, ${attackMs} ms under the attack; ` +
            `other caller: ${JSON.stringify(tally(answers))}`,
        );

        assert.deepEqual(
          answers.filter((a) => !a.endsWith(': 200')),
          [],
          `other callers' answers during the attack; the API's last lines:\n${api.output.slice(-10).join('\n')}`,
        );
        assert.ok(
          stats.maxHeld <= PER_ADDRESS,
          `${stats.maxHeld} connections of one address held at once, above the cap of ${PER_ADDRESS}`,
        );
        assert.ok(
          stats.refused429 >= ATTACK_CONNECTIONS - PER_ADDRESS,
          `${stats.refused429} connections beyond the cap answered 429`,
        );
        assert.ok(lifetimes.length >= PER_ADDRESS, `${lifetimes.length} idle connections closed by the API`);
        // The headers timeout, one check interval, and room for a loaded machine.
        assert.ok(
          Math.max(...lifetimes) <= HEADERS_TIMEOUT_MS + 4_000,
          `an idle connection was held ${Math.max(...lifetimes)} ms`,
        );
        assert.ok(
          attackMs <= 1.5 * idleMs,
          `the order took ${attackMs} ms under the attack, ${idleMs} ms idle`,
        );
      } finally {
        attack.stop();
      }
    });
  },
);

describe('the total connection cap', () => {
  it('stays below the open-file limit, leaving 256 + the provider pool + the health listener + both refusal headrooms', () => {
    const config = { API_MAX_CONNECTIONS: 4_096, PROVIDER_POOL_CONNECTIONS: 100 };
    assert.deepEqual(connectionCap(config, 1_024), {
      total: 476,
      lowered: { fileLimit: 1_024, reserved: 548 },
    });
    assert.deepEqual(connectionCap(config, 20_000), { total: 4_096 });
    assert.deepEqual(connectionCap(config, undefined), { total: 4_096 });
    assert.equal(connectionCap(config, 100).total, 1);
  });

  it('reads the soft open-file limit as Linux shows it', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'limits-')), 'limits');
    writeFileSync(
      file,
      'Limit                     Soft Limit           Hard Limit           Units     \n' +
        'Max open files            600                  1048576              files     \n',
    );
    assert.equal(openFileLimit(file), 600);
    assert.equal(openFileLimit(join(tmpdir(), `no-such-${randomUUID()}`)), undefined);
    assert.ok((openFileLimit() ?? 1) > 0);
  });
});

function tally(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
