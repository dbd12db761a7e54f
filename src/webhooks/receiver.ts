/**
 * A small webhook receiver: it verifies each delivery's signature with the client library's
 * verifier (clients/typescript/src/webhooks.ts, as a back office using the library would), keeps
 * what it got, and answers as told. The dev stack runs it (`npm run webhook-receiver`,
 * receiver-main.ts), so every `npm start` exercises the verifier and the README walk-through shows
 * an event arriving; the tests run it as the real receiver they deliver to. The signatures
 * themselves are made by the `standardwebhooks` library (src/webhooks/sender.ts): a delivery
 * verified here is checked across two implementations.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  WebhookReplayError,
  WebhookVerificationError,
  WebhookVerifier,
} from '../../clients/typescript/src/webhooks';
import type { WebhookMessage } from './message';

/** A body larger than this is refused (413): events are a few kilobytes. */
const MAX_BODY_BYTES = 1024 * 1024;

export interface ReceivedWebhook {
  /** The `webhook-id` header. */
  id: string;
  /** The body as verified and parsed; undefined if the signature did not verify. */
  message?: WebhookMessage;
  verified: boolean;
  /** Why verification failed (the library's message). */
  verificationError?: string;
  /** The `webhook-timestamp` header, in epoch seconds. */
  signedAt: number;
  /** The `webhook-signature` header. */
  signature: string;
  receivedAt: number;
  /** Deliveries of this id received so far, this one included. */
  seen: number;
  /** A verified delivery of an id already taken within the tolerance window (`rejectReplays`). */
  replay?: boolean;
  rawBody: string;
  path: string;
}

/** How to answer one delivery: a status, after an optional delay. */
export interface ReceiverAnswer {
  status: number;
  delayMs?: number;
}

export interface ReceiverOptions {
  /** 0 = a free port. */
  port?: number;
  host?: string;
  /** The endpoint's secrets (`whsec_…`): a delivery verifies if one of them matches. */
  secrets: readonly string[];
  /** Decides the answer; default 204 for a verified delivery, 400 for one that did not verify. */
  answer?: (delivery: ReceivedWebhook) => ReceiverAnswer;
  /** Called for each delivery once it is verified (or not), before the answer. */
  onDelivery?: (delivery: ReceivedWebhook) => void;
  /** Send `Connection: close` on every answer: each delivery then opens a new connection. */
  closeConnections?: boolean;
  /**
   * Refuse replays as a back office would (the verifier's replay store): a second delivery of an id
   * within the tolerance window is marked `replay` and answered 204 without being processed again.
   * Off by default: the tests count every delivery of an id themselves (`seen`).
   */
  rejectReplays?: boolean;
}

export interface RunningReceiver {
  url: string;
  port: number;
  /** Every delivery, in the order received. */
  deliveries: ReceivedWebhook[];
  close(): Promise<void>;
}

function header(headers: IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  return Array.isArray(value) ? (value[0] ?? '') : (value ?? '');
}

/** Verifies one delivery with any of `secrets` (signature and timestamp; no replay check). */
export function verifyDelivery(
  secrets: readonly string[],
  body: string,
  headers: IncomingHttpHeaders,
): { message?: WebhookMessage; error?: string } {
  if (secrets.length === 0) return { error: 'no secret configured' };
  try {
    return {
      message: new WebhookVerifier({ secrets, replays: false }).verifySignature(
        body,
        headers,
      ) as WebhookMessage,
    };
  } catch (err) {
    if (!(err instanceof WebhookVerificationError)) throw err;
    return { error: err.message };
  }
}

export async function startReceiver(options: ReceiverOptions): Promise<RunningReceiver> {
  const deliveries: ReceivedWebhook[] = [];
  const seen = new Map<string, number>();
  const replays =
    options.rejectReplays && options.secrets.length > 0
      ? new WebhookVerifier({ secrets: options.secrets })
      : undefined;
  // Deliveries are taken one after the other, in the order they arrived, whatever the replay
  // store's pace: `deliveries` keeps that order.
  let queue = Promise.resolve<unknown>(undefined);
  const verified = (
    rawBody: string,
    headers: IncomingHttpHeaders,
  ): Promise<{ message?: WebhookMessage; error?: string; replay?: boolean }> => {
    const next = queue.then(async () => {
      if (!replays) return verifyDelivery(options.secrets, rawBody, headers);
      try {
        return { message: (await replays.verify(rawBody, headers)) as WebhookMessage };
      } catch (err) {
        if (err instanceof WebhookReplayError) return { message: err.event as WebhookMessage, replay: true };
        if (err instanceof WebhookVerificationError) return { error: err.message };
        throw err;
      }
    });
    queue = next.catch(() => undefined);
    return next;
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => {
      if (options.closeConnections) res.setHeader('connection', 'close');
      if (req.method !== 'POST') return void res.writeHead(405).end();
      if (size > MAX_BODY_BYTES) return void res.writeHead(413).end();
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const id = header(req.headers, 'webhook-id');
      void verified(rawBody, req.headers).then(({ message, error, replay }) => {
        const count = (seen.get(id) ?? 0) + 1;
        seen.set(id, count);
        const delivery: ReceivedWebhook = {
          id,
          ...(message ? { message } : {}),
          verified: message !== undefined,
          ...(error ? { verificationError: error } : {}),
          signedAt: Number(header(req.headers, 'webhook-timestamp')),
          signature: header(req.headers, 'webhook-signature'),
          receivedAt: Date.now(),
          seen: count,
          ...(replay ? { replay } : {}),
          rawBody,
          path: req.url ?? '/',
        };
        deliveries.push(delivery);
        options.onDelivery?.(delivery);
        const answer = options.answer?.(delivery) ?? { status: delivery.verified ? 204 : 400 };
        const send = () => {
          if (!res.destroyed) res.writeHead(answer.status).end();
        };
        if (answer.delayMs) setTimeout(send, answer.delayMs).unref();
        else send();
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host =
    options.host && options.host !== '0.0.0.0' && options.host !== '::' ? options.host : '127.0.0.1';
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    deliveries,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
