/**
 * The one masking rule for personal data and secrets, for every reader of an order that is not
 * its owner — an auditor, an operator, the audit export — unless they revealed it (./reveal.ts):
 *
 * - by field name, wherever the value sits (a view, a workflow input, an activity's arguments or
 *   result), so it holds for payloads this module does not know in detail: phone and line numbers
 *   and card codes read "[masked]" (transaction numbers and card serials stay: they identify, they
 *   pay nothing);
 * - in free text, by shape: what operators type (a decision's note) and what the provider writes
 *   (its refund message, its offers' names, its error messages and the answers and evidence quoting
 *   them) may name a customer's number or a voucher, so every run of six or more digits in them
 *   reads "[masked]".
 *
 * The owner's own view is never masked here: it sent that data. Card codes alone are masked on the
 * way to an owner's webhook endpoint that did not opt in (maskCardCodes).
 */
import type { OrderResult } from '../../contract/order';

/** What a masked value reads as. */
export const MASKED = '[masked]';

/** Fields whose value is a phone number, a line number or a card code, in our payloads and the provider's. */
const SECRET_FIELDS = new Set(['msisdn', 'MSSIDN', 'number', 'cardCode', 'card_code']);
/** Inside a `cards` list, the card code (ours: `code`, the provider's: `value`); serials stay. */
const CARD_CODE_FIELDS = new Set(['code', 'value']);
/**
 * Free text: an operator's `note`; the provider's `refund_message` (ours: `refundMessage`), its
 * offers' `typename`, its error `message`s; the `evidence`, `answer` and `forcedPast` the workflow
 * writes from the provider's answers (it masks the refund message it quotes, not its errors).
 */
const FREE_TEXT_FIELDS = new Set([
  'note',
  'refundMessage',
  'refund_message',
  'typename',
  'message',
  'evidence',
  'answer',
  'forcedPast',
]);
/**
 * Six or more digits of any script (the provider writes Arabic, and may write Arabic-Indic digits),
 * with at most one other character between two of them, so a number written `0555 12 34 56`,
 * `0555-123-456` or `06.61.23.45.67` is one run. The price: a date or a grouped amount in free
 * text is masked too, for a reader who is not the owner.
 */
const DIGIT_RUN = /\p{Nd}(?:[^\p{L}\p{Nd}]?\p{Nd}){5,}/gu;

/** `text` with every digit run that could be a number or a code masked. */
export function maskDigitRuns(text: string): string {
  return text.replace(DIGIT_RUN, MASKED);
}

/** `value` (a view, an audit story, any payload) as a reader who is not the owner sees it. */
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
        if (FREE_TEXT_FIELDS.has(key) && typeof field === 'string') return [key, maskDigitRuns(field)];
      }
      return [key, mask(field, key)];
    }),
  );
}

/**
 * Card codes only, for the owner's own webhook endpoint without `cardCodes: true`: the owner's
 * data otherwise, but a code is money, and an endpoint opts in to carry it.
 */
export function maskCardCodes<V extends { result?: OrderResult }>(view: V): V {
  const result = view.result;
  if (!result || (result.cardCode === undefined && result.cards === undefined)) return view;
  return {
    ...view,
    result: {
      ...result,
      ...(result.cardCode !== undefined ? { cardCode: MASKED } : {}),
      ...(result.cards ? { cards: result.cards.map((card) => ({ ...card, code: MASKED })) } : {}),
    },
  };
}
