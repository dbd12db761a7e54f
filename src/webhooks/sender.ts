/**
 * One HTTP POST of a webhook: through an undici Agent whose connector checks every address
 * (address-guard.ts), within one deadline for the whole attempt, following no redirect (undici
 * never follows one unless told to; a 3xx is a failed attempt), reading at most a little of the
 * receiver's answer and never keeping it. The result says what happened in words fit for the
 * order's delivery state: a status, a timeout, a refused address — never a body.
 */
import { Agent, request } from 'undici';
import type { DeliveryOutcome } from '../../contract/webhooks';
import { type AddressPolicy, AddressRefusedError, guardedConnector, type LookupAll } from './address-guard';

/** A receiver only has to say 2xx; whatever else it sends is read up to this much, then dropped. */
const MAX_ANSWER_BYTES = 64 * 1024;

export interface WebhookSenderOptions {
  /** The whole attempt: connect, send, and the answer's headers and body. */
  timeoutMs: number;
  policy: AddressPolicy;
  /** Host name resolution (default: the system's); tests answer for names of their own. */
  lookup?: LookupAll;
  /**
   * Connections per origin (default 16). At least the attempts one endpoint may have in flight:
   * an attempt waiting for a connection spends its timeout waiting.
   */
  connections?: number;
}

export class WebhookSender {
  readonly #agent: Agent;
  readonly #timeoutMs: number;

  constructor(options: WebhookSenderOptions) {
    this.#timeoutMs = options.timeoutMs;
    this.#agent = new Agent({
      connect: guardedConnector(options.policy, {
        connectTimeoutMs: options.timeoutMs,
        lookup: options.lookup,
      }),
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connections: options.connections ?? 16,
    });
  }

  async post(url: string, body: string, headers: Record<string, string>): Promise<DeliveryOutcome> {
    try {
      const answer = await request(url, {
        method: 'POST',
        dispatcher: this.#agent,
        headers: {
          ...headers,
          'content-type': 'application/json',
          'user-agent': 'topup-fulfillment-webhooks/1',
        },
        body,
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      await answer.body.dump({ limit: MAX_ANSWER_BYTES }).catch(() => undefined);
      const status = answer.statusCode;
      if (status >= 200 && status < 300) return { outcome: 'delivered', status };
      if (status >= 300 && status < 400)
        return { outcome: 'failed', status, error: `HTTP ${status}: redirects are not followed` };
      return { outcome: 'failed', status, error: `HTTP ${status}` };
    } catch (err) {
      return { outcome: 'failed', error: this.#describe(err) };
    }
  }

  #describe(err: unknown): string {
    if (err instanceof AddressRefusedError) return err.message;
    const code = (err as { code?: string } | null)?.code;
    const name = (err as { name?: string } | null)?.name;
    if (
      name === 'TimeoutError' ||
      name === 'AbortError' ||
      code === 'UND_ERR_HEADERS_TIMEOUT' ||
      code === 'UND_ERR_BODY_TIMEOUT'
    )
      return `no answer within ${this.#timeoutMs} ms`;
    const known: Record<string, string> = {
      UND_ERR_CONNECT_TIMEOUT: `could not connect within ${this.#timeoutMs} ms`,
      ECONNREFUSED: 'connection refused',
      ENOTFOUND: 'the host name does not resolve',
      EAI_AGAIN: 'the host name could not be resolved right now',
      ECONNRESET: 'the connection was reset before an answer',
      UND_ERR_SOCKET: 'the connection was closed before an answer',
      EHOSTUNREACH: 'the host is unreachable',
      ENETUNREACH: 'the network is unreachable',
      ERR_TLS_CERT_ALTNAME_INVALID: 'the TLS certificate does not match the host',
      UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'the TLS certificate is not trusted',
      DEPTH_ZERO_SELF_SIGNED_CERT: 'the TLS certificate is self-signed',
      CERT_HAS_EXPIRED: 'the TLS certificate has expired',
    };
    return (code && known[code]) ?? `the request failed (${code ?? name ?? 'unknown error'})`;
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}
