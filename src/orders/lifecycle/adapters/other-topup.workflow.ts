/** A check shows the top-up's `_id` (documented): it must be the topupId our send got back. */
export function otherTopup(check: { _id?: string }, topupId: string | undefined): string | undefined {
  return topupId !== undefined && check._id !== undefined && check._id !== topupId
    ? 'check-ref shows another _id than the topupId the send returned'
    : undefined;
}

/**
 * How much earlier than the order's acceptance the provider's `created_at` may read and still be
 * this order's: the two clocks (our API host's, the provider's) are not one, and the provider
 * documents neither the format nor the zone of its times. Every send of ours follows the
 * acceptance, so only a drifting clock or a mislabelled zone dates ours before it; a reused ref's
 * top-up is older than our retention, which Temporal never lets be shorter than a day. Twelve
 * hours is far beyond any drift and any zone mix-up of a provider at UTC+1, and below that day.
 * Changing it, or what providerTime reads, changes what an order decides on replay: a workflow change.
 */
export const CREATED_AT_SKEW_ALLOWANCE_MS = 12 * 3_600_000;

const DAY_MS = 24 * 3_600_000;

/**
 * A check's `created_at` earlier than the order's acceptance by more than the allowance: the
 * top-up is an older order's under a reused ref (the back office's retention expired), not this
 * order's, never adopted. Not judged: an answer without a readable `created_at`, and one
 * whose `_id` is the topupId our own send got back (that top-up is ours, whatever the clocks say).
 */
export function madeBeforeTheOrder(
  check: { created_at?: string; _id?: string },
  acceptedAt: string,
  topupId: string | undefined,
): string | undefined {
  if (topupId !== undefined && check._id === topupId) return undefined;
  const createdAt = providerTime(check.created_at);
  const accepted = Date.parse(acceptedAt);
  if (createdAt === undefined || !Number.isFinite(accepted)) return undefined;
  const earlierMs = accepted - createdAt;
  if (earlierMs <= CREATED_AT_SKEW_ALLOWANCE_MS) return undefined;
  const ago =
    earlierMs >= DAY_MS ? `${Math.floor(earlierMs / DAY_MS)} days` : `${Math.round(earlierMs / 3_600_000)} h`;
  return (
    `the top-up under this ref was made ${ago} before the order was accepted ` +
    `(created_at ${check.created_at}, accepted ${acceptedAt}): an older order's under a reused ref`
  );
}

/**
 * The provider's `created_at` in epoch ms, read the same on every worker: an ISO 8601 date and
 * time, with its offset or without (then read as UTC: the provider works in Algeria, UTC+1 all
 * year, so its local time read as UTC is dated later, never earlier). Anything else is
 * unreadable (undefined).
 */
export function providerTime(value: string | undefined): number | undefined {
  const parts = value?.match(
    /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+-]\d{2}:?\d{2})?$/i,
  );
  if (!parts) return undefined;
  const [, date, time, zone] = parts;
  const offset = !zone || zone.toUpperCase() === 'Z' ? 'Z' : `${zone.slice(0, 3)}:${zone.slice(-2)}`;
  const ms = Date.parse(`${date}T${time}${offset}`);
  return Number.isFinite(ms) ? ms : undefined;
}

/** A fixed plan's order names no amount (the plan has its own): any amount the provider shows is its. */
export function sameAmount(shown: number | undefined, ordered: number | undefined): boolean {
  return ordered === undefined || shown === ordered;
}
