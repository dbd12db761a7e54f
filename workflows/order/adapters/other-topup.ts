/** A check shows the top-up's `_id` (documented): it must be the topupId our send got back. */
export function otherTopup(check: { _id?: string }, topupId: string | undefined): string | undefined {
  return topupId !== undefined && check._id !== undefined && check._id !== topupId
    ? 'check-ref shows another _id than the topupId the send returned'
    : undefined;
}

/** A fixed plan's order names no amount (the plan has its own): any amount the provider shows is its. */
export function sameAmount(shown: number | undefined, ordered: number | undefined): boolean {
  return ordered === undefined || shown === ordered;
}
