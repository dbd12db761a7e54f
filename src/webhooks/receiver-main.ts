/**
 * `npm run webhook-receiver`: the dev receiver on 127.0.0.1:WEBHOOK_RECEIVER_PORT. It verifies
 * every delivery with the client library's verifier (@topup/client/webhooks) and the secrets in
 * WEBHOOK_RECEIVER_SECRET — signature, timestamp tolerance and replays, as a back office would —
 * prints one line per delivery (type, sequence, order, status, how long after the change it
 * arrived; no personal data) and answers 204 (a replay too: it is authentic, and already taken),
 * or 400 when the signature does not verify.
 */
import { ConfigError, loadConfig } from '../config';
import { startReceiver } from './receiver';

async function main(): Promise<void> {
  const config = loadConfig();
  const secrets = config.WEBHOOK_RECEIVER_SECRET ?? [];
  if (secrets.length === 0) {
    throw new ConfigError(
      'Invalid configuration:\n  WEBHOOK_RECEIVER_SECRET: required (the endpoint’s secret, whsec_…; `npm run clients -- webhook-secret`)',
    );
  }
  const receiver = await startReceiver({
    port: config.WEBHOOK_RECEIVER_PORT,
    secrets,
    rejectReplays: true,
    onDelivery: (delivery) => {
      const { message } = delivery;
      if (!message) {
        process.stdout.write(
          `✘ ${delivery.id || '(no webhook-id)'}: signature NOT verified (${delivery.verificationError})\n`,
        );
        return;
      }
      if (delivery.replay) {
        process.stdout.write(
          `↺ ${message.type} #${message.sequence} order ${message.data.ref}: id ${message.id} already received — a replay or redelivery, not processed again\n`,
        );
        return;
      }
      const lag = delivery.receivedAt - Date.parse(message.timestamp);
      const again = delivery.seen > 1 ? `, delivery ${delivery.seen} of this id` : '';
      process.stdout.write(
        `✔ ${message.type} #${message.sequence} order ${message.data.ref} (${message.data.client}) ` +
          `${message.data.status} — signature verified, ${lag} ms after the change, id ${message.id}${again}\n`,
      );
    },
  });
  process.stdout.write(
    `webhook receiver listening on ${receiver.url} (verifies with ${secrets.length} secret(s))\n`,
  );
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => void receiver.close().then(() => process.exit(0)));
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
