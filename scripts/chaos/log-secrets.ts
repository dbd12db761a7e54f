/**
 * No secret in any log line: after a chaos run, every part's log is searched for the keys the
 * stack was given and for the personal data of every order (phone and line numbers, card codes
 * and serials from the final views). Any hit is a problem of the run.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { OrderRecord } from './submit';

export interface Secret {
  kind: string;
  value: string;
}

/** Phone and line numbers the orders carried, and the cards their final views delivered. */
export function orderSecrets(records: OrderRecord[]): Secret[] {
  return records.flatMap((record) => {
    const request = record.planned.request as { msisdn?: string; number?: string };
    const result = record.view?.result;
    return [
      ...(request.msisdn ? [{ kind: 'phone number', value: request.msisdn }] : []),
      ...(request.number ? [{ kind: 'line number', value: request.number }] : []),
      ...(result?.cardCode ? [{ kind: 'internet card code', value: result.cardCode }] : []),
      ...(result?.cards ?? []).flatMap((card) => [
        { kind: 'gift card code', value: card.code },
        { kind: 'gift card serial', value: card.serial },
      ]),
    ];
  });
}

/** One problem line per (log file, kind of secret) found; never the secret itself. */
export function secretsInLogs(logDir: string, secrets: Secret[]): string[] {
  const problems = new Set<string>();
  for (const file of readdirSync(logDir)) {
    const text = readFileSync(join(logDir, file), 'utf8');
    for (const secret of secrets) {
      if (secret.value && text.includes(secret.value)) problems.add(`${file} contains a ${secret.kind}`);
    }
  }
  return [...problems];
}
