/** For unit tests of the provider client: the client on undici's MockAgent, no network. */
import { MockAgent } from 'undici';
import { ProviderClient } from '../../src/provider';

/**
 * A ProviderClient at `origin` on undici's MockAgent (no network) with 1 s header and body
 * timeouts; `pool` intercepts its calls. `close()` fails if an interceptor was not used.
 */
export function mockedProvider(
  origin: string,
  apiKey: string,
): { agent: MockAgent; client: ProviderClient; pool: ReturnType<MockAgent['get']>; close(): Promise<void> } {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const pool = agent.get(origin);
  const client = new ProviderClient({
    baseUrl: origin,
    apiKey,
    dispatcher: agent,
    headersTimeoutMs: 1_000,
    bodyTimeoutMs: 1_000,
  });
  return {
    agent,
    client,
    pool,
    async close() {
      agent.assertNoPendingInterceptors();
      await agent.close();
    },
  };
}
