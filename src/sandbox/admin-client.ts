/**
 * A client of the sandbox's admin surface (docs/contributors.md "Provider sandbox"), for the tools that drive
 * it from outside: the chaos run's fault schedule and the bench's send counts and latency rule.
 */
import type { OperatorName } from '../provider';
import type { FaultRule, FaultSpecInput, RouteName } from './faults';
import type { OrderTimeline, PlacedGiftCardOrder, RequestRecord, SandboxSettings, SendReport } from './state';

/** The routes orders use; `validate` and the catalog only matter to readiness. */
export const orderRoutes: readonly RouteName[] = [
  'mobile.send',
  'mobile.check',
  'internet.send',
  'internet.check',
  'giftcards.placeOrder',
  'giftcards.checkOrder',
];

export class SandboxAdmin {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
    /** Send reports of a long run hold every ref, so callers that read them may allow longer. */
    private readonly timeoutMs = 10_000,
  ) {}

  async #call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: { 'x-admin-token': this.token, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const text = await response.text();
    // Status first: a proxy's error page is not JSON, and "HTTP 502" says more than a parse error.
    if (!response.ok)
      throw new Error(`sandbox admin ${method} ${path}: HTTP ${response.status} ${text.slice(0, 500)}`);
    return (JSON.parse(text) as { data: T }).data;
  }

  add(rule: FaultSpecInput): Promise<{ id: string }> {
    return this.#call('POST', '/admin/faults', rule);
  }
  async rules(): Promise<readonly FaultRule[]> {
    return (await this.#call<{ faults: FaultRule[] }>('GET', '/admin/faults')).faults;
  }
  clear(): Promise<{ removed: number }> {
    return this.#call('DELETE', '/admin/faults');
  }
  /** Every gift-card order the sandbox committed, with the caller's X-Client-Reference. */
  async giftCardOrders(): Promise<PlacedGiftCardOrder[]> {
    return (await this.#call<{ orders: PlacedGiftCardOrder[] }>('GET', '/admin/gift-card-orders')).orders;
  }
  sends(): Promise<SendReport> {
    return this.#call('GET', '/admin/sends');
  }
  settings(
    changes: Partial<SandboxSettings> & { balance?: number },
  ): Promise<SandboxSettings & { balance: number }> {
    return this.#call('PATCH', '/admin/settings', changes);
  }
  operators(
    changes: Partial<Record<OperatorName, 'up' | 'down'>>,
  ): Promise<Record<OperatorName, 'up' | 'down'>> {
    return this.#call('PATCH', '/admin/operators', changes);
  }
  async timelines(): Promise<OrderTimeline[]> {
    return (await this.#call<{ timelines: OrderTimeline[] }>('GET', '/admin/timelines')).timelines;
  }
  async requests(route?: RouteName): Promise<RequestRecord[]> {
    const query = route ? `?route=${encodeURIComponent(route)}` : '';
    return (await this.#call<{ requests: RequestRecord[] }>('GET', `/admin/requests${query}`)).requests;
  }
}
