/**
 * The clients the API knows, from API_CLIENTS_FILE or (legacy) API_KEYS, and who presents a key.
 */
import { readFileSync } from 'node:fs';
import { timingSafeEqual } from 'node:crypto';
import { ConfigError, type Config } from '../config';
import { hashApiKey, keyDigest } from './keys';
import {
  ClientsFileError,
  LEGACY_CLIENT_ID,
  parseClientsFile,
  scopes,
  type ClientLimits,
  type ClientsFile,
  type Scope,
  type WebhookEndpoint,
} from './model';

/** Temporal's own default weight for a fairness key. */
export const DEFAULT_FAIRNESS_WEIGHT = 1;

export interface Client {
  id: string;
  /** Display name: stored beside an API decision as the operator's name when the body gives none. */
  name: string;
  scopes: ReadonlySet<Scope>;
  /** Sees and decides the review queue of every client (within its scopes). */
  operator: boolean;
  /** Where its orders' events go (docs/integrators.md "Webhooks"); empty for most clients. */
  webhooks: readonly WebhookEndpoint[];
  /** Its share of the workers against other clients' waiting orders (clients file, default 1). */
  fairnessWeight: number;
  /** Its own API limits from the clients file; the API's defaults for the rest (src/api/limits.ts). */
  limits?: ClientLimits;
}

/** An authenticated caller: the client, and which of its keys it used (an id, never the key). */
export interface Caller extends Client {
  keyId: string;
}

interface KeyRecord {
  digest: Buffer;
  keyId: string;
  client: Client;
}

export class ClientRegistry {
  /**
   * API_KEYS (one client): orders are started without the OrderClient search attribute, like
   * orders from before clients, so a deployment that upgrades needs nothing new in Temporal.
   */
  readonly legacy: boolean;
  #keys: KeyRecord[] = [];
  #clients = new Map<string, Client>();
  #defaultClientId: string | undefined;

  constructor(file: ClientsFile, options: { legacy?: boolean } = {}) {
    this.legacy = options.legacy ?? false;
    this.replace(file);
  }

  /** Swaps in a new set of clients at once (SIGHUP after `npm run clients` edited the file). */
  replace(file: ClientsFile): void {
    const clients = new Map<string, Client>();
    const keys: KeyRecord[] = [];
    for (const entry of file.clients) {
      const client: Client = {
        id: entry.id,
        name: entry.name,
        scopes: new Set(entry.scopes),
        operator: entry.role === 'operator',
        webhooks: entry.webhooks ?? [],
        fairnessWeight: entry.fairnessWeight ?? DEFAULT_FAIRNESS_WEIGHT,
        ...(entry.limits ? { limits: entry.limits } : {}),
      };
      clients.set(client.id, client);
      for (const key of entry.keys) {
        keys.push({ digest: Buffer.from(key.hash.slice('sha256:'.length), 'hex'), keyId: key.id, client });
      }
    }
    this.#clients = clients;
    this.#keys = keys;
    this.#defaultClientId = file.defaultClient;
  }

  /**
   * The caller whose key this is, or undefined. Every stored digest is compared in constant time
   * and the loop never stops early, so the answer's timing says nothing about which digest matched
   * or how much of it.
   */
  identify(presented: string): Caller | undefined {
    const digest = keyDigest(presented);
    let match: KeyRecord | undefined;
    for (const record of this.#keys) {
      if (timingSafeEqual(record.digest, digest)) match = record;
    }
    return match ? { ...match.client, keyId: match.keyId } : undefined;
  }

  client(id: string): Client | undefined {
    return this.#clients.get(id);
  }

  /** The client's webhook endpoints as the file lists them now (none for an unknown client). */
  webhooksOf(clientId: string): readonly WebhookEndpoint[] {
    return this.#clients.get(clientId)?.webhooks ?? [];
  }

  /** The ids of the clients that hold `scope` now. */
  holdersOf(scope: Scope): string[] {
    return [...this.#clients.values()].filter((c) => c.scopes.has(scope)).map((c) => c.id);
  }

  /** The client that keeps the pre-clients workflow IDs (`order-<ref>`), if one is configured. */
  get defaultClientId(): string | undefined {
    return this.#defaultClientId;
  }
}

/** API_KEYS as a clients file: one client, `default`, with every scope, and the default client. */
export function legacyClientsFile(apiKeys: readonly string[]): ClientsFile {
  const unique = [...new Set(apiKeys.filter((key) => key.length > 0))];
  return {
    defaultClient: LEGACY_CLIENT_ID,
    clients: [
      {
        id: LEGACY_CLIENT_ID,
        name: 'API_KEYS',
        scopes: [...scopes],
        keys: unique.map((key, i) => ({ id: `api_keys_${i + 1}`, hash: hashApiKey(key) })),
      },
    ],
  };
}

/** Reads and validates a clients file; a ConfigError names the path and every problem in it. */
export function readClientsFile(path: string): ClientsFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new ConfigError(`Invalid configuration:\n  API_CLIENTS_FILE: cannot read ${path} (${code})`);
  }
  return parseClientsFile(text, path);
}

/**
 * Re-reads the clients file into `registry` on each SIGHUP. A file that no longer validates is not
 * taken: `failed` gets the problem, which names the file and the bad places in it, never a key or
 * a hash.
 */
export function reloadClientsOnSighup(
  registry: ClientRegistry,
  path: string,
  { reloaded, failed }: { reloaded: (file: ClientsFile) => void; failed: (problem: string) => void },
): void {
  process.on('SIGHUP', () => {
    let file: ClientsFile;
    try {
      file = readClientsFile(path);
      registry.replace(file);
    } catch (err) {
      return failed(err instanceof Error ? err.message : String(err));
    }
    reloaded(file);
  });
}

/** The clients the configuration names: API_CLIENTS_FILE, or API_KEYS (legacy), never both. */
export function clientsFromConfig(config: Pick<Config, 'API_CLIENTS_FILE' | 'API_KEYS'>): ClientsFile {
  const path = config.API_CLIENTS_FILE;
  const apiKeys = (config.API_KEYS ?? []).filter((key) => key.length > 0);
  if (path && apiKeys.length > 0) {
    throw new ConfigError(
      'Invalid configuration:\n  API_CLIENTS_FILE, API_KEYS: set one, not both (API_KEYS is the legacy single-client mode)',
    );
  }
  if (path) return readClientsFile(path);
  if (apiKeys.length > 0) return legacyClientsFile(apiKeys);
  throw new ConfigError(
    'Invalid configuration:\n  API_CLIENTS_FILE: required (the clients file, see `npm run clients`; or API_KEYS, the legacy single-client key list)',
  );
}

/** The registry the configuration names (legacy mode for API_KEYS). */
export function clientRegistryFromConfig(
  config: Pick<Config, 'API_CLIENTS_FILE' | 'API_KEYS'>,
): ClientRegistry {
  return new ClientRegistry(clientsFromConfig(config), { legacy: !config.API_CLIENTS_FILE });
}

export { ClientsFileError };
