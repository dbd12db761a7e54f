/**
 * A burst of held orders (issue 25, docs/operators.md "Orders on hold"): a hundred orders held
 * for an empty balance at once, on the real dev server, the account workflow and the sandbox over
 * HTTP. The account finds them by visibility and lets them go in acceptance order as far as the
 * balance covers them; its history grows by its rounds, not by the orders held (before patch
 * account-lists-held each hold was a signal in and each resumption a signal out). One held order is
 * cancelled and one terminated meanwhile: neither is sent, and the account stops counting them.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { temporal as proto } from '@temporalio/proto';
import { SandboxAdmin } from '../../src/sandbox/admin-client';
import { accountWorkflowId } from '../../contract/account';
import { orderWorkflowId } from '../../contract/order';
import type { OrderView } from '../../src/orders/order.service';
import { ADMIN_TOKEN, mobileRequest, scaledTimings } from '../helpers/orders';
import { clientsWith, eventually } from '../helpers/webhooks';
import { startOrderStack, type OrderStack } from '../helpers/stack';

const KEY = 'test-key-held-burst';
const CLIENT = 'burst';
const ORDERS = 100;
/** The orders the first top-up covers (500 DZD each at most; the sandbox debits 490). */
const COVERED = 20;
const ACCOUNT_CHECK_MS = 500;
const EventType = proto.api.enums.v1.EventType;

interface Ready {
  account?: { held?: { balance: number; operator: number } };
}

describe('a burst of orders held for the balance', { timeout: 600_000 }, () => {
  let stack: OrderStack<'orders'>;
  let admin: SandboxAdmin;

  before(async () => {
    stack = await startOrderStack({
      name: 'held-burst',
      workers: { orders: { account: { checkMs: ACCOUNT_CHECK_MS } } },
      api: { timingsFor: () => scaledTimings({ deadlineMs: 120_000 }) },
      webhooks: {
        clients: clientsWith({ [CLIENT]: { key: KEY, webhooks: [] } }),
      },
    });
    admin = new SandboxAdmin(stack.sandbox.url, ADMIN_TOKEN);
  });
  after(async () => {
    await admin?.settings({ balance: 1_000_000 });
    await stack?.stop();
  });

  const call = <T>(method: string, path: string, body?: unknown) =>
    stack.api.request<T>(method, path, { body, apiKey: KEY });
  const viewOf = async (ref: string) => (await call<OrderView>('GET', `/v1/orders/${ref}`)).body;
  const heldOnQueue = () =>
    stack.client.workflow
      .count(
        `OrderStatus = 'HELD' AND ExecutionStatus = 'Running' AND TaskQueue = '${stack.taskQueues.orders}'`,
      )
      .then((c) => c.count);

  it(`${ORDERS} held at once resume in acceptance order as the balance covers them; the account's history does not grow with them; a cancelled and a terminated one are never sent`, async () => {
    await admin.settings({ balance: 0 });
    const refs: string[] = [];
    // One after the other: each its own acceptance time, the line the account must keep.
    for (let i = 0; i < ORDERS; i++) {
      const ref = `BURST-${String(i).padStart(3, '0')}-${randomUUID().slice(0, 8)}`;
      const res = await call('POST', '/v1/orders', mobileRequest(ref));
      assert.equal(res.status, 201, res.text);
      refs.push(ref);
    }
    await eventually(heldOnQueue, (n) => n === ORDERS, `all ${ORDERS} HELD`, 180_000);
    const account = stack.client.workflow.getHandle(accountWorkflowId(stack.taskQueues.orders));
    const views: OrderView[] = [];
    // One at a time: the API limits each client's rate.
    for (const ref of refs)
      views.push(
        await eventually(
          () => viewOf(ref),
          (v) => v.status === 'HELD',
          ref,
        ),
      );
    const sendsOf = (ref: string) => stack.sandbox.sendsOf(views[refs.indexOf(ref)]!.providerRef!);
    assert.deepEqual(
      views.map((v) => v.acceptedAt),
      [...views.map((v) => v.acceptedAt)].sort(),
      'accepted in the order submitted',
    );

    // Two of the line's tail leave it by Temporal's own buttons while held.
    const [cancelled, terminated] = [refs[ORDERS - 2]!, refs[ORDERS - 1]!];
    await stack.client.workflow.getHandle(orderWorkflowId(cancelled, CLIENT)).cancel();
    await stack.client.workflow.getHandle(orderWorkflowId(terminated, CLIENT)).terminate('test: held');
    await eventually(
      () => stack.api.request<Ready>('GET', '/readyz', { apiKey: null }),
      (r) => r.body?.account?.held?.balance === ORDERS - 2,
      `/readyz counts ${ORDERS - 2} held for the balance`,
      60_000,
    );

    // Enough for COVERED orders: exactly the first COVERED in acceptance order are sent.
    await admin.settings({ balance: COVERED * 500 });
    await eventually(heldOnQueue, (n) => n === ORDERS - 2 - COVERED, `${COVERED} let go`, 120_000);
    await sleep(6 * ACCOUNT_CHECK_MS);
    assert.equal(await heldOnQueue(), ORDERS - 2 - COVERED, 'the line stops where the balance does');
    const sentNow = await Promise.all(refs.map(async (ref) => (await sendsOf(ref)).accepted));
    assert.deepEqual(
      sentNow,
      refs.map((_, i) => (i < COVERED ? 1 : 0)),
      'the first orders accepted are the ones sent',
    );

    const toppedUp = Date.now();
    await admin.settings({ balance: 1_000_000 });
    const done: OrderView[] = [];
    for (const ref of refs.slice(0, ORDERS - 2)) {
      done.push(
        await eventually(
          () => viewOf(ref),
          (v) => v.status === 'FULFILLED',
          `${ref} FULFILLED`,
          180_000,
        ),
      );
    }
    const lastResumed = Math.max(...done.slice(COVERED).map((v) => Date.parse(v.hold!.resumedAt!)));
    console.log(
      `# the last of ${ORDERS - 2 - COVERED} held orders resumed ${lastResumed - toppedUp} ms after the top-up`,
    );
    for (const ref of refs.slice(0, ORDERS - 2)) {
      assert.equal((await sendsOf(ref)).accepted, 1, `${ref} sent once`);
    }
    assert.equal((await viewOf(cancelled)).status, 'CANCELLED');
    for (const ref of [cancelled, terminated]) {
      assert.equal((await sendsOf(ref)).attempts, 0, `${ref} never sent`);
    }

    // The account's history: a few events per round, no event per order held or resumed.
    const events = (await account.fetchHistory()).events ?? [];
    const count = (type: keyof typeof EventType) =>
      events.filter((e) => e.eventType === EventType[type]).length;
    const signals =
      count('EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED') +
      count('EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED');
    const rounds = count('EVENT_TYPE_ACTIVITY_TASK_SCHEDULED');
    console.log(`# account workflow: ${events.length} events, ${rounds} rounds, ${signals} signals`);
    assert.equal(signals, 0, `the account workflow saw ${signals} signals in or out`);
    assert.ok(events.length <= 12 * (rounds + 1), `${events.length} events for ${rounds} rounds`);
  });
});
