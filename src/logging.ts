/**
 * The service's one logger factory: JSON lines on stdout (pino), with the secrets and personal data
 * a hand-written log call might carry censored in every part (API, worker, sandbox, codec).
 */
import pino, { type Logger, type LoggerOptions } from 'pino';

/** Paths censored in every log line, should a secret or personal datum ever be logged by hand. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'apiKey',
  '*.apiKey',
  'msisdn',
  'number',
  'cardCode',
  'cards',
  '*.msisdn',
  '*.number',
  '*.cardCode',
  '*.cards',
  '*.*.msisdn',
  '*.*.number',
  '*.*.cardCode',
  '*.*.cards',
];

/** A serialized error, or whatever was logged as `err` when it was not one. */
type Serialized = Record<string, unknown>;

/** Drops what a library attached of the request: the `body` member and any binary value, nested errors included. */
function scrub(serialized: Serialized, proto: unknown): void {
  for (const key of Object.keys(serialized)) {
    const value = serialized[key];
    if (key === 'body' || ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
      delete serialized[key];
    } else if (Array.isArray(value) && key === 'aggregateErrors') {
      for (const inner of value) if (inner && typeof inner === 'object') scrub(inner as Serialized, proto);
    } else if (value && typeof value === 'object' && Object.getPrototypeOf(value) === proto) {
      scrub(value as Serialized, proto);
    }
  }
}

/**
 * The `err` serializer of every logger: pino's own (type, message and stack with their causes,
 * the error's own members) without what a library attached of the request. body-parser attaches
 * the raw body to the errors it passes on (`body`, a Buffer): personal data the redaction cannot
 * see into, and on a 40 kB body the redaction's wildcards threw on it, so the whole error was
 * logged as "[unable to serialize, circular reference is too complex to analyze]".
 */
export function errorSerializer(err: unknown): unknown {
  const serialized: unknown = pino.stdSerializers.err(err as Error);
  // pino's serializer hands back anything that is not an error as it came.
  if (serialized !== err && serialized && typeof serialized === 'object') {
    scrub(serialized as Serialized, Object.getPrototypeOf(serialized));
  }
  return serialized;
}

/** What every logger of the service is made with, whatever its level and destination. */
export const loggerOptions: Pick<LoggerOptions, 'redact' | 'serializers'> = {
  redact: { paths: redactPaths, censor: '[redacted]' },
  serializers: { err: errorSerializer },
};

/** The process's root logger (JSON to stdout). */
export function createLogger(level: string): Logger {
  return pino({ level, ...loggerOptions });
}
