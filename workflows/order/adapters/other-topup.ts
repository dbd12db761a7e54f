/** A check that shows a topupId (the spec does not promise one) must show the one our send got back. */
export function otherTopup(check: object, topupId: string | undefined): string | undefined {
  const shown = (check as { topupId?: unknown }).topupId;
  return topupId !== undefined && typeof shown === 'string' && shown !== topupId
    ? 'check-ref shows another topupId than the send returned'
    : undefined;
}
