/**
 * The set-up the account-hold, provider and webhook tests share: a stack with webhooks for one
 * client whose endpoint `main` is a real receiver that checks every signature, and the sandbox's
 * admin surface.
 */
import { randomBytes } from 'node:crypto';
import { SandboxAdmin } from '../../src/sandbox/admin-client';
import { endpointSecret } from '../../src/webhooks/secrets';
import { startReceiver, type ReceiverOptions, type RunningReceiver } from '../../src/webhooks/receiver';
import type { Scope } from '../../src/clients/model';
import { ADMIN_TOKEN } from './orders';
import { startOrderStack, type OrderStack, type StackApiOptions, type StackWebhookOptions } from './stack';
import { clientsWith } from './webhooks';

export interface HookedClientStack {
  stack: OrderStack<'orders'>;
  /** Receives the client's events at /hooks. */
  receiver: RunningReceiver;
  admin: SandboxAdmin;
  stop(): Promise<void>;
}

/**
 * The client `id` with key `key` (and `scopes`, default clientsWith's) on a stack named `name`
 * whose one order worker watches the provider account when `account` is given. The receiver
 * answers as `receiver` says (default: 204 at once) at `endpointPath` (default `/hooks`); the
 * stack's webhook options (policy, direct tries, caps) are `webhooks`.
 */
export async function startHookedClient(options: {
  name: string;
  id: string;
  key: string;
  scopes?: Scope[];
  account?: { checkMs: number };
  timingsFor: NonNullable<StackApiOptions['timingsFor']>;
  receiver?: Pick<ReceiverOptions, 'answer' | 'onDelivery'>;
  endpointPath?: string;
  webhooks?: Omit<StackWebhookOptions, 'clients' | 'signingKey'>;
}): Promise<HookedClientStack> {
  const signingKey = randomBytes(32);
  const receiver = await startReceiver({
    ...options.receiver,
    secrets: [endpointSecret(signingKey, options.id, 'main', 1)],
  });
  const stack = await startOrderStack({
    name: options.name,
    workers: { orders: { ...(options.account && { account: options.account }) } },
    api: { timingsFor: options.timingsFor },
    webhooks: {
      clients: clientsWith({
        [options.id]: {
          key: options.key,
          ...(options.scopes && { scopes: options.scopes }),
          webhooks: [{ id: 'main', url: `${receiver.url}${options.endpointPath ?? '/hooks'}` }],
        },
      }),
      signingKey,
      ...options.webhooks,
    },
  }).catch(async (err: unknown) => {
    await receiver.close();
    throw err;
  });
  return {
    stack,
    receiver,
    admin: new SandboxAdmin(stack.sandbox.url, ADMIN_TOKEN),
    async stop() {
      await stack.stop();
      await receiver.close();
    },
  };
}
