/**
 * Personal data and secrets in an audit story, masked unless the reader asked to see them (and
 * may): phone and line numbers, card codes. By field name, wherever the value sits — a workflow
 * input, an activity's arguments or result, a final view — so it holds for payloads the story
 * builder does not know in detail; and in the free text operators type (a decision's note), by
 * shape: a run of six or more digits.
 */
import { MASKED } from '../api/access';

/** Fields whose value is a phone number, a line number or a card code, in our payloads and the provider's. */
const SECRET_FIELDS = new Set(['msisdn', 'MSSIDN', 'number', 'cardCode', 'card_code']);
/** Inside a `cards` list, the card code (ours: `code`, the provider's: `value`); serials stay. */
const CARD_CODE_FIELDS = new Set(['code', 'value']);
/** Fields people type by hand. */
const FREE_TEXT_FIELDS = new Set(['note']);
const DIGIT_RUN = /\d{6,}/g;

export function maskSecrets<T>(value: T): T {
  return mask(value, undefined) as T;
}

function mask(value: unknown, parentKey: string | undefined): unknown {
  if (Array.isArray(value)) return value.map((item) => mask(item, parentKey));
  if (value === null || typeof value !== 'object') return value;
  const inCards = parentKey === 'cards';
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, field]) => {
      if (field !== undefined && field !== null && typeof field !== 'object') {
        if (SECRET_FIELDS.has(key) || (inCards && CARD_CODE_FIELDS.has(key))) return [key, MASKED];
        if (FREE_TEXT_FIELDS.has(key) && typeof field === 'string')
          return [key, field.replace(DIGIT_RUN, MASKED)];
      }
      return [key, mask(field, key)];
    }),
  );
}
