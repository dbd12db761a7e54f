/**
 * What the service needs from Temporal before an order can start: the namespace (with the
 * configured retention) and every search attribute in `searchAttributeDefinitions`, visible to the
 * frontend that validates a start. `npm run temporal:setup` (docker-compose's setup job) and every
 * worker at start run it; it is idempotent, and a worker that cannot get there does not start.
 *
 * Two traps it waits out instead of hiding:
 * - a namespace registered a moment ago is "not found" by the frontend's namespace cache for about
 *   a second, so adding search attributes to it right away fails (a setup job with `|| true` left
 *   them unregistered, and every order then answered 500);
 * - on SQL visibility a new search attribute is an alias in the namespace's record, which each
 *   Temporal service reads from its own namespace cache (refreshed every 2 s by default).
 * So it checks each attribute the way a start uses it — a visibility query naming it — until the
 * frontend accepts it, then gives the other services one cache refresh to catch up.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { searchAttributeDefinitions } from '../../contract/order';
import { grpcCode, GrpcStatus } from './grpc';

const { IndexedValueType } = temporal.api.enums.v1;

export type SearchAttributeTypeName =
  'Text' | 'Keyword' | 'Int' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList';

export const indexedValueTypes: Record<SearchAttributeTypeName, temporal.api.enums.v1.IndexedValueType> = {
  Text: IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  Keyword: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  Int: IndexedValueType.INDEXED_VALUE_TYPE_INT,
  Double: IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  Bool: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  Datetime: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  KeywordList: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

/** A value of each type that no order carries, so a probe query matches nothing and costs little. */
const probeValues: Record<SearchAttributeTypeName, string> = {
  Text: `'setup-probe'`,
  Keyword: `'setup-probe'`,
  KeywordList: `'setup-probe'`,
  Int: '-1',
  Double: '-1',
  Bool: 'false',
  Datetime: `'1970-01-01T00:00:00Z'`,
};

/**
 * How long the other Temporal services may still serve an older copy of the namespace after the
 * frontend shows a change: one refresh of their namespace cache (`system.namespaceCacheRefreshInterval`,
 * 2 s by default) and a margin.
 */
const NAMESPACE_CACHE_SETTLE_MS = 3_000;
/** One call may take this long before it counts as a failed attempt. */
const CALL_TIMEOUT_MS = 10_000;

export type TemporalServices = Pick<Connection, 'workflowService' | 'operatorService'>;

export interface TemporalSetupOptions {
  namespace: string;
  /** Closed workflows are kept this long; see docs/deployers.md "Going to production" for what it means. */
  retentionMs: number;
  /** Default: the service's own, `searchAttributeDefinitions`. */
  searchAttributes?: Readonly<Record<string, SearchAttributeTypeName>>;
  /** Give up (TemporalSetupError) when Temporal is not set up after this long. */
  timeoutMs?: number;
  log?: (message: string) => void;
}

export interface TemporalSetupResult {
  namespaceCreated: boolean;
  retentionChanged: boolean;
  searchAttributesAdded: string[];
}

/** Temporal could not be set up: the message says what is missing and how to fix it. */
export class TemporalSetupError extends Error {
  override name = 'TemporalSetupError';
}

/** "30d", "72h" as days and hours, the unit operators think of retention in. */
export function formatRetention(ms: number): string {
  const hours = ms / 3_600_000;
  return Number.isInteger(hours / 24) ? `${hours / 24}d` : `${hours}h`;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

const transient: ReadonlySet<number> = new Set([
  GrpcStatus.CANCELLED,
  GrpcStatus.DEADLINE_EXCEEDED,
  GrpcStatus.RESOURCE_EXHAUSTED,
  GrpcStatus.UNAVAILABLE,
]);
const refused: ReadonlySet<number> = new Set([GrpcStatus.PERMISSION_DENIED, GrpcStatus.UNIMPLEMENTED]);

/**
 * A visibility query that names the attribute and matches no order: the frontend accepts it only
 * once the attribute is registered and in its cache — the same check a workflow start passes.
 */
export function searchAttributeProbeQuery(name: string, type: SearchAttributeTypeName): string {
  return `${name} = ${probeValues[type]}`;
}

/** The frontend's answer to a probe query when the attribute is not (yet) known to it. */
export function isUnknownSearchAttribute(err: unknown, name: string): boolean {
  return grpcCode(err) === GrpcStatus.INVALID_ARGUMENT && message(err).includes(name);
}

/** The frontend's namespace cache has not seen a namespace registered a moment ago. */
function namespaceNotFoundYet(err: unknown): boolean {
  return grpcCode(err) === GrpcStatus.NOT_FOUND && /namespace/i.test(message(err));
}

function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what}: no answer within ${CALL_TIMEOUT_MS} ms`)),
      CALL_TIMEOUT_MS,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export async function ensureTemporalSetup(
  services: TemporalServices,
  options: TemporalSetupOptions,
): Promise<TemporalSetupResult> {
  const { namespace, retentionMs } = options;
  const wanted: Readonly<Record<string, SearchAttributeTypeName>> =
    options.searchAttributes ?? searchAttributeDefinitions;
  const log = options.log ?? (() => {});
  const timeoutMs = options.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  const { workflowService, operatorService } = services;

  /** Calls `fn` until it succeeds, retrying transient failures (and `alsoRetry`) until the deadline. */
  async function retrying<T>(
    what: string,
    fn: () => Promise<T>,
    alsoRetry = namespaceNotFoundYet,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await withTimeout(fn(), what);
      } catch (err) {
        const code = grpcCode(err);
        const retryable = code === undefined || transient.has(code) || alsoRetry(err);
        if (!retryable) throw err;
        if (Date.now() >= deadline) {
          throw new TemporalSetupError(
            `Temporal setup: ${what} did not succeed within ${timeoutMs / 1000} s; last error: ${message(err)}`,
          );
        }
        await sleep(Math.min(2_000, 100 * 2 ** attempt));
      }
    }
  }

  // ---- the namespace and its retention ----
  const result: TemporalSetupResult = {
    namespaceCreated: false,
    retentionChanged: false,
    searchAttributesAdded: [],
  };
  const retention = msToTs(retentionMs);
  const description = await retrying(
    `describing namespace ${namespace}`,
    () =>
      workflowService.describeNamespace({ namespace }).catch((err: unknown) => {
        if (grpcCode(err) === GrpcStatus.NOT_FOUND) return undefined;
        throw err;
      }),
    () => false,
  );
  if (!description) {
    try {
      await retrying(`registering namespace ${namespace}`, () =>
        workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: retention }),
      );
      result.namespaceCreated = true;
      log(`created namespace ${namespace} (retention ${formatRetention(retentionMs)})`);
    } catch (err) {
      if (grpcCode(err) === GrpcStatus.ALREADY_EXISTS) {
        // Another worker created it a moment ago: fine.
      } else if (refused.has(grpcCode(err) ?? -1)) {
        throw new TemporalSetupError(
          `Temporal setup: namespace ${namespace} does not exist and this connection may not create it ` +
            `(${message(err)}). Create it with retention ${formatRetention(retentionMs)} using your Temporal ` +
            `provider's tooling, or set TEMPORAL_NAMESPACE to an existing one.`,
        );
      } else throw err;
    }
  } else {
    const ttl = description.config?.workflowExecutionRetentionTtl;
    const currentMs = Number(ttl?.seconds ?? 0) * 1000;
    if (currentMs !== retentionMs) {
      try {
        await retrying(`setting the retention of namespace ${namespace}`, () =>
          workflowService.updateNamespace({
            namespace,
            config: { workflowExecutionRetentionTtl: retention },
          }),
        );
        result.retentionChanged = true;
        log(
          `namespace ${namespace}: retention ${formatRetention(currentMs)} → ${formatRetention(retentionMs)}`,
        );
      } catch (err) {
        if (!refused.has(grpcCode(err) ?? -1)) throw err;
        // A hosted namespace's retention is set with the provider's tooling: say so, but run.
        log(
          `namespace ${namespace} keeps retention ${formatRetention(currentMs)}: this connection may not ` +
            `change it to TEMPORAL_NAMESPACE_RETENTION=${formatRetention(retentionMs)} (${message(err)})`,
        );
      }
    }
  }

  if (result.namespaceCreated) {
    // Until the frontend's namespace cache has it, every call naming it answers "not found".
    await retrying(`waiting for the frontend to serve namespace ${namespace}`, () =>
      workflowService.countWorkflowExecutions({ namespace, query: '' }),
    );
  }

  // ---- search attributes ----
  /** Does the frontend accept a visibility query on this attribute (as it must accept a start)? */
  const known = (name: string, type: SearchAttributeTypeName) =>
    retrying(`checking search attribute ${name} in namespace ${namespace}`, () =>
      workflowService.countWorkflowExecutions({ namespace, query: `${name} = ${probeValues[type]}` }).then(
        () => true,
        (err: unknown) => {
          if (grpcCode(err) === GrpcStatus.INVALID_ARGUMENT && message(err).includes(name)) return false;
          throw err;
        },
      ),
    );

  const missing: Record<string, temporal.api.enums.v1.IndexedValueType> = {};
  for (const [name, type] of Object.entries(wanted)) {
    if (!(await known(name, type))) missing[name] = indexedValueTypes[type];
  }
  const missingNames = Object.keys(missing);
  if (missingNames.length > 0) {
    try {
      await retrying(
        `registering search attributes ${missingNames.join(', ')} in namespace ${namespace}`,
        () => operatorService.addSearchAttributes({ namespace, searchAttributes: missing }),
      );
    } catch (err) {
      if (!refused.has(grpcCode(err) ?? -1)) throw err;
      const commands = missingNames
        .map(
          (n) =>
            `temporal operator search-attribute create --namespace ${namespace} --name ${n} --type ${wanted[n]}`,
        )
        .join('; ');
      throw new TemporalSetupError(
        `Temporal setup: search attributes ${missingNames.join(', ')} are not registered in namespace ` +
          `${namespace} and this connection may not register them (${message(err)}). Register them with ` +
          `your provider's tooling, or: ${commands}`,
      );
    }
    result.searchAttributesAdded = missingNames;
    log(
      `registered search attributes ${missingNames.map((n) => `${n} (${wanted[n]})`).join(', ')} in namespace ${namespace}`,
    );
  }
  await checkTypes(services, namespace, wanted);
  for (const [name, type] of Object.entries(wanted)) {
    while (!(await known(name, type))) {
      if (Date.now() >= deadline) {
        throw new TemporalSetupError(
          `Temporal setup: search attribute ${name} is registered in namespace ${namespace}, but the ` +
            `frontend still refuses queries on it after ${timeoutMs / 1000} s`,
        );
      }
      await sleep(250);
    }
  }

  // (A changed retention needs no wait: it only matters when a workflow closes.)
  if (result.namespaceCreated || missingNames.length > 0) await sleep(NAMESPACE_CACHE_SETTLE_MS);
  return result;
}

/** A name registered with another type would silently break filters and ordering: refuse it. */
async function checkTypes(
  { operatorService }: TemporalServices,
  namespace: string,
  wanted: Readonly<Record<string, SearchAttributeTypeName>>,
): Promise<void> {
  let registered: Record<string, temporal.api.enums.v1.IndexedValueType>;
  try {
    const answer = await withTimeout(
      operatorService.listSearchAttributes({ namespace }),
      'listing search attributes',
    );
    registered = (answer.customAttributes ?? {}) as Record<string, temporal.api.enums.v1.IndexedValueType>;
  } catch (err) {
    // Hosted Temporal may not offer the operator service; the probes above still checked presence.
    if (refused.has(grpcCode(err) ?? -1)) return;
    throw err;
  }
  const wrong = Object.entries(wanted)
    .filter(([name, type]) => name in registered && registered[name] !== indexedValueTypes[type])
    .map(([name, type]) => `${name} is ${IndexedValueType[registered[name]!]}, the service needs ${type}`);
  if (wrong.length > 0) {
    throw new TemporalSetupError(
      `Temporal setup: search attributes of namespace ${namespace} have the wrong type: ${wrong.join('; ')}. ` +
        'A search attribute cannot change type: remove it or use another namespace.',
    );
  }
}
