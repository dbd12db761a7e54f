/**
 * The verifier against the `standardwebhooks` library's own signing (the service signs with it):
 * what that library signs verifies here, with either secret of a rotation, and what it would
 * refuse is refused here too, with a reason. Real deliveries: client.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import {
  MemoryReplayStore,
  WebhookReplayError,
  WebhookVerificationError,
  WebhookVerifier,
} from '../src/webhooks';

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const body = (id: string) =>
  JSON.stringify({
    id,
    type: 'order.fulfilled',
    timestamp: new Date().toISOString(),
    sequence: 3,
    data: { ref: 'r-1' },
  });

function signed(secrets: string[], id = `evt_${randomBytes(8).toString('hex')}`, at = new Date()) {
  const payload = body(id);
  const signature = secrets.map((s) => new Webhook(s).sign(id, at, payload)).join(' ');
  return {
    payload,
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1_000)),
      'webhook-signature': signature,
    },
  };
}

async function refused(promise: Promise<unknown>, reason: string): Promise<void> {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof WebhookVerificationError, String(err));
    assert.equal(err.reason, reason, err.message);
    return true;
  });
}

describe('WebhookVerifier', () => {
  it('verifies what standardwebhooks signs, from a plain object, Node headers or fetch Headers', async () => {
    const secret = newSecret();
    const { payload, headers } = signed([secret]);
    const event = await new WebhookVerifier({ secrets: secret }).verify(payload, headers);
    assert.equal(event.id, headers['webhook-id']);
    assert.equal(event.type, 'order.fulfilled');
    assert.equal(
      new WebhookVerifier({ secrets: secret }).verifySignature(Buffer.from(payload), new Headers(headers))
        .sequence,
      3,
    );
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    assert.ok(await new WebhookVerifier({ secrets: secret }).verify(payload, upper));
  });

  it('rotation: a delivery signed with the old and the new secret verifies with either, and with both given', async () => {
    const [old, next] = [newSecret(), newSecret()];
    for (const secrets of [[old], [next], [next, old]]) {
      const { payload, headers } = signed([next, old]);
      assert.ok(await new WebhookVerifier({ secrets }).verify(payload, headers));
    }
    const { payload, headers } = signed([old]);
    assert.ok(await new WebhookVerifier({ secrets: [next, old] }).verify(payload, headers));
    await refused(new WebhookVerifier({ secrets: [next] }).verify(payload, headers), 'bad-signature');
  });

  it('refuses a tampered body, a swapped id, missing headers and a timestamp outside the tolerance', async () => {
    const secret = newSecret();
    const verifier = () => new WebhookVerifier({ secrets: secret });
    const { payload, headers } = signed([secret]);
    await refused(verifier().verify(payload.replace('r-1', 'r-2'), headers), 'bad-signature');
    await refused(verifier().verify(payload, { ...headers, 'webhook-id': 'evt_other' }), 'bad-signature');
    await refused(verifier().verify(payload, { ...headers, 'webhook-signature': '' }), 'missing-header');
    await refused(verifier().verify(payload, { ...headers, 'webhook-timestamp': 'soon' }), 'bad-timestamp');
    const old = signed([secret], undefined, new Date(Date.now() - 301_000));
    await refused(verifier().verify(old.payload, old.headers), 'too-old');
    const ahead = signed([secret], undefined, new Date(Date.now() + 301_000));
    await refused(verifier().verify(ahead.payload, ahead.headers), 'too-new');
    const tolerant = new WebhookVerifier({ secrets: secret, toleranceSeconds: 600 });
    assert.ok(await tolerant.verify(old.payload, old.headers));
  });

  it('refuses a replay within the window with the authentic event; forget() lets a retry through; the store drops expired ids', async () => {
    const secret = newSecret();
    let now = Date.now();
    const store = new MemoryReplayStore(() => now);
    const verifier = new WebhookVerifier({ secrets: secret, replays: store, now: () => now });
    const { payload, headers } = signed([secret]);
    await verifier.verify(payload, headers);
    await assert.rejects(verifier.verify(payload, headers), (err) => {
      assert.ok(err instanceof WebhookReplayError);
      assert.equal(err.reason, 'replay');
      assert.equal(err.event.id, headers['webhook-id']);
      return true;
    });
    await verifier.forget(headers['webhook-id']);
    assert.ok(await verifier.verify(payload, headers), 'taken again after forget');
    now += 302_000;
    assert.equal(store.remember('evt_new', now + 1_000), true);
    assert.equal(store.remember(headers['webhook-id'], now + 1_000), true, 'expired: dropped');
    const unchecked = new WebhookVerifier({ secrets: secret, replays: false });
    const again = signed([secret]);
    await unchecked.verify(again.payload, again.headers);
    assert.ok(await unchecked.verify(again.payload, again.headers));
  });
});
