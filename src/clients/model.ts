/**
 * Who may call the intake API: named clients, each with a display name, scopes, an optional
 * operator role and the *hashes* of its keys (several, so keys can rotate). The clients file
 * (API_CLIENTS_FILE, YAML or JSON) is validated here with zod; `npm run clients` edits it.
 *
 * Keys are 256 random bits (src/clients/keys.ts), so a fast hash (SHA-256) is enough to store them:
 * a slow password hash protects low-entropy secrets against guessing, and nobody can guess 2^256.
 *
 * Legacy mode: API_KEYS (a flat key list) is one client, `default`, with every scope.
 */
import { parse, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { ConfigError } from '../config';
import { orderStatuses } from '../../contract/schemas';
import { webhookEventTypes, type WebhookEventType } from '../../contract/event-types';

export const scopes = [
  'orders:write',
  'orders:read',
  'reviews:write',
  'audit:read',
  /** With audit:read: the audit export with `reveal=true` (card codes in clear). Never implied. */
  'audit:reveal',
  'webhooks:read',
  'webhooks:write',
] as const;
export type Scope = (typeof scopes)[number];

/**
 * A client id: lowercase letters, digits and `_`, starting with a letter. No `.`, `-` or `:`, so it
 * is embedded unambiguously in workflow IDs (`order:<client>:<ref>`) and provider refs; at most 24
 * characters, so a provider ref keeps room for the start of the order's ref.
 */
export const CLIENT_ID_PATTERN = /^[a-z][a-z0-9_]{0,23}$/;
export const ClientId = z
  .string()
  .regex(
    CLIENT_ID_PATTERN,
    'a client id: lowercase letters, digits and "_", starting with a letter, at most 24 characters',
  )
  .meta({ description: 'A client id, as in the clients file.', example: 'acme' });

export const KEY_HASH_PATTERN = /^sha256:[0-9a-f]{64}$/;
export const KEY_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,31}$/;

const KeyEntry = z.strictObject({
  /** Names the key in `npm run clients -- list`, `revoke-key` and the API's log lines. Not secret. */
  id: z.string().regex(KEY_ID_PATTERN, 'lowercase letters, digits, "_" and "-", at most 32 characters'),
  hash: z
    .string()
    .regex(KEY_HASH_PATTERN, 'expected sha256:<64 lowercase hex digits> — the hash of a key, never the key'),
  created: z.iso.datetime({ offset: true }).optional(),
  label: z.string().max(100).optional(),
});

export const WEBHOOK_ENDPOINT_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,31}$/;
export const allWebhookEventTypes = webhookEventTypes(orderStatuses) as [
  WebhookEventType,
  ...WebhookEventType[],
];

/**
 * An http(s) URL without credentials in it (they would end up in logs and in the clients file,
 * which is not a secret) and without a fragment (never sent). Whether its address may be reached
 * is checked at every delivery, on the address actually connected to (src/webhooks/address-guard.ts).
 */
const WebhookUrl = z
  .string()
  .max(2_048)
  .refine((value) => URL.canParse(value), 'expected an absolute http(s) URL')
  .refine(
    (value) => !URL.canParse(value) || /^https?:$/.test(new URL(value).protocol),
    'expected http or https',
  )
  .refine(
    (value) => !URL.canParse(value) || (new URL(value).username === '' && new URL(value).password === ''),
    'no user or password in the URL: it is not a secret here',
  )
  .refine((value) => !value.includes('#'), 'no #fragment: it is never sent');

/**
 * Where a client receives its orders' events (docs/integrators.md "Webhooks"). The signing secret is not stored
 * here: it is derived from WEBHOOK_SIGNING_KEY, the client id, the endpoint id and
 * `secretVersion` (src/webhooks/secrets.ts), so this file stays free of secrets.
 */
export const WebhookEndpoint = z.strictObject({
  id: z
    .string()
    .regex(WEBHOOK_ENDPOINT_ID_PATTERN, 'lowercase letters, digits, "_" and "-", at most 32 characters'),
  url: WebhookUrl,
  /** Absent: every event type, including any added later. */
  events: z.array(z.enum(allWebhookEventTypes)).min(1).optional(),
  /** Card codes in clear in the events; otherwise they read "[masked]". */
  cardCodes: z.boolean().optional(),
  /** Bumped by `npm run clients -- rotate-webhook-secret`: a new secret. */
  secretVersion: z.number().int().positive().max(1_000_000).optional(),
  /** While a rotation is under way, events are signed with this version's secret too. */
  previousSecretVersion: z.number().int().positive().optional(),
});
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

/**
 * A client's own API limits (docs/integrators.md "Limits"); each one absent takes the API's
 * default (API_ORDERS_PER_MINUTE, API_ORDERS_BURST, API_RATE_LIMIT_PER_MINUTE, API_CONCURRENT_REQUESTS).
 */
export const ClientLimits = z.strictObject({
  /** Orders submitted a minute, batch items each counted. */
  ordersPerMinute: z.number().int().positive().optional(),
  /** Orders beyond that allowed in any ten minutes (0: none). */
  ordersBurst: z.number().int().nonnegative().optional(),
  /** Other /v1 requests a minute (reads, reviews, webhooks). */
  requestsPerMinute: z.number().int().positive().optional(),
  /** Requests in flight at once. */
  concurrentRequests: z.number().int().positive().max(1_000).optional(),
});
export type ClientLimits = z.infer<typeof ClientLimits>;

const ClientEntry = z.strictObject({
  id: ClientId,
  name: z.string().trim().min(1, 'must not be blank').max(100),
  /** Operators see the review queue of every client (with orders:read) and decide (reviews:write). */
  role: z.enum(['operator']).optional(),
  scopes: z.array(z.enum(scopes)),
  keys: z.array(KeyEntry),
  webhooks: z.array(WebhookEndpoint).optional(),
  /**
   * This client's share of the workers when several clients' orders wait at once (Temporal task-queue
   * fairness, docs/deployers.md "Fair under load"): a client of weight 2 is dispatched twice as often
   * as one of weight 1 while both have work waiting. Absent: 1. Temporal clamps to [0.001, 1000].
   */
  fairnessWeight: z.number().min(0.001).max(1000).optional(),
  limits: ClientLimits.optional(),
});
export type ClientEntry = z.infer<typeof ClientEntry>;

export const ClientsFile = z
  .strictObject({
    /**
     * The client whose orders keep the workflow IDs of before clients existed (`order-<ref>`): orders
     * in flight from then stay readable and reviewable by it, and its old refs stay deduplicated.
     */
    defaultClient: ClientId.optional(),
    clients: z.array(ClientEntry).min(1, 'list at least one client'),
  })
  .superRefine((file, ctx) => {
    const issue = (path: (string | number)[], message: string) =>
      ctx.addIssue({ code: 'custom', path, message });
    const seenIds = new Map<string, number>();
    const seenHashes = new Map<string, string>();
    file.clients.forEach((client, i) => {
      const first = seenIds.get(client.id);
      if (first !== undefined) issue(['clients', i, 'id'], `"${client.id}" is also clients[${first}]`);
      else seenIds.set(client.id, i);
      if (new Set(client.scopes).size !== client.scopes.length)
        issue(['clients', i, 'scopes'], 'lists a scope twice');
      const reads = client.scopes.includes('orders:read');
      if (client.scopes.includes('audit:read') && !reads)
        issue(['clients', i, 'scopes'], 'audit:read widens orders:read to every client: add orders:read');
      if (client.scopes.includes('audit:reveal') && !client.scopes.includes('audit:read'))
        issue(['clients', i, 'scopes'], 'audit:reveal reveals the audit export: add audit:read');
      if (client.role === 'operator' && !reads)
        issue(['clients', i, 'scopes'], 'an operator reads the review queue: add orders:read');
      const keyIds = new Set<string>();
      client.keys.forEach((key, k) => {
        if (keyIds.has(key.id)) issue(['clients', i, 'keys', k, 'id'], `key id "${key.id}" is used twice`);
        keyIds.add(key.id);
        // Never the hash itself in the message: only where else it appears.
        const where = `clients[${i}].keys[${k}]`;
        const other = seenHashes.get(key.hash);
        if (other) issue(['clients', i, 'keys', k, 'hash'], `the same key hash is also at ${other}`);
        else seenHashes.set(key.hash, where);
      });
      const endpointIds = new Set<string>();
      client.webhooks?.forEach((endpoint, w) => {
        const at = ['clients', i, 'webhooks', w];
        if (endpointIds.has(endpoint.id)) issue([...at, 'id'], `endpoint id "${endpoint.id}" is used twice`);
        endpointIds.add(endpoint.id);
        if (new Set(endpoint.events).size !== (endpoint.events?.length ?? 0))
          issue([...at, 'events'], 'lists an event type twice');
        if (
          endpoint.previousSecretVersion !== undefined &&
          endpoint.previousSecretVersion >= (endpoint.secretVersion ?? 1)
        )
          issue([...at, 'previousSecretVersion'], 'must be below secretVersion');
      });
    });
    if (file.defaultClient !== undefined && !seenIds.has(file.defaultClient))
      issue(['defaultClient'], `no client has the id "${file.defaultClient}"`);
    if (seenHashes.size === 0) issue(['clients'], 'no client has a key: nobody could call the API');
  });
export type ClientsFile = z.infer<typeof ClientsFile>;

/** `clients[1].keys[0].hash`: the place in the file, as a reader of the file would point at it. */
function placeOf(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(file)';
  return path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i > 0 ? '.' : ''}${String(part)}`))
    .join('');
}

/** A ConfigError: the API stops at start with its message, as for any bad variable. */
export class ClientsFileError extends ConfigError {
  override name = 'ClientsFileError';
}

/**
 * Parses and validates a clients file's text (YAML, of which JSON is a subset). Throws a
 * ClientsFileError naming `source` and each bad place in the file; never a key hash or a line of
 * the file (the YAML parser's own messages quote the line, so only their first words are kept).
 */
export function parseClientsFile(text: string, source: string): ClientsFile {
  let data: unknown;
  try {
    data = parse(text);
  } catch (err) {
    if (!(err instanceof YAMLParseError)) throw err;
    const [line, column] = [err.linePos?.[0].line, err.linePos?.[0].col];
    const what = err.message.split(/ at line \d|\n/)[0];
    const where = line !== undefined ? ` (line ${line}, column ${column})` : '';
    throw new ClientsFileError(`Invalid clients file ${source}: not valid YAML or JSON${where}: ${what}`);
  }
  const result = ClientsFile.safeParse(data);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${placeOf(i.path)}: ${i.message}`);
    throw new ClientsFileError(`Invalid clients file ${source}:\n${lines.join('\n')}`);
  }
  return result.data;
}

/** The legacy API_KEYS client: one client, every scope, the default client (keeps `order-<ref>`). */
export const LEGACY_CLIENT_ID = 'default';
