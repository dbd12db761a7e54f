/**
 * Readiness: can this instance take an order now? A submission needs all of these:
 *
 * - temporal: the frontend and the history service answer (a start is written by history; with
 *   history down the frontend still answers, so asking the frontend alone would say "ready" while
 *   every submission fails);
 * - namespace: TEMPORAL_NAMESPACE exists;
 * - searchAttributes: every attribute the order's start sets is known to the frontend (checked the
 *   way a start is validated: a visibility query naming it);
 * - worker: some worker polled the order task queue lately (else orders are accepted and sit);
 * - provider: it accepts our key, and the key may send (scope READ-WRITE).
 *
 * /readyz is public and probed often, so it is kept cheap: one result is shared for a second (a
 * burst of probes makes one round of calls), and what does not come and go — the namespace and
 * the search attributes — is re-checked only every half minute once it was found.
 */
import type { Client } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { searchAttributeDefinitions } from '../../contract/order';
import type { ProviderClient } from '../provider';
import { keyScopes } from '../provider';
import { grpcCode, GrpcStatus } from '../temporal';
import {
  isUnknownSearchAttribute,
  searchAttributeProbeQuery,
  type SearchAttributeTypeName,
} from '../temporal';
import type { Timed } from '../temporal';

export type ProviderPort = Pick<ProviderClient, 'getGiftCardCatalog' | 'validateKey'>;

export type CheckState = 'up' | 'down' | 'missing' | 'unknown';

export interface ReadinessChecks {
  temporal: CheckState;
  namespace: CheckState;
  searchAttributes: CheckState;
  worker: CheckState;
  provider: CheckState;
}

export interface Readiness {
  ready: boolean;
  checks: ReadinessChecks;
  /** What is wrong, in words fit for the public answer: names of things, never error messages. */
  missing: string[];
  /** Why, for the log (error messages of our clients: no secrets). */
  problems: string[];
}

/** Long enough to absorb a burst of probes, short enough that a load balancer sees an outage at once. */
const READINESS_CACHE_MS = 1_000;
/** The namespace and search attributes, once found, are re-checked this often. */
const SETUP_CACHE_MS = 30_000;
/**
 * A worker counts as polling when it polled this recently. An idle worker re-polls when its long
 * poll expires (about a minute), so a shorter window would flap; a dead one drops out after this.
 */
export const WORKER_POLL_FRESHNESS_MS = 2 * 60_000;
/** The workflow ID the history check looks up; no order has it (order IDs start with "order-"). */
const HISTORY_PROBE_WORKFLOW_ID = 'readyz-history-probe';

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const errorMessage = (err: unknown) => (err instanceof Error ? err.message : String(err));

function timestampMs(ts: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  if (!ts) return 0;
  return Number(ts.seconds ?? 0) * 1_000 + Math.floor((ts.nanos ?? 0) / 1e6);
}

/**
 * Which of `wanted` the frontend does not know, each probed the way a start is validated (a
 * visibility query naming it): a name when it is unknown, null when the probe failed otherwise
 * (the namespace missing, Temporal down: `problems` says why), undefined when it is known.
 */
function probeSearchAttributes(
  client: Client,
  wanted: [string, SearchAttributeTypeName][],
  timed: Timed,
  problems: string[],
): Promise<(string | null | undefined)[]> {
  const namespace = client.options.namespace;
  return Promise.all(
    wanted.map(([name, type]) =>
      timed(() =>
        client.workflowService.countWorkflowExecutions({
          namespace,
          query: searchAttributeProbeQuery(name, type),
        }),
      ).then(
        () => undefined,
        (err: unknown) => {
          if (isUnknownSearchAttribute(err, name)) return name;
          // The namespace missing or Temporal down: reported by the other checks.
          if (grpcCode(err) !== GrpcStatus.NOT_FOUND)
            problems.push(`search attributes: ${errorMessage(err)}`);
          return null;
        },
      ),
    ),
  );
}

function unregisteredSearchAttributes(absent: string[], namespace: string): string {
  return `search attributes ${absent.join(', ')} are not registered in namespace ${namespace} (run npm run temporal:setup)`;
}

/**
 * For a start Temporal refused: is it because the order's search attributes
 * are not registered yet (a fresh cluster before its setup ran)? Answers /readyz's own words for
 * it, found the way /readyz finds it (one probe per attribute, not the start error's wording);
 * when the probes themselves fail (Temporal slow or failing), says so; undefined when every
 * attribute is known (then the refusal is something else, and a bug) or the namespace is missing.
 * Concurrent callers share one round of probes; once every attribute was found known, the answer
 * is undefined without asking again.
 */
export function searchAttributesNotReady(deps: {
  client: Client;
  timeoutMs: number;
  /** Default: the service's own (`searchAttributeDefinitions`). */
  searchAttributes?: Readonly<Record<string, SearchAttributeTypeName>>;
}): () => Promise<string | undefined> {
  const { client, timeoutMs } = deps;
  const wanted = Object.entries(deps.searchAttributes ?? searchAttributeDefinitions);
  const timed: Timed = (fn) => client.withDeadline(Date.now() + timeoutMs, fn);
  let inFlight: Promise<string | undefined> | undefined;
  // Every attribute known once is known until a deploy or a setup changes the namespace (and the
  // API restarts with it): not asked again, so a slow Temporal never turns into a "not ready".
  let allKnown = false;
  const check = async () => {
    const problems: string[] = [];
    const probed = await probeSearchAttributes(client, wanted, timed, problems);
    const absent = probed.filter((name): name is string => typeof name === 'string');
    if (absent.length > 0) return unregisteredSearchAttributes(absent, client.options.namespace);
    // Temporal refused the start and cannot say why in time (a loaded cluster): a 503 to retry
    // tells the caller the truth; a 500 would blame a request that may be fine.
    if (problems.length > 0)
      return `the order search attributes of namespace ${client.options.namespace} could not be checked (${problems[0]})`;
    // Not when the namespace was missing (a probe failed NOT_FOUND): that is no answer on the attributes.
    allKnown = probed.every((name) => name === undefined);
    return undefined;
  };
  return () =>
    allKnown ? Promise.resolve(undefined) : (inFlight ??= check().finally(() => (inFlight = undefined)));
}

export function readinessCheck(deps: {
  client: Client;
  taskQueue: string;
  provider: ProviderPort;
  timeoutMs: number;
  now: () => number;
  /** Default: the service's own (`searchAttributeDefinitions`). */
  searchAttributes?: Readonly<Record<string, SearchAttributeTypeName>>;
}): () => Promise<Readiness> {
  const { client, taskQueue, provider, timeoutMs, now } = deps;
  const namespace = client.options.namespace;
  const wanted = Object.entries(deps.searchAttributes ?? searchAttributeDefinitions);
  const service = client.workflowService;
  const timed = <T>(fn: () => Promise<T>) => client.withDeadline(Date.now() + timeoutMs, fn);
  let last: { at: number; result: Promise<Readiness> } | undefined;
  let setupFoundAt: number | undefined;

  const check = async (): Promise<Readiness> => {
    const problems: string[] = [];
    const missing: string[] = [];
    const checks: ReadinessChecks = {
      temporal: 'unknown',
      namespace: 'unknown',
      searchAttributes: 'unknown',
      worker: 'unknown',
      provider: 'unknown',
    };
    const recheckSetup = setupFoundAt === undefined || now() - setupFoundAt >= SETUP_CACHE_MS;

    const historyAnswers = timed(() =>
      service.describeWorkflowExecution({ namespace, execution: { workflowId: HISTORY_PROBE_WORKFLOW_ID } }),
    ).then(
      () => true,
      (err: unknown) => {
        // "workflow not found" comes from history; "namespace not found" from the frontend alone.
        if (grpcCode(err) === GrpcStatus.NOT_FOUND && !/namespace/i.test(errorMessage(err))) return true;
        if (grpcCode(err) === GrpcStatus.NOT_FOUND) return undefined;
        problems.push(`temporal: ${errorMessage(err)}`);
        return false;
      },
    );
    const namespaceExists = recheckSetup
      ? timed(() => service.describeNamespace({ namespace })).then(
          () => true,
          (err: unknown) => {
            if (grpcCode(err) === GrpcStatus.NOT_FOUND) return false;
            problems.push(`temporal: ${errorMessage(err)}`);
            return undefined;
          },
        )
      : Promise.resolve(true);
    const unknownAttributes = recheckSetup
      ? probeSearchAttributes(client, wanted, timed, problems)
      : Promise.resolve([]);
    const pollerSeenAt = timed(() =>
      service.describeTaskQueue({
        namespace,
        taskQueue: { name: taskQueue, kind: proto.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: proto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      }),
    ).then(
      ({ pollers }) => Math.max(0, ...(pollers ?? []).map((p) => timestampMs(p.lastAccessTime))),
      (err: unknown) => {
        if (grpcCode(err) !== GrpcStatus.NOT_FOUND) problems.push(`worker: ${errorMessage(err)}`);
        return undefined;
      },
    );
    const providerUp = withTimeout(provider.validateKey(), timeoutMs).then(
      (info): boolean | 'read-only' => {
        if (!info.apiKey.isEnabled) {
          problems.push('provider: the API key is disabled');
          return false;
        }
        // Documented scope READ-ONLY: the key reads but cannot send, so no order would go out.
        if (info.apiKey.scope === keyScopes.readOnly) {
          problems.push('provider: the API key is read-only');
          return 'read-only';
        }
        return true;
      },
      (err: unknown) => {
        problems.push(`provider: ${errorMessage(err)}`);
        return false;
      },
    );

    const [history, ns, unknown, polledAt, providerOk] = await Promise.all([
      historyAnswers,
      namespaceExists,
      unknownAttributes,
      pollerSeenAt,
      providerUp,
    ]);

    checks.provider = providerOk === true ? 'up' : 'down';
    if (providerOk === 'read-only') missing.push('the provider key is read-only: no order can be sent');
    else if (!providerOk) missing.push('the provider is unreachable or refuses our key');
    if (ns === false) {
      checks.temporal = 'up';
      checks.namespace = 'missing';
      missing.push(`namespace ${namespace} does not exist (run npm run temporal:setup)`);
    } else if (ns === undefined || history === false) {
      checks.temporal = 'down';
      missing.push('Temporal (frontend and history) is unreachable');
    } else {
      checks.temporal = 'up';
      checks.namespace = 'up';
      const absent = unknown.filter((name): name is string => typeof name === 'string');
      checks.searchAttributes = absent.length > 0 ? 'missing' : unknown.includes(null) ? 'unknown' : 'up';
      if (absent.length > 0) {
        missing.push(unregisteredSearchAttributes(absent, namespace));
      } else if (checks.searchAttributes === 'unknown') {
        missing.push('the search attributes could not be checked');
      }
      // Server time against this machine's time (not the app's clock, which tests may fake).
      const fresh =
        polledAt !== undefined && polledAt > 0 && Date.now() - polledAt <= WORKER_POLL_FRESHNESS_MS;
      checks.worker = polledAt === undefined ? 'unknown' : fresh ? 'up' : 'missing';
      if (!fresh) missing.push(`no worker polls task queue ${taskQueue}`);
    }
    if (recheckSetup) {
      setupFoundAt = checks.namespace === 'up' && checks.searchAttributes === 'up' ? now() : undefined;
    }
    return { ready: missing.length === 0, checks, missing, problems };
  };

  return () => {
    if (!last || now() - last.at >= READINESS_CACHE_MS) last = { at: now(), result: check() };
    return last.result;
  };
}
