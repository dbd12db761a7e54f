/**
 * `npm run clients -- <command>`: edits the clients file (API_CLIENTS_FILE, or --file) and prints a
 * new key once, on stdout alone (so `KEY=$(npm run --silent clients -- add-key acme)` works);
 * everything else goes to stderr. See docs/deployers.md, "Clients and keys".
 */
import { parseArgs } from 'node:util';
import { EditableClientsFile } from '../src/clients/edit';
import { allWebhookEventTypes, ClientId, scopes, WebhookEndpoint, type Scope } from '../src/clients/model';
import { ConfigError, loadConfig } from '../src/config';
import { AddressPolicy, literalAddressRefusal } from '../src/webhooks/address-guard';
import { endpointSecret, signingKeyFrom } from '../src/webhooks/secrets';

const USAGE = `Usage: npm run clients -- <command> [--file <clients file>]

  add-client <id> --name <display name> --scopes <scope,scope…> [--operator] [--default] [--label <text>]
      a new client with one key; prints the key (once)
  add-key <client> [--label <text>]
      one more key for a client (rotation); prints the key (once)
  revoke-key <client> <key-id>
      removes a key; the API refuses it once it has reloaded the file
  list
      clients, scopes, key ids and webhook endpoints (never keys, hashes or secrets)

  add-webhook <client> <endpoint-id> --url <url> [--events <type,type…>] [--card-codes]
      a webhook endpoint for the client (all event types unless --events); prints its secret
  webhook-secret <client> <endpoint-id>
      prints the endpoint's current signing secret (whsec_…)
  rotate-webhook-secret <client> <endpoint-id>
      a new secret; events are signed with the old one too until end-webhook-rotation; prints it
  end-webhook-rotation <client> <endpoint-id>
      stops signing with the previous secret
  remove-webhook <client> <endpoint-id>
      the endpoint gets nothing more, not even events of orders in flight

The file is --file or API_CLIENTS_FILE; add-client creates it if missing. Scopes: ${scopes.join(', ')}.
Event types: ${allWebhookEventTypes.join(', ')}.
Secrets are derived from WEBHOOK_SIGNING_KEY (the worker's): set it to print one.
After a change, reload the API and the workers: kill -HUP <pid>, or restart them.`;

class UsageError extends Error {}

function parseScopes(value: string | undefined): Scope[] {
  if (!value) throw new UsageError('add-client needs --scopes (comma-separated)');
  const list = value.split(',').map((s) => s.trim());
  const unknown = list.filter((s) => !(scopes as readonly string[]).includes(s));
  if (unknown.length > 0)
    throw new UsageError(`unknown scope ${unknown.join(', ')}; known: ${scopes.join(', ')}`);
  return list as Scope[];
}

function printKey(file: EditableClientsFile, client: string, key: { key: string; keyId: string }): void {
  process.stdout.write(`${key.key}\n`);
  process.stderr.write(
    `Key ${key.keyId} of client "${client}" written to ${file.path} (as a hash). The key above is shown once: ` +
      'store it now. Reload the API to accept it.\n',
  );
}

/** The secret goes alone to stdout (`SECRET=$(npm run --silent clients -- webhook-secret acme erp)`). */
function printSecret(client: string, endpoint: string, version: number, note: string): void {
  const key = loadConfig().WEBHOOK_SIGNING_KEY;
  if (!key) {
    process.stderr.write(
      `${note}\nWEBHOOK_SIGNING_KEY is not set here, so the secret cannot be shown: set it (the workers' value) and run webhook-secret.\n`,
    );
    return;
  }
  process.stdout.write(`${endpointSecret(signingKeyFrom(key), client, endpoint, version)}\n`);
  process.stderr.write(
    `${note}\nThe secret above (version ${version}) is the endpoint's: give it to whoever runs the receiver. ` +
      'It is derived from WEBHOOK_SIGNING_KEY, never stored.\n',
  );
}

function list(file: EditableClientsFile): void {
  const { defaultClient, clients } = file.clients;
  for (const client of clients) {
    const marks = [client.role, client.id === defaultClient ? 'default client' : undefined].filter(Boolean);
    process.stdout.write(`${client.id}  ${client.name}${marks.length ? `  (${marks.join(', ')})` : ''}\n`);
    process.stdout.write(`  scopes: ${client.scopes.join(', ') || '(none)'}\n`);
    for (const key of client.keys) {
      const details = [key.created, key.label].filter(Boolean).join('  ');
      process.stdout.write(`  key ${key.id}${details ? `  ${details}` : ''}\n`);
    }
    if (client.keys.length === 0) process.stdout.write('  (no keys: it cannot call the API)\n');
    for (const endpoint of client.webhooks ?? []) {
      const details = [
        endpoint.events ? endpoint.events.join(',') : 'all events',
        endpoint.cardCodes ? 'card codes' : undefined,
        `secret v${endpoint.secretVersion ?? 1}`,
        endpoint.previousSecretVersion !== undefined
          ? `also v${endpoint.previousSecretVersion} (rotating)`
          : undefined,
      ].filter(Boolean);
      process.stdout.write(`  webhook ${endpoint.id}  ${endpoint.url}  ${details.join('  ')}\n`);
    }
  }
}

function main(argv: string[]): void {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      file: { type: 'string' },
      name: { type: 'string' },
      scopes: { type: 'string' },
      operator: { type: 'boolean' },
      default: { type: 'boolean' },
      label: { type: 'string' },
      url: { type: 'string' },
      events: { type: 'string' },
      'card-codes': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...args] = positionals;
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const path = values.file ?? process.env.API_CLIENTS_FILE;
  if (!path) throw new UsageError('no clients file: pass --file <path> or set API_CLIENTS_FILE');
  const clientArg = (what: string) => {
    const id = args[0];
    if (!id) throw new UsageError(`${command} needs a client id`);
    if (!ClientId.safeParse(id).success)
      throw new UsageError(
        `"${id}" is not a ${what}: lowercase letters, digits and "_", starting with a letter, at most 24 characters`,
      );
    return id;
  };

  const endpointArg = () => {
    const endpoint = args[1];
    if (!endpoint) throw new UsageError(`${command} needs an endpoint id`);
    return endpoint;
  };

  switch (command) {
    case 'add-client': {
      const id = clientArg('client id');
      if (!values.name) throw new UsageError('add-client needs --name');
      const file = EditableClientsFile.open(path);
      const key = file.addClient({
        id,
        name: values.name,
        scopes: parseScopes(values.scopes),
        operator: values.operator,
        makeDefault: values.default,
        label: values.label,
      });
      file.save();
      return printKey(file, id, key);
    }
    case 'add-key': {
      const id = clientArg('client id');
      const file = EditableClientsFile.open(path);
      const key = file.addKey(id, values.label);
      file.save();
      return printKey(file, id, key);
    }
    case 'revoke-key': {
      const id = clientArg('client id');
      const keyId = args[1];
      if (!keyId) throw new UsageError('revoke-key needs a key id (see list)');
      const file = EditableClientsFile.open(path);
      file.revokeKey(id, keyId);
      file.save();
      process.stderr.write(
        `Key ${keyId} of client "${id}" revoked in ${path}. Reload the API to refuse it.\n`,
      );
      return;
    }
    case 'add-webhook': {
      const id = clientArg('client id');
      const endpointId = endpointArg();
      if (!values.url) throw new UsageError('add-webhook needs --url');
      const endpoint = WebhookEndpoint.safeParse({
        id: endpointId,
        url: values.url,
        ...(values.events ? { events: values.events.split(',').map((e) => e.trim()) } : {}),
        ...(values['card-codes'] ? { cardCodes: true } : {}),
      });
      if (!endpoint.success)
        throw new UsageError(
          endpoint.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
        );
      // The worker refuses it at every delivery (WEBHOOK_ALLOWED_NETWORKS, the worker's): say so now.
      const literal = literalAddressRefusal(
        endpoint.data.url,
        new AddressPolicy(loadConfig().WEBHOOK_ALLOWED_NETWORKS),
      );
      if (literal) throw new UsageError(`url: ${literal}`);
      const file = EditableClientsFile.open(path);
      file.setWebhook(id, endpoint.data);
      file.save();
      return printSecret(
        id,
        endpointId,
        1,
        `Webhook endpoint ${endpointId} of client "${id}" written to ${path}.`,
      );
    }
    case 'webhook-secret': {
      const id = clientArg('client id');
      const endpoint = EditableClientsFile.open(path).webhook(id, endpointArg());
      return printSecret(
        id,
        endpoint.id,
        endpoint.secretVersion ?? 1,
        `Endpoint ${endpoint.id} of client "${id}".`,
      );
    }
    case 'rotate-webhook-secret': {
      const id = clientArg('client id');
      const endpointId = endpointArg();
      const file = EditableClientsFile.open(path);
      const version = file.rotateWebhookSecret(id, endpointId);
      file.save();
      return printSecret(
        id,
        endpointId,
        version,
        `Endpoint ${endpointId} of client "${id}": new secret version ${version}; events carry the old signature too until end-webhook-rotation.`,
      );
    }
    case 'end-webhook-rotation':
    case 'remove-webhook': {
      const id = clientArg('client id');
      const endpointId = endpointArg();
      const file = EditableClientsFile.open(path);
      if (command === 'remove-webhook') file.removeWebhook(id, endpointId);
      else file.endWebhookRotation(id, endpointId);
      file.save();
      process.stderr.write(
        `Endpoint ${endpointId} of client "${id}" changed in ${path}. Reload the API and the workers.\n`,
      );
      return;
    }
    case 'list':
      return list(EditableClientsFile.open(path));
    default:
      throw new UsageError(`unknown command ${command}`);
  }
}

try {
  main(process.argv.slice(2));
} catch (err) {
  if (
    err instanceof UsageError ||
    err instanceof ConfigError ||
    (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
  ) {
    process.stderr.write(`${(err as Error).message}\n${err instanceof UsageError ? `\n${USAGE}\n` : ''}`);
    process.exit(2);
  }
  throw err;
}
