/**
 * Editing a clients file (`npm run clients`, and the dev stack's own file): add a client, add or
 * revoke a key. YAML files keep their comments and layout (the yaml library's Document API); JSON
 * files stay JSON. Every change is validated as a whole file before it is written, and written
 * atomically (a temporary file renamed over the old one), so the API never reads half a file.
 */
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { Document, isMap, isSeq, parseDocument } from 'yaml';
import { generateApiKey, hashApiKey, newKeyId } from './keys';
import {
  ClientsFileError,
  parseClientsFile,
  type ClientEntry,
  type ClientsFile,
  type Scope,
  type WebhookEndpoint,
} from './model';

const HEADER = [
  ' Clients of the intake API (API_CLIENTS_FILE). Keys are stored as SHA-256 hashes, never as keys.',
  ' Edit with `npm run clients -- add-client | add-key | revoke-key | add-webhook | list`; the API',
  ' and the workers read it at start and again on SIGHUP. Webhook secrets are not here: they are',
  ' derived from WEBHOOK_SIGNING_KEY.',
].join('\n');

export interface NewKey {
  /** The key itself: shown once, stored nowhere. */
  key: string;
  keyId: string;
}

function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export class EditableClientsFile {
  readonly path: string;
  readonly #json: boolean;
  readonly #doc: Document;

  private constructor(path: string, doc: Document) {
    this.path = path;
    this.#json = path.toLowerCase().endsWith('.json');
    this.#doc = doc;
  }

  /** Opens `path`, or starts an empty file there if it does not exist yet. */
  static open(path: string): EditableClientsFile {
    if (!existsSync(path)) {
      const doc = new Document({ clients: [] });
      doc.commentBefore = HEADER;
      return new EditableClientsFile(path, doc);
    }
    const text = readFileSync(path, 'utf8');
    parseClientsFile(text, path); // a broken file is reported as the API would report it
    return new EditableClientsFile(path, parseDocument(text));
  }

  /** The file as it stands (validated when it was opened or last changed). */
  get clients(): ClientsFile {
    return this.#doc.toJS() as ClientsFile;
  }

  #indexOf(clientId: string): number {
    const index = (this.clients.clients ?? []).findIndex((c) => c.id === clientId);
    if (index < 0) throw new ClientsFileError(`No client "${clientId}" in ${this.path}.`);
    return index;
  }

  #newKey(label?: string): { entry: ClientEntry['keys'][number]; key: NewKey } {
    const key = generateApiKey();
    const keyId = newKeyId();
    return {
      entry: { id: keyId, hash: hashApiKey(key), created: now(), ...(label ? { label } : {}) },
      key: { key, keyId },
    };
  }

  addClient(client: {
    id: string;
    name: string;
    scopes: Scope[];
    operator?: boolean;
    makeDefault?: boolean;
    label?: string;
  }): NewKey {
    if ((this.clients.clients ?? []).some((c) => c.id === client.id))
      throw new ClientsFileError(`A client "${client.id}" is already in ${this.path}.`);
    const { entry, key } = this.#newKey(client.label);
    const node = this.#doc.createNode({
      id: client.id,
      name: client.name,
      ...(client.operator ? { role: 'operator' } : {}),
      scopes: client.scopes,
      keys: [entry],
    });
    const scopes = isMap(node) ? node.get('scopes', true) : undefined;
    if (isSeq(scopes)) scopes.flow = true; // scopes: [orders:write, orders:read]
    this.#doc.addIn(['clients'], node);
    if (client.makeDefault) this.#doc.set('defaultClient', client.id);
    this.#check();
    return key;
  }

  addKey(clientId: string, label?: string): NewKey {
    const index = this.#indexOf(clientId);
    const { entry, key } = this.#newKey(label);
    this.#doc.addIn(['clients', index, 'keys'], this.#doc.createNode(entry));
    this.#check();
    return key;
  }

  revokeKey(clientId: string, keyId: string): void {
    const index = this.#indexOf(clientId);
    const keys = this.clients.clients[index]!.keys;
    const keyIndex = keys.findIndex((k) => k.id === keyId);
    if (keyIndex < 0) {
      const known = keys.map((k) => k.id).join(', ') || 'none';
      throw new ClientsFileError(`Client "${clientId}" has no key "${keyId}" (its keys: ${known}).`);
    }
    this.#doc.deleteIn(['clients', index, 'keys', keyIndex]);
    this.#check();
  }

  /** Adds scopes the client does not have yet (the dev stack's clients gain webhooks:read/write). */
  addScopes(clientId: string, scopes: Scope[]): void {
    const index = this.#indexOf(clientId);
    const have = this.clients.clients[index]!.scopes;
    for (const scope of scopes)
      if (!have.includes(scope)) this.#doc.addIn(['clients', index, 'scopes'], scope);
    this.#check();
  }

  #webhookIndex(clientId: string, endpointId: string): { index: number; at: number } {
    const index = this.#indexOf(clientId);
    const endpoints = this.clients.clients[index]!.webhooks ?? [];
    const at = endpoints.findIndex((e) => e.id === endpointId);
    if (at < 0) {
      const known = endpoints.map((e) => e.id).join(', ') || 'none';
      throw new ClientsFileError(
        `Client "${clientId}" has no webhook endpoint "${endpointId}" (its endpoints: ${known}).`,
      );
    }
    return { index, at };
  }

  webhook(clientId: string, endpointId: string): WebhookEndpoint {
    const { index, at } = this.#webhookIndex(clientId, endpointId);
    return this.clients.clients[index]!.webhooks![at]!;
  }

  /** A new endpoint, or (`replace`) the endpoint of that id changed in place, keeping its secret version. */
  setWebhook(clientId: string, endpoint: WebhookEndpoint, { replace = false } = {}): void {
    const index = this.#indexOf(clientId);
    const endpoints = this.clients.clients[index]!.webhooks ?? [];
    const at = endpoints.findIndex((e) => e.id === endpoint.id);
    if (at >= 0 && !replace)
      throw new ClientsFileError(`Client "${clientId}" already has a webhook endpoint "${endpoint.id}".`);
    const merged =
      at >= 0
        ? { ...endpoint, secretVersion: endpoints[at]!.secretVersion ?? endpoint.secretVersion }
        : endpoint;
    const node = this.#doc.createNode(
      Object.fromEntries(Object.entries(merged).filter(([, v]) => v !== undefined)),
    );
    if (at >= 0) this.#doc.setIn(['clients', index, 'webhooks', at], node);
    else if (endpoints.length > 0) this.#doc.addIn(['clients', index, 'webhooks'], node);
    else this.#doc.setIn(['clients', index, 'webhooks'], this.#doc.createNode([node]));
    this.#check();
  }

  removeWebhook(clientId: string, endpointId: string): void {
    const { index, at } = this.#webhookIndex(clientId, endpointId);
    this.#doc.deleteIn(['clients', index, 'webhooks', at]);
    this.#check();
  }

  /**
   * A new secret for the endpoint (its version + 1). Until `endWebhookRotation`, events carry a
   * signature with the previous secret too, so the receiver can switch secrets at its own pace.
   */
  rotateWebhookSecret(clientId: string, endpointId: string): number {
    const { index, at } = this.#webhookIndex(clientId, endpointId);
    const current = this.webhook(clientId, endpointId).secretVersion ?? 1;
    this.#doc.setIn(['clients', index, 'webhooks', at, 'secretVersion'], current + 1);
    this.#doc.setIn(['clients', index, 'webhooks', at, 'previousSecretVersion'], current);
    this.#check();
    return current + 1;
  }

  endWebhookRotation(clientId: string, endpointId: string): void {
    const { index, at } = this.#webhookIndex(clientId, endpointId);
    this.#doc.deleteIn(['clients', index, 'webhooks', at, 'previousSecretVersion']);
    this.#check();
  }

  #text(): string {
    return this.#json
      ? `${JSON.stringify(this.#doc.toJS(), null, 2)}\n`
      : this.#doc.toString({ flowCollectionPadding: false });
  }

  /** The whole file must still be valid after a change (e.g. not the last key of the last client gone). */
  #check(): void {
    parseClientsFile(this.#text(), this.path);
  }

  /** Writes atomically, keeping the file's mode. */
  save(): void {
    const text = this.#text();
    parseClientsFile(text, this.path);
    const mode = existsSync(this.path) ? statSync(this.path).mode & 0o777 : 0o644;
    const temporary = `${this.path}.${process.pid}.tmp`;
    writeFileSync(temporary, text, { mode });
    renameSync(temporary, this.path);
  }
}
