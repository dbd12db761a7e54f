/**
 * What the provider's own records say became of every send: the sandbox's list routes
 * (/v3/mobile/list, /v3/internet/list, /v3/gift-cards/list), read over HTTP with the provider key
 * the workers use, as a back office reconciling with the provider would. Read raw, not through our
 * provider client: the verdict must not trust the code it judges.
 */
import { listLimits } from '../../src/provider/wire';

export interface ProviderRecords {
  /** Every top-up the provider committed (several per ref when a ref was sent twice). */
  topups: { family: 'mobile' | 'internet'; ref: string; status: string }[];
  giftCardOrders: { orderId: string; status: string }[];
}

interface Row {
  _id?: string;
  ref?: string;
  status?: string;
}

/** Every page of one list route. */
async function listAll(baseUrl: string, key: string, path: string): Promise<Row[]> {
  const rows: Row[] = [];
  for (let page = 1; ; page++) {
    const url = `${baseUrl}/v3${path}?page=${page}&pageSize=${listLimits.maxPageSize}`;
    const response = await fetch(url, {
      headers: { 'x-access-token': key },
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    if (!response.ok)
      throw new Error(`provider records: GET ${path} answered ${response.status} ${text.slice(0, 300)}`);
    const { data } = JSON.parse(text) as {
      data: { items: Row[]; pagination?: { totalPages: number } };
    };
    rows.push(...data.items);
    if (page >= (data.pagination?.totalPages ?? 1)) return rows;
  }
}

export async function readProviderRecords(baseUrl: string, key: string): Promise<ProviderRecords> {
  const [mobile, internet, giftCards] = await Promise.all([
    listAll(baseUrl, key, '/mobile/list'),
    listAll(baseUrl, key, '/internet/list'),
    listAll(baseUrl, key, '/gift-cards/list'),
  ]);
  const topup = (family: 'mobile' | 'internet') => (row: Row) => ({
    family,
    ref: row.ref ?? '',
    status: row.status ?? '',
  });
  return {
    topups: [...mobile.map(topup('mobile')), ...internet.map(topup('internet'))],
    giftCardOrders: giftCards.map((row) => ({ orderId: row._id ?? '', status: row.status ?? '' })),
  };
}
