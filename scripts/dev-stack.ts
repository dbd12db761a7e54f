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
import { Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { prettyFactory } from 'pino-pretty';
import { EditableClientsFile } from '../src/clients/edit';
import { loadConfig, type Config } from '../src/config';
import { endpointSecrets, signingKeyFrom } from '../src/webhooks/secrets';
import { temporalConnectionOptions } from '../src/temporal/connection';
import { startDevServer, type DevServer } from '../src/temporal/dev-server';
import { reviewQueueUiUrl } from '../src/temporal/ui-links';
import { projectRoot, startPart, waitForHttp, type ManagedProcess, type PartName } from './lib/processes';

const DEV_SANDBOX_ADMIN_TOKEN = 'dev-admin-token';
/** Metrics listeners of the dev stack's API and worker, unless API_/WORKER_METRICS_ADDRESS say otherwise. */
const DEV_API_METRICS_ADDRESS = '127.0.0.1:9464';
const DEV_WORKER_METRICS_ADDRESS = '127.0.0.1:9465';
const pretty = prettyFactory({
  colorize: process.stdout.isTTY,
  translateTime: 'SYS:HH:MM:ss.l',
  ignore: 'pid,hostname',
});

const parts: ManagedProcess[] = [];
let temporal: DevServer | undefined;
let stopping = false;

function log(line: string) {
  process.stdout.write(`[stack] ${line}\n`);
}

/** A child's line, pretty-printed when it is a pino JSON line, behind the part's name. */
function relay(name: string) {
  return (line: string, stream: 'stdout' | 'stderr') => {
    let text = line;
    if (line.startsWith('{')) {
      try {
        text = pretty(JSON.parse(line) as object).trimEnd();
      } catch {
        // not JSON after all: print as is
      }
    }
    (stream === 'stdout' ? process.stdout : process.stderr).write(`[${name}] ${text}\n`);
  };
}

function start(part: PartName, env: NodeJS.ProcessEnv): ManagedProcess {
  const managed = startPart(part, { env, onLine: relay(part) });
  parts.push(managed);
  void managed.exited.then(({ code, signal }) => {
    if (stopping) return;
    log(`${part} exited unexpectedly (${signal ?? `code ${code}`}); stopping the stack`);
    void shutdown(1);
  });
  return managed;
}

/**
 * Waits until a worker polls the order task queue, as Temporal itself sees it (the worker bundles
 * the workflows first, which takes a while): the banner should promise only what is ready.
 */
async function waitForWorker(config: Config, timeoutMs = 180_000) {
  const { TEMPORAL_NAMESPACE: namespace, TEMPORAL_TASK_QUEUE: taskQueue } = config;
  // The same TLS / API-key settings the worker and API use, for an external TEMPORAL_ADDRESS.
  const connection = await Connection.connect(temporalConnectionOptions(config));
  try {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && !stopping) {
      const { pollers } = await connection.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: taskQueue },
        taskQueueType: proto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      });
      if (pollers && pollers.length > 0) return;
      await new Promise((r) => setTimeout(r, 500));
    }
    throw new Error(`no worker polled ${taskQueue} within ${timeoutMs / 1000} s`);
  } finally {
    await connection.close();
  }
}

async function shutdown(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  log('stopping…');
  // API first (no new orders), then the worker (finishes its tasks), then what they depend on.
  for (const part of [...parts].reverse()) await part.stop();
  await temporal?.stop();
  log('stopped');
  process.exit(code);
}

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
  // `on`, not `once`: Ctrl-C reaches the stack twice (from the terminal and forwarded by npm start),
  // and a second signal must not kill it while it stops its parts.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void shutdown(0));

  const dataDir = resolve(projectRoot, config.DEV_DATA_DIR);
  mkdirSync(dataDir, { recursive: true });
  const encryptionKeys = config.PAYLOAD_ENCRYPTION_KEYS ?? devEncryptionKeys(dataDir);
  const uiOrigins = [
    `http://127.0.0.1:${config.DEV_TEMPORAL_UI_PORT}`,
    `http://localhost:${config.DEV_TEMPORAL_UI_PORT}`,
  ];
  const codecUrl = `http://127.0.0.1:${config.CODEC_PORT}`;
  const baseEnv: NodeJS.ProcessEnv = { ...process.env, PAYLOAD_ENCRYPTION_KEYS: encryptionKeys };

  start('codec', { ...baseEnv, CODEC_CORS_ORIGINS: process.env.CODEC_CORS_ORIGINS ?? uiOrigins.join(',') });
  await waitForHttp(`${codecUrl}/healthz`);

  let temporalAddress = process.env.TEMPORAL_ADDRESS;
  // An external Temporal's UI is whatever TEMPORAL_UI_URL says, if anything.
  let uiUrl = config.TEMPORAL_UI_URL;
  if (!temporalAddress) {
    log(`starting Temporal dev server (state in ${join(config.DEV_DATA_DIR, 'temporal.db')})…`);
    temporal = await startDevServer({
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
  if (!providerBaseUrl) {
    providerBaseUrl = `http://127.0.0.1:${config.SANDBOX_PORT}`;
    providerApiKey = config.SANDBOX_KEY;
    start('sandbox', {
      ...baseEnv,
      SANDBOX_ADMIN_TOKEN: config.SANDBOX_ADMIN_TOKEN ?? DEV_SANDBOX_ADMIN_TOKEN,
    });
    await waitForHttp(`${providerBaseUrl}/v3/validate`);
  }

  // The developer's own clients (API_CLIENTS_FILE, or legacy API_KEYS) win over the dev clients.
  const ownClients = Boolean(config.API_CLIENTS_FILE || config.API_KEYS?.length);
  const dev = ownClients ? undefined : devClients(dataDir);
  const signingKey = config.WEBHOOK_SIGNING_KEY ?? devWebhookSigningKey(dataDir);
  const receiverUrl = `http://127.0.0.1:${config.WEBHOOK_RECEIVER_PORT}/webhooks`;
  if (dev) {
    devWebhookEndpoint(dev.file, receiverUrl);
    const endpoint = EditableClientsFile.open(dev.file).webhook('backoffice', DEV_ENDPOINT_ID);
    start('webhook-receiver', {
      ...baseEnv,
      WEBHOOK_RECEIVER_SECRET: endpointSecrets(signingKeyFrom(signingKey), 'backoffice', endpoint).join(','),
    });
    await waitForHttp(receiverUrl, { ok: (status) => status === 405 });
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
  start('worker', { ...appEnv, WORKER_METRICS_ADDRESS: workerMetrics });
  start('api', {
    ...appEnv,
    API_HOST: process.env.API_HOST ?? '127.0.0.1',
    API_METRICS_ADDRESS: apiMetrics,
  });
  const apiUrl = `http://127.0.0.1:${config.PORT}`;
  await waitForHttp(`${apiUrl}/readyz`, { ok: (status) => status === 200 });
  // The banner comes last: once the worker has bundled the workflows and polls for orders.
  await waitForWorker({ ...config, TEMPORAL_ADDRESS: temporalAddress });

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
  if (stopping) return;
  log(`failed to start: ${err instanceof Error ? err.message : String(err)}`);
  void shutdown(1);
});
