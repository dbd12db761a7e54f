/**
 * The dev stack (`npm start`): a Temporal dev server with its Web UI (state in DEV_DATA_DIR, so a
 * restart resumes in-flight orders), the codec server the UI decodes payloads with, the provider
 * sandbox, the worker, the intake API and a webhook receiver the back office's events go to, each
 * a child process with readable, prefixed logs. Prints where everything is — the review queue in
 * Temporal UI and the metrics endpoints too — and the keys of its two API clients; Ctrl-C stops it all.
 *
 * TEMPORAL_ADDRESS or PROVIDER_BASE_URL, when set, point at an existing server or provider instead
 * of starting our own.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { EditableClientsFile } from '../src/clients/edit';
import { loadConfig } from '../src/config';
import { endpointSecrets, signingKeyFrom } from '../src/webhooks/secrets';
import { reviewQueueUiUrl } from '../src/temporal/ui-links';
import { projectRoot } from './lib/processes';
import { Launcher } from './lib/stack';

/** Metrics listeners of the dev stack's API and worker, unless API_/WORKER_METRICS_ADDRESS say otherwise. */
const DEV_API_METRICS_ADDRESS = '127.0.0.1:9464';
const DEV_WORKER_METRICS_ADDRESS = '127.0.0.1:9465';

const stack: Launcher = new Launcher({
  output: 'terminal',
  log: (line) => process.stdout.write(`[stack] ${line}\n`),
  onUnexpectedExit: (part, how) => {
    process.stdout.write(`[stack] ${part.name} exited unexpectedly (${how}); stopping the stack\n`);
    void stack.shutdown(1);
  },
});

/**
 * The dev stack encrypts payloads like production does. Its key lives beside Temporal's database:
 * a new key at every start would make the kept histories unreadable.
 */
function devEncryptionKeys(dataDir: string): string {
  const file = join(dataDir, 'payload-key');
  if (!existsSync(file)) writeFileSync(file, `dev:${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

/** The key webhook secrets derive from; kept like the payload key, so the receiver's secret stays the same. */
function devWebhookSigningKey(dataDir: string): string {
  const file = join(dataDir, 'webhook-signing-key');
  if (!existsSync(file)) writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

/**
 * The sandbox's admin token (faults, send counts): generated on the first start and kept like the
 * keys above. A constant would open the admin surface to anyone who read this file and can reach
 * the sandbox's port.
 */
function devSandboxAdminToken(dataDir: string): { token: string; file: string } {
  const file = join(dataDir, 'sandbox-admin-token');
  if (!existsSync(file)) writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
  return { token: readFileSync(file, 'utf8').trim(), file };
}

/** The back office's endpoint: every event, card codes included, to the dev receiver. */
const DEV_ENDPOINT_ID = 'dev-receiver';

interface DevKeys {
  backoffice: string;
  operator: string;
}

/**
 * The dev stack's clients: a back office (the default client, so orders of earlier dev runs, from
 * before clients existed, stay its own) and an operator. The clients file holds hashes only; the
 * keys are kept beside it (dev only, like the payload key) so every start can print them. Both are
 * written once: edits made with `npm run clients -- … --file <data dir>/clients.yaml` stay.
 */
function devClients(dataDir: string): { file: string; keys: DevKeys } {
  const file = join(dataDir, 'clients.yaml');
  const keysFile = join(dataDir, 'dev-api-keys.json');
  if (!existsSync(file) || !existsSync(keysFile)) {
    const clients = EditableClientsFile.open(file);
    const keys: DevKeys = {
      backoffice: clients.addClient({
        id: 'backoffice',
        name: 'Back office (dev)',
        scopes: ['orders:write', 'orders:read'],
        makeDefault: true,
      }).key,
      operator: clients.addClient({
        id: 'operator',
        name: 'Operator (dev)',
        scopes: ['orders:read', 'reviews:write'],
        operator: true,
      }).key,
    };
    clients.save();
    writeFileSync(keysFile, `${JSON.stringify(keys, null, 2)}\n`, { mode: 0o600 });
  }
  return { file, keys: JSON.parse(readFileSync(keysFile, 'utf8')) as DevKeys };
}

/**
 * The back office gets the webhook scopes and an endpoint at the dev receiver (its URL follows
 * WEBHOOK_RECEIVER_PORT), also in a data directory from before webhooks. Other edits stay.
 */
function devWebhookEndpoint(file: string, receiverUrl: string): void {
  const clients = EditableClientsFile.open(file);
  clients.addScopes('backoffice', ['webhooks:read', 'webhooks:write']);
  clients.setWebhook(
    'backoffice',
    { id: DEV_ENDPOINT_ID, url: receiverUrl, cardCodes: true },
    { replace: true },
  );
  clients.save();
}

async function main() {
  const config = loadConfig();
  stack.stopOnSignals(0);

  const dataDir = resolve(projectRoot, config.DEV_DATA_DIR);
  mkdirSync(dataDir, { recursive: true });
  const encryptionKeys = config.PAYLOAD_ENCRYPTION_KEYS ?? devEncryptionKeys(dataDir);
  const uiOrigins = [
    `http://127.0.0.1:${config.DEV_TEMPORAL_UI_PORT}`,
    `http://localhost:${config.DEV_TEMPORAL_UI_PORT}`,
  ];
  const codecUrl = `http://127.0.0.1:${config.CODEC_PORT}`;
  const baseEnv: NodeJS.ProcessEnv = { ...process.env, PAYLOAD_ENCRYPTION_KEYS: encryptionKeys };

  await stack.startServer('codec', {
    port: config.CODEC_PORT,
    env: { ...baseEnv, CODEC_CORS_ORIGINS: process.env.CODEC_CORS_ORIGINS ?? uiOrigins.join(',') },
  });

  let temporalAddress = process.env.TEMPORAL_ADDRESS;
  // An external Temporal's UI is whatever TEMPORAL_UI_URL says, if anything.
  let uiUrl = config.TEMPORAL_UI_URL;
  if (!temporalAddress) {
    process.stdout.write(
      `[stack] starting Temporal dev server (state in ${join(config.DEV_DATA_DIR, 'temporal.db')})…\n`,
    );
    const temporal = await stack.startTemporal({
      port: config.DEV_TEMPORAL_PORT,
      uiPort: config.DEV_TEMPORAL_UI_PORT,
      dbFile: join(dataDir, 'temporal.db'),
      uiCodecEndpoint: codecUrl,
      retentionMs: config.TEMPORAL_NAMESPACE_RETENTION,
    });
    temporalAddress = temporal.address;
    uiUrl = temporal.uiUrl ?? uiUrl;
    // Order views link to their workflow there.
    if (uiUrl) baseEnv.TEMPORAL_UI_URL = uiUrl;
  }
  baseEnv.TEMPORAL_ADDRESS = temporalAddress;

  let providerBaseUrl = process.env.PROVIDER_BASE_URL;
  let providerApiKey = config.PROVIDER_API_KEY;
  let sandboxAdminTokenFile: string | undefined;
  if (!providerBaseUrl) {
    providerBaseUrl = `http://127.0.0.1:${config.SANDBOX_PORT}`;
    providerApiKey = config.SANDBOX_KEY;
    let adminToken = config.SANDBOX_ADMIN_TOKEN;
    if (adminToken === undefined)
      ({ token: adminToken, file: sandboxAdminTokenFile } = devSandboxAdminToken(dataDir));
    await stack.startServer('sandbox', {
      port: config.SANDBOX_PORT,
      env: { ...baseEnv, SANDBOX_ADMIN_TOKEN: adminToken },
    });
  }

  // The developer's own clients (API_CLIENTS_FILE, or legacy API_KEYS) win over the dev clients.
  const ownClients = Boolean(config.API_CLIENTS_FILE || config.API_KEYS?.length);
  const dev = ownClients ? undefined : devClients(dataDir);
  const signingKey = config.WEBHOOK_SIGNING_KEY ?? devWebhookSigningKey(dataDir);
  const receiverUrl = `http://127.0.0.1:${config.WEBHOOK_RECEIVER_PORT}/webhooks`;
  if (dev) {
    devWebhookEndpoint(dev.file, receiverUrl);
    const endpoint = EditableClientsFile.open(dev.file).webhook('backoffice', DEV_ENDPOINT_ID);
    await stack.startServer('webhook-receiver', {
      port: config.WEBHOOK_RECEIVER_PORT,
      env: {
        ...baseEnv,
        WEBHOOK_RECEIVER_SECRET: endpointSecrets(signingKeyFrom(signingKey), 'backoffice', endpoint).join(
          ',',
        ),
      },
    });
  }
  const appEnv = {
    ...baseEnv,
    PROVIDER_BASE_URL: providerBaseUrl,
    PROVIDER_API_KEY: providerApiKey,
    ...(dev ? { API_CLIENTS_FILE: dev.file } : {}),
    WEBHOOK_SIGNING_KEY: signingKey,
    // The dev receiver is on loopback: allowed here, as in no production configuration.
    WEBHOOK_ALLOWED_NETWORKS: process.env.WEBHOOK_ALLOWED_NETWORKS ?? '127.0.0.0/8,::1/128',
  };
  const apiMetrics = config.API_METRICS_ADDRESS ?? DEV_API_METRICS_ADDRESS;
  const workerMetrics = config.WORKER_METRICS_ADDRESS ?? DEV_WORKER_METRICS_ADDRESS;
  // The banner comes last: once the worker has bundled the workflows and polls for orders.
  // The stack runs the code it has: its build is made current at every start, even over an
  // older one kept in .data (whose pinned orders that build's workers no longer run here).
  const worker = stack.startWorker({
    env: {
      ...appEnv,
      WORKER_METRICS_ADDRESS: workerMetrics,
      WORKER_MAKE_CURRENT: process.env.WORKER_MAKE_CURRENT ?? 'always',
    },
  });
  worker.catch(() => {}); // awaited below, after the API: a failure meanwhile must not go unhandled
  const { url: apiUrl } = await stack.startServer('api', {
    port: config.PORT,
    env: { ...appEnv, API_HOST: process.env.API_HOST ?? '127.0.0.1', API_METRICS_ADDRESS: apiMetrics },
  });
  await worker;

  const apiKey = dev?.keys.backoffice ?? config.API_KEYS?.[0] ?? '<your key>';
  const ref = `demo-${Date.now()}`;
  const example = JSON.stringify({
    type: 'mobile_topup',
    ref,
    planCode: 'PREPAID_MOBILIS',
    msisdn: '0555123456',
    amount: 500,
  });
  const banner = [
    '',
    'The stack is up.',
    `  Temporal UI:   ${uiUrl ?? 'your Temporal UI'}`,
    ...(uiUrl ? [`  Review queue:  ${reviewQueueUiUrl(uiUrl, config.TEMPORAL_NAMESPACE)}`] : []),
    `  Temporal:      ${temporalAddress}`,
    `  Codec server:  ${codecUrl}`,
    `  Provider:      ${providerBaseUrl}`,
    ...(sandboxAdminTokenFile ? [`  Sandbox admin: X-Admin-Token from ${sandboxAdminTokenFile}`] : []),
    `  API:           ${apiUrl}`,
    ...(dev
      ? [
          `  Back-office key: ${dev.keys.backoffice}   (client backoffice: orders:write, orders:read, webhooks:read, webhooks:write)`,
          `  Operator key:    ${dev.keys.operator}   (client operator: operator role, orders:read, reviews:write)`,
          `  Clients file:    ${dev.file}`,
          `  Webhooks:        the back office's order events go to ${receiverUrl} ([webhook-receiver] lines)`,
        ]
      : [`  API clients:   yours (${config.API_CLIENTS_FILE ? 'API_CLIENTS_FILE' : 'API_KEYS'})`]),
    `  API docs:      ${apiUrl}/openapi.json`,
    `  Metrics:       http://${apiMetrics}/metrics (API), http://${workerMetrics}/metrics (worker)`,
    '',
    'Submit an order:',
    `  curl -s -X POST ${apiUrl}/v1/orders -H 'Authorization: Bearer ${apiKey}' -H 'Content-Type: application/json' -d '${example}'`,
    'Read it back (FULFILLED about 20 s later):',
    `  curl -s ${apiUrl}/v1/orders/${ref} -H 'Authorization: Bearer ${apiKey}'`,
    ...(dev
      ? [
          'The review queue of every client, as the operator:',
          `  curl -s '${apiUrl}/v1/orders?status=NEEDS_REVIEW' -H 'Authorization: Bearer ${dev.keys.operator}'`,
        ]
      : []),
    '',
    'Ctrl-C stops everything.',
    '',
  ];
  process.stdout.write(banner.join('\n') + '\n');
}

main().catch((err: unknown) => {
  if (stack.stopping) return;
  process.stdout.write(`[stack] failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  void stack.shutdown(1);
});
