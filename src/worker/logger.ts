/**
 * The Temporal SDK's Logger on top of pino, so the worker writes the same JSON lines as the rest
 * of the service. Workflow code logs through `workflow.log`, which ends up here (replay-safe: the
 * SDK drops log calls made while replaying).
 */
import type { LogLevel, LogMetadata, Logger } from '@temporalio/common';
import { createLogger } from '../logging';

export function createWorkerLogger(level: string): Logger {
  const root = createLogger(level).child({ name: 'worker' });
  const log = (sdkLevel: LogLevel, message: string, meta: LogMetadata = {}) => {
    // pino serializes an Error only under `err`; the SDK passes failures as `error`.
    const { error, ...rest } = meta as { error?: unknown };
    const fields = error === undefined ? rest : { ...rest, err: error };
    root[sdkLevel.toLowerCase() as Lowercase<LogLevel>](fields, message);
  };
  return {
    log,
    trace: (message, meta) => log('TRACE', message, meta),
    debug: (message, meta) => log('DEBUG', message, meta),
    info: (message, meta) => log('INFO', message, meta),
    warn: (message, meta) => log('WARN', message, meta),
    error: (message, meta) => log('ERROR', message, meta),
  };
}
