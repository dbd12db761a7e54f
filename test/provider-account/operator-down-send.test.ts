/**
 * A send to an operator /v3/ping reports down (docs/sandbox.md "Keys, the account, timings and scripted outcomes": the
 * sandbox accepts it, debits the account, and settles it REFUNDED with a refund_message, refunding
 * the debit). Our send gate holds such orders (test/provider-account/account-hold.test.ts: never sent
 * while the operator is down); here a worker without the gate — as one whose reading is stale —
 * sends one anyway, and the order must end REFUNDED with the provider's message, sent once, the
 * account whole. Real Temporal, a real worker, the sandbox over HTTP.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SandboxAdmin } from '../../src/sandbox/admin-client';
import { sandboxRefundMessages } from '../../src/sandbox/simulation';
import { ADMIN_TOKEN, mobileRequest, newRef, scaledTimings, startOrder } from '../helpers/orders';
import { startOrderStack, type OrderStack } from '../helpers/stack';

describe('a send that reaches the provider while its operator is down', () => {
  let stack: OrderStack<'ungated'>;
  let admin: SandboxAdmin;

  before(async () => {
    stack = await startOrderStack({ name: 'operator-down', workers: { ungated: {} } });
    admin = new SandboxAdmin(stack.sandbox.url, ADMIN_TOKEN);
  });
  after(async () => {
    await stack?.stop();
  });

  it('ends REFUNDED with the provider’s refund_message, sent once, the debit given back', async () => {
    await admin.operators({ djezzy: 'down' });
    const balanceBefore = (await stack.provider.client.getBalance()).balance;
    const request = mobileRequest(newRef('operator-down'));
    assert.equal(request.planCode, 'PREPAID_DJEZZY', 'an order for the operator that is down');
    const handle = await startOrder(stack.client, stack.taskQueues.ungated, request, {
      timings: scaledTimings(),
    });
    const view = await handle.result();
    assert.equal(view.status, 'REFUNDED', JSON.stringify(view.timeline));
    assert.equal(view.providerStatus, 'REFUNDED');
    assert.equal(view.result?.refundMessage, sandboxRefundMessages.operatorDown);
    assert.equal((await stack.sandbox.sendsOf(request.ref)).accepted, 1, 'sent once');
    assert.equal(
      (await stack.provider.client.getBalance()).balance,
      balanceBefore,
      'the debit was given back',
    );
  });
});
