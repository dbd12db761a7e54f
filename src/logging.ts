/**
 * The service's one logger factory: JSON lines on stdout (pino), with the secrets and personal data
 * a hand-written log call might carry censored in every part (API, worker, sandbox, codec).
 */
import pino, { type Logger } from 'pino';

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

/** The process's root logger (JSON to stdout). */
export function createLogger(level: string): Logger {
  return pino({ level, redact: { paths: redactPaths, censor: '[redacted]' } });
}
