// A back office: submit a top-up, wait for its final webhook, read the order.
import { createServer } from 'node:http';
import { TopupClient, WebhookReplayError, WebhookVerifier, type WebhookEvent } from '../src';

const api = new TopupClient({ baseUrl: process.env.API_URL!, apiKey: process.env.API_KEY! });
const verifier = new WebhookVerifier({ secrets: process.env.WEBHOOK_SECRET!.split(',') });
const ref = `demo-${Date.now()}`;
const FINAL = ['FULFILLED', 'PARTIALLY_FULFILLED', 'REFUNDED', 'FAILED', 'CANCELLED'];
let finalEvent: (event: WebhookEvent) => void;
const final = new Promise<WebhookEvent>((resolve) => (finalEvent = resolve));

// Our endpoint in the clients file: verify the raw body, answer at once, then act on the event.
const server = createServer((req, res) => {
  const body: Buffer[] = [];
  req.on('data', (chunk: Buffer) => body.push(chunk));
  req.on('end', async () => {
    try {
      const event = await verifier.verify(Buffer.concat(body), req.headers);
      res.writeHead(204).end();
      if (event.data.ref === ref && FINAL.includes(event.data.status)) finalEvent(event);
    } catch (err) {
      // A replay is authentic and already handled: 2xx. Anything else was not signed by the service.
      res.writeHead(err instanceof WebhookReplayError ? 204 : 400).end();
    }
  });
});

async function main(): Promise<void> {
  server.listen(Number(process.env.WEBHOOK_PORT ?? 4020));
  // Safe to send again after a timeout: the same ref and body answer the same order.
  const topup = { ref, planCode: 'PREPAID_MOBILIS', msisdn: '0555123456', amount: 500 };
  await api.submit({ type: 'mobile_topup', ...topup });
  const event = await final;
  console.log(`${ref}: webhook ${event.type} #${event.sequence}`);
  const order = await api.getOrder(ref);
  console.log(`${ref} is ${order.status}`, order.result);
  server.close().closeAllConnections();
}
main().catch((err: unknown) => (console.error(err), process.exit(1)));
