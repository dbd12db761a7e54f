/**
 * The two names an order gets from (client, ref): its workflow ID and the ref sent to the
 * provider. fast-check properties over (client, ref) pairs: each name is injective, within its
 * limits, and the two workflow ID forms (the default client's and everyone else's) never meet.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CLIENT_ID_PATTERN, ClientId } from '../../src/clients/model';
import { OrderRef } from '../../contract/schemas';
import { providerRefFor } from '../../src/orders/provider-ref';
import { Ref } from '../../src/provider/wire';
import { orderWorkflowId, parseOrderWorkflowId } from '../../contract/order';

const RUNS = { numRuns: 2_000 };

/** Client ids as the clients file allows them, edge lengths included. */
const clientId = fc.oneof(
  fc.stringMatching(CLIENT_ID_PATTERN),
  fc.constantFrom('a', 'default', 'shop', 'acme', 'a'.repeat(24), 'z9_9'),
);

/** Refs as the API allows them: dots, dashes and underscores inside, up to 64 characters. */
const orderRef = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/),
  fc.constantFrom('INV-1001', 'a', 'a.b', 'a-b', 'a_b', 'order-x', `X${'-'.repeat(63)}`, 'A'.repeat(64)),
);

/** Pairs that share as much as they can: same client, refs equal but for their last characters. */
const lookAlikePairs: fc.Arbitrary<[[string, string], [string, string]]> = fc
  .tuple(
    clientId,
    fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{40,62}$/),
    fc.constantFrom('1', '2', '.', '-'),
  )
  .map(([client, stem, tail]) => [
    [client, stem],
    [client, `${stem}${tail}`],
  ]);

describe('the generators produce what the schemas accept', () => {
  it('client ids and refs', () => {
    fc.assert(
      fc.property(clientId, orderRef, (client, ref) => {
        assert.ok(ClientId.safeParse(client).success, client);
        assert.ok(OrderRef.safeParse(ref).success, ref);
      }),
      RUNS,
    );
  });
});

describe('providerRefFor(client, ref)', () => {
  it('is within the provider’s limits: 1–64 characters of [A-Za-z0-9._-]', () => {
    fc.assert(
      fc.property(clientId, orderRef, (client, ref) => {
        const sent = providerRefFor(client, ref);
        assert.ok(Ref.safeParse(sent).success, sent);
        assert.match(sent, /^[A-Za-z0-9._-]{1,64}$/);
      }),
      RUNS,
    );
  });

  it('is readable: it starts with the client and as much of the ref as fits, then 96 bits of hash', () => {
    fc.assert(
      fc.property(clientId, orderRef, (client, ref) => {
        const sent = providerRefFor(client, ref);
        const hash = sent.slice(-24);
        const readable = sent.slice(0, -25);
        assert.match(hash, /^[0-9a-f]{24}$/);
        assert.equal(sent.at(-25), '.');
        assert.ok(`${client}.${ref}`.startsWith(readable), `${readable} is a prefix of client.ref`);
        assert.ok(readable.length >= Math.min(`${client}.${ref}`.length, 39), 'as much as fits');
      }),
      RUNS,
    );
  });

  it('is deterministic: the same pair always gives the same ref (a retried send reuses it)', () => {
    fc.assert(
      fc.property(clientId, orderRef, (client, ref) =>
        assert.equal(providerRefFor(client, ref), providerRefFor(client, ref)),
      ),
      RUNS,
    );
  });

  it('is injective over distinct pairs, look-alike refs and swapped boundaries included', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(clientId, orderRef), {
          minLength: 2,
          maxLength: 200,
          selector: ([c, r]) => `${c}\0${r}`,
        }),
        (pairs) => {
          const sent = new Set(pairs.map(([c, r]) => providerRefFor(c, r)));
          assert.equal(sent.size, pairs.length);
        },
      ),
      { numRuns: 200 },
    );
    fc.assert(
      fc.property(lookAlikePairs, ([[c1, r1], [c2, r2]]) => {
        assert.notEqual(providerRefFor(c1, r1), providerRefFor(c2, r2));
      }),
      RUNS,
    );
    // Where the readable parts coincide exactly: client "a" + ref "b_c…" against client "a_b" + ref "c…".
    assert.notEqual(providerRefFor('a', 'b_c'), providerRefFor('a_b', 'c'));
    assert.notEqual(providerRefFor('ab', 'c'), providerRefFor('a', 'bc'));
  });

  it('never equals a ref sent as is by an order from before clients (the derived form has a hash no ref typed by hand matches)', () => {
    fc.assert(
      fc.property(clientId, orderRef, orderRef, (client, ref, legacyRef) => {
        assert.notEqual(providerRefFor(client, ref), ref);
        assert.notEqual(providerRefFor(client, ref), legacyRef);
      }),
      RUNS,
    );
  });
});

describe('orderWorkflowId(ref, client)', () => {
  it('names exactly one (client, ref): parsing gives the pair back, for the default client’s form too', () => {
    fc.assert(
      fc.property(fc.option(clientId, { nil: undefined }), orderRef, (client, ref) => {
        const id = orderWorkflowId(ref, client);
        assert.deepEqual(parseOrderWorkflowId(id), client === undefined ? { ref } : { client, ref });
        assert.ok(id.length <= 'order:'.length + 24 + 1 + 64, 'short (Temporal allows 1,000)');
      }),
      RUNS,
    );
  });

  it('is injective: distinct pairs, and the default form against every client’s form, never share an ID', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.option(clientId, { nil: undefined }), orderRef), {
          minLength: 2,
          maxLength: 200,
          selector: ([c, r]) => `${c ?? '(default)'}\0${r}`,
        }),
        (pairs) => {
          const ids = new Set(pairs.map(([c, r]) => orderWorkflowId(r, c)));
          assert.equal(ids.size, pairs.length);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('keeps `order-<ref>` for the default client, so its orders from before clients are found again', () => {
    assert.equal(orderWorkflowId('INV-1001'), 'order-INV-1001');
    assert.equal(orderWorkflowId('INV-1001', 'acme'), 'order:acme:INV-1001');
  });
});
