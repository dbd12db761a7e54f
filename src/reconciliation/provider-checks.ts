/**
 * The reconciliation's questions to the provider, one call each: an order's own check (check-ref
 * for a top-up, the orderId for a gift card) and a ledger row's own id (check-id). A refusal or an
 * unknown order is an answer (`unreachable`); anything else throws, for the activity's retries.
 */
import type { ProviderClient } from '../provider';
import { isProviderError } from '../provider';
import type { OrderInput, OrderType, OrderView, ProviderStatus } from '../../contract/order';

export type ReconciliationProvider = Pick<
  ProviderClient,
  | 'listTransactions'
  | 'checkMobileTopup'
  | 'checkInternetTopup'
  | 'checkGiftCardOrder'
  | 'checkMobileTopupById'
  | 'checkInternetTopupById'
>;

export type ProviderAnswer =
  { kind: 'status'; status: ProviderStatus } | { kind: 'unreachable'; detail: string };

/** The order's own check (check-ref for a top-up, the orderId for a gift card), one call. */
export async function askProvider(
  provider: ReconciliationProvider,
  input: OrderInput,
  view: OrderView,
): Promise<ProviderAnswer> {
  const ref = input.providerRef ?? input.request.ref;
  try {
    switch (input.request.type) {
      case 'mobile_topup':
        return { kind: 'status', status: (await provider.checkMobileTopup(ref)).status };
      case 'internet_topup':
        return { kind: 'status', status: (await provider.checkInternetTopup(ref)).status };
      case 'gift_card':
        if (view.providerReference === undefined)
          return {
            kind: 'unreachable',
            detail: 'a gift card without the provider’s orderId cannot be checked',
          };
        return { kind: 'status', status: (await provider.checkGiftCardOrder(view.providerReference)).status };
    }
  } catch (err) {
    if (isProviderError(err, 'not_found'))
      return { kind: 'unreachable', detail: 'the provider does not know the order' };
    if (isProviderError(err, 'refused'))
      return { kind: 'unreachable', detail: 'the provider refused the check' };
    // Not reached, rate-limited, unclear: the activity's retries ask again (the workflow counts the last failure).
    throw err;
  }
}

export type IdAnswer =
  | { kind: 'status'; status: ProviderStatus; ref?: string; createdAt?: string; amount?: number }
  | { kind: 'unreachable'; detail: string };

/** A ledger row's own id asked at the provider (check-id; a gift card's checkOrder), one call. */
export async function askById(
  provider: ReconciliationProvider,
  type: OrderType,
  id: string,
): Promise<IdAnswer> {
  try {
    switch (type) {
      case 'mobile_topup':
      case 'internet_topup': {
        const check =
          type === 'mobile_topup'
            ? await provider.checkMobileTopupById(id)
            : await provider.checkInternetTopupById(id);
        return {
          kind: 'status',
          status: check.status,
          ref: check.ref,
          createdAt: check.created_at,
          ...(check.topup_amount !== undefined && { amount: check.topup_amount }),
        };
      }
      case 'gift_card': {
        // Gift-card orders carry no ref of ours: such a row cannot lead back to an order.
        const check = await provider.checkGiftCardOrder(id);
        return { kind: 'status', status: check.status, createdAt: check.time };
      }
    }
  } catch (err) {
    if (isProviderError(err, 'not_found'))
      return { kind: 'unreachable', detail: `the provider does not know ${id}` };
    if (isProviderError(err, 'refused'))
      return { kind: 'unreachable', detail: 'the provider refused the check' };
    throw err;
  }
}
