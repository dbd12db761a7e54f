/**
 * Which orders a caller reaches, and how much of each it sees. Scopes say what a caller may do
 * (auth.ts, per route); this says on whose orders:
 *
 * - its own orders: everything, in clear, on every route its scopes allow;
 * - audit:read: every client's orders on the reading routes (view, list);
 * - the operator role: every client's orders that are or were in review — list, view and, with
 *   reviews:write, decide.
 *
 * Whoever reaches another client's order reads it masked (src/audit/mask.ts: phone and line
 * numbers, card codes, digit runs in notes and the provider's text) unless it holds audit:reveal
 * and asks for `reveal=true`, which is recorded (src/audit/reveal.ts).
 *
 * Anything else answers 404, exactly as an order that does not exist: never 403, which would tell
 * another client's order apart from no order at all.
 *
 * One right is the caller's, not the order's: `force: true` on a decision (assertMayForce).
 */
import type { Caller } from '../clients';
import type { OrderView } from '../../contract/order';
import { ApiError } from '../http';

export type Purpose = 'read' | 'decide';
/** How the caller reaches an order of `owner`: as its owner, as an auditor, or as an operator. */
export type Access = 'owner' | 'audit' | 'operator';

export function accessTo(caller: Caller, owner: string, purpose: Purpose): Access | undefined {
  if (owner === caller.id) return 'owner';
  if (purpose === 'read' && caller.scopes.has('audit:read')) return 'audit';
  if (caller.operator) return 'operator';
  return undefined;
}

/**
 * `force: true` applies a decision the provider contradicts or cannot confirm, so it is an
 * operator's (the operator role), never a back office's own: the party a refund pays decides
 * nothing against the provider's word. A back office that forces REFUNDED on its own UNKNOWN_ERROR
 * order, which the provider may still fulfil, is paid the refund and the credit (the
 * reconciliation then finds a debit without a refund). In the legacy single-client mode (API_KEYS)
 * the one client is the whole deployment, operators included, and keeps the right.
 *
 * Checked on the caller alone, before any order is looked up: the 403 says nothing about orders.
 */
export function assertMayForce(caller: Caller, legacy: boolean): void {
  if (caller.operator || legacy) return;
  throw new ApiError(
    'forbidden',
    'Only an operator may force a decision (force: true): it applies what the provider contradicts or ' +
      'cannot confirm, and a refund forced on an order the provider may still fulfil is paid twice. ' +
      'Send the decision without force, or ask an operator.',
    {
      errors: [{ field: 'force', message: 'needs the operator role, which your client does not have' }],
    },
  );
}

/** An operator reaches another client's order only while it is, or after it was, in review. */
export function inOperatorReach(view: Pick<OrderView, 'status' | 'review'>): boolean {
  return view.status === 'NEEDS_REVIEW' || view.status === 'DISPUTED' || view.review !== undefined;
}
