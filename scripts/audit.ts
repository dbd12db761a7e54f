/**
 * `npm run audit -- <ref> [--client <id>]`: an order's story from its workflow history, for a
 * person (docs/operators.md "Audit export"). Talks to Temporal directly (TEMPORAL_* settings) and decodes
 * payloads with PAYLOAD_ENCRYPTION_KEYS, as the worker does; the API is not involved, so whoever
 * runs it already holds what reading Temporal takes.
 */
import { parseArgs } from 'node:util';
import {
  Client,
  Connection,
  WorkflowNotFoundError,
  type WorkflowExecutionDescription,
} from '@temporalio/client';
import { auditOrder } from '../src/audit/order-audit';
import { renderAudit } from '../src/audit/render';
import { dataConverterFromConfig } from '../src/codec/data-converter';
import { ConfigError, loadConfig } from '../src/config';
import { temporalConnectionOptions } from '../src/temporal/connection';
import { workflowUiUrl } from '../src/temporal/ui-links';
import { OrderClientAttribute, orderWorkflowId, parseOrderWorkflowId } from '../contract/order';

const USAGE = `Usage: npm run audit -- <ref> [--client <id>] [--reveal] [--json]
       npm run audit -- --workflow-id <workflow id> [--reveal] [--json]

  <ref>            the order's ref, as its client submitted it
  --client <id>    the client that owns it (default: the default client's order-<ref>)
  --workflow-id    the workflow ID itself (an order view's workflowId)
  --reveal         show phone and line numbers and card codes (masked by default)
  --json           the same JSON as GET /v1/orders/{ref}/audit`;

class UsageError extends Error {}

/**
 * The workflow of (client, ref): `order:<client>:<ref>`, or `order-<ref>` for the default client,
 * whose recorded owner (OrderClient) must then be that client. Without `client`: `order-<ref>`.
 */
async function findOrder(
  client: Client,
  ref: string,
  owner: string | undefined,
): Promise<{ description: WorkflowExecutionDescription; owner: string }> {
  const describe = (id: string) => client.workflow.getHandle(id).describe();
  const recordedOwner = (d: WorkflowExecutionDescription) =>
    d.typedSearchAttributes.get(OrderClientAttribute);
  if (owner) {
    try {
      return { description: await describe(orderWorkflowId(ref, owner)), owner };
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }
  const description = await describe(orderWorkflowId(ref));
  if (owner && recordedOwner(description) !== owner) {
    throw new WorkflowNotFoundError(`No order ${ref} of client ${owner}`, orderWorkflowId(ref), undefined);
  }
  return { description, owner: owner ?? recordedOwner(description) ?? '(default client)' };
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      client: { type: 'string' },
      'workflow-id': { type: 'string' },
      reveal: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return void process.stdout.write(`${USAGE}\n`);
  const workflowId = values['workflow-id'];
  const ref = positionals[0];
  if (positionals.length > 1 || (!ref && !workflowId) || (ref && workflowId)) {
    throw new UsageError('give one ref, or --workflow-id');
  }

  const config = loadConfig();
  const connection = await Connection.connect(temporalConnectionOptions(config));
  try {
    const client = new Client({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      dataConverter: dataConverterFromConfig(config),
    });
    const found = workflowId
      ? await client.workflow
          .getHandle(workflowId)
          .describe()
          .then((description) => ({
            description,
            owner: description.typedSearchAttributes.get(OrderClientAttribute) ?? '(default client)',
          }))
      : await findOrder(client, ref!, values.client);
    const id = found.description.workflowId;
    const audit = await auditOrder(client, found.description, {
      ref: ref ?? parseOrderWorkflowId(id)?.ref ?? id,
      client: found.owner,
      reveal: values.reveal,
      ...(config.TEMPORAL_UI_URL
        ? { temporalUiUrl: workflowUiUrl(config.TEMPORAL_UI_URL, config.TEMPORAL_NAMESPACE, id) }
        : {}),
    });
    process.stdout.write(values.json ? `${JSON.stringify(audit, null, 2)}\n` : `${renderAudit(audit)}\n`);
  } finally {
    await connection.close();
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError) console.error(`${err.message}\n\n${USAGE}`);
  else if (err instanceof ConfigError) console.error(err.message);
  else if (err instanceof WorkflowNotFoundError) console.error(`Not found: ${err.message}`);
  else console.error(err);
  process.exit(err instanceof UsageError ? 2 : 1);
});
